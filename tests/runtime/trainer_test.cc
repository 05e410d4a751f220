// Trainer tests on real data (../shared/data/cora, its README's reference setup) and on the
// built-in SBM dataset: accuracy, determinism, checkpoint/resume exactness, config validation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/trainer.h"

namespace fg::runtime {
namespace {

const std::string kCora = std::string(FG_SHARED_DATA_DIR) + "/cora";

TrainOptions CoraOptions(const std::string& model) {
  flexgraph::RunConfig config;
  config.mutable_model()->set_name(model);
  auto o = ResolveOptions(config);
  EXPECT_TRUE(o.ok()) << o.status();
  o->dataset = kCora;
  o->quiet = true;
  return *o;
}

TrainResult TrainOrDie(const TrainOptions& o) {
  auto trainer = Trainer::Create(o);
  EXPECT_TRUE(trainer.ok()) << trainer.status();
  auto r = (*trainer)->Run();
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

TEST(Trainer, GcnOnCoraReachesPaperAccuracy) {
  // Kipf & Welling report 81.5%; the reference setup is the GCN default.
  TrainResult r = TrainOrDie(CoraOptions("gcn"));
  EXPECT_EQ(r.epochs, 200);
  EXPECT_GE(r.test_accuracy, 0.79) << "GCN on Cora";
  EXPECT_LT(r.final_loss, r.losses.front());
  EXPECT_GT(r.hdg_bytes, 0);
}

TEST(Trainer, SageOnCora) {
  TrainResult r = TrainOrDie(CoraOptions("sage"));
  EXPECT_GE(r.test_accuracy, 0.78) << "GraphSAGE-mean on Cora";
}

TEST(Trainer, GinOnCora) {
  TrainResult r = TrainOrDie(CoraOptions("gin"));
  EXPECT_GE(r.test_accuracy, 0.75) << "GIN on Cora";
}

TEST(Trainer, DeterministicAndResumesBitExactly) {
  TrainOptions o = CoraOptions("gcn");
  o.epochs = 12;
  TrainResult full = TrainOrDie(o);
  TrainResult again = TrainOrDie(o);
  EXPECT_EQ(full.losses, again.losses);

  const std::string dir = ::testing::TempDir() + "/fg_resume_ckpt_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  TrainOptions first = o;
  first.checkpoint_every = 5;
  first.checkpoint_dir = dir;
  first.stop_after = 7;  // checkpoint at 5, stop at 7: resume redoes 6 and 7
  TrainResult partial = TrainOrDie(first);
  EXPECT_EQ(partial.epochs, 7);
  TrainOptions second = first;
  second.stop_after = 0;
  second.resume = true;
  TrainResult resumed = TrainOrDie(second);
  EXPECT_EQ(resumed.epochs, 12);
  EXPECT_EQ(resumed.losses, full.losses);
  EXPECT_EQ(resumed.test_accuracy, full.test_accuracy);
  std::filesystem::remove_all(dir);
}

TEST(Trainer, InvalidOptionsNameTheField) {
  flexgraph::RunConfig config;
  config.mutable_model()->set_name("nosuchmodel");
  auto unknown = ResolveOptions(config);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("model: unknown model 'nosuchmodel'"), std::string::npos);
  TrainOptions o = CoraOptions("gcn");
  o.hidden = 0;
  EXPECT_NE(ValidateOptions(o).message().find("hidden"), std::string::npos);
  o = CoraOptions("gcn");
  o.dropout = 1.5f;
  EXPECT_NE(ValidateOptions(o).message().find("dropout"), std::string::npos);
  o = CoraOptions("gcn");
  o.dataset = "/nonexistent/dataset";
  EXPECT_FALSE(Trainer::Create(o).ok());
  o = CoraOptions("gcn");
  o.split = "nosuchsplit";
  EXPECT_FALSE(Trainer::Create(o).ok());
}

TEST(Trainer, SummaryJsonHasTheDocumentedKeys) {
  TrainOptions o = CoraOptions("gcn");
  o.epochs = 3;
  std::string json = SummaryJson(TrainOrDie(o));
  for (const char* key : {"model", "dataset", "epochs", "seed", "final_loss", "test_accuracy",
                          "test_macro_f1", "valid_accuracy", "epoch_seconds_median", "hdg_bytes",
                          "peak_rss_bytes"}) {
    EXPECT_NE(json.find(std::string("\"") + key + "\":"), std::string::npos) << key;
  }
}

}  // namespace
}  // namespace fg::runtime
