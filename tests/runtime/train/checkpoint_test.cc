// Checkpoints, initial parameter files and the summary JSON.
#include "runtime/train/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/npy.h"
#include "runtime/train/summary.h"
#include "tests/runtime/scratch_dir.h"

namespace fg::runtime {
namespace {

std::string Dir(const std::string& name) { return fg::testing::ScratchDir(name); }

// Two parameters and an Adam optimizer that has taken one step.
struct Params {
  ag::Var w = ag::Var(Tensor::FromVector(std::vector<float>{1, 2, 3, 4}).Reshape({2, 2}), true);
  ag::Var b = ag::Var(Tensor::FromVector(std::vector<float>{0.5f, -0.5f}), true);
  std::vector<nn::NamedParameter> named() { return {{"layer0.w", w}, {"layer0.b", b}}; }
};

TEST(Checkpoint, RestoresParametersMomentsAndProgress) {
  const std::string d = Dir("fg_ckpt");
  Params p;
  nn::Optimizer opt(nn::OptimizerKind::kAdam, p.named(), {.lr = 0.1f, .weight_decay = 0});
  p.w.OwnedGrad() = Tensor::FromVector(std::vector<float>{1, -1, 2, -2}).Reshape({2, 2});
  p.b.OwnedGrad() = Tensor::FromVector(std::vector<float>{3, -3});
  opt.Step();
  TrainResult progress;
  progress.losses = {1.5, 1.25};
  progress.epoch_seconds = {0.1, 0.2};
  progress.best_epoch = 2;
  progress.valid_accuracy = 0.75;
  progress.test_accuracy = 0.5;
  flexgraph::RunConfig config;
  config.mutable_model()->set_name("gcn");
  config.mutable_train()->set_lr(0.1f);
  config.mutable_train()->set_epochs(10);
  const RunIdentity run = IdentityOf(config, 1);
  ASSERT_TRUE(SaveCheckpoint(d, run, 2, opt, progress).ok());
  EXPECT_TRUE(HasCheckpoint(d));
  // Written through a temporary file that does not remain.
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(d)) files.push_back(e.path().filename());
  EXPECT_EQ(files, std::vector<std::string>{"checkpoint.pb"});

  Params q;
  nn::Optimizer fresh(nn::OptimizerKind::kAdam, q.named(), {.lr = 0.1f, .weight_decay = 0});
  TrainResult restored;
  // More epochs, other threads: the same run, continued.
  flexgraph::RunConfig longer = config;
  longer.mutable_train()->set_epochs(20);
  longer.mutable_train()->set_threads(1);
  auto epochs = LoadCheckpoint(d, IdentityOf(longer, 1), fresh, &restored);
  ASSERT_TRUE(epochs.ok()) << epochs.status();
  EXPECT_EQ(*epochs, 2);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(q.w.value().f32()[i], p.w.value().f32()[i]);
  for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(q.b.value().f32()[i], p.b.value().f32()[i]);
  EXPECT_EQ(fresh.step_count(), opt.step_count());
  for (size_t k = 0; k < 2; ++k) {
    for (int64_t i = 0; i < opt.first_moments()[k].numel(); ++i) {
      EXPECT_EQ(fresh.first_moments()[k].f32()[i], opt.first_moments()[k].f32()[i]);
      EXPECT_EQ(fresh.second_moments()[k].f32()[i], opt.second_moments()[k].f32()[i]);
    }
  }
  EXPECT_EQ(restored.losses, progress.losses);
  EXPECT_EQ(restored.epoch_seconds, progress.epoch_seconds);
  EXPECT_EQ(restored.best_epoch, 2);
  EXPECT_EQ(restored.valid_accuracy, 0.75);
  EXPECT_EQ(restored.test_accuracy, 0.5);

  // Another run's checkpoint is refused, naming the path and what differs.
  flexgraph::RunConfig other = config;
  other.mutable_train()->set_lr(0.2f);
  auto refused = LoadCheckpoint(d, IdentityOf(other, 1), fresh, &restored);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("checkpoint.pb"), std::string::npos);
  EXPECT_NE(refused.status().message().find("lr"), std::string::npos) << refused.status();
  auto workers = LoadCheckpoint(d, IdentityOf(config, 2), fresh, &restored);
  EXPECT_NE(workers.status().message().find("2"), std::string::npos) << workers.status();
  // Other parameter shapes: refused before anything is restored.
  ag::Var wide(Tensor::Zeros({2, 3}), true);
  nn::Optimizer mismatch(nn::OptimizerKind::kAdam, {{"layer0.w", wide}, {"layer0.b", q.b}}, {});
  auto shapes = LoadCheckpoint(d, run, mismatch, &restored);
  ASSERT_FALSE(shapes.ok());
  EXPECT_NE(shapes.status().message().find("[2,2]"), std::string::npos) << shapes.status();
  EXPECT_EQ(wide.value().f32()[0], 0.0f);
}

TEST(Checkpoint, DamagedFilesAreRefusedAndNothingIsRestored) {
  const std::string d = Dir("fg_ckpt_damaged");
  Params p;
  nn::Optimizer opt(nn::OptimizerKind::kAdam, p.named(), {.lr = 0.1f, .weight_decay = 0});
  TrainResult progress;
  progress.losses = {1.0};
  progress.epoch_seconds = {0.1};
  flexgraph::RunConfig config;
  config.mutable_model()->set_name("gcn");
  const RunIdentity run = IdentityOf(config, 1);
  ASSERT_TRUE(SaveCheckpoint(d, run, 1, opt, progress).ok());
  const std::string path = d + "/checkpoint.pb";
  auto contents = graph::io::ReadFileToString(path);
  ASSERT_TRUE(contents.ok());
  const std::string good = *contents;
  auto refused = [&](const std::string& bytes) {
    EXPECT_TRUE(graph::io::WriteFileAtomically(path, bytes).ok());
    Params q;
    nn::Optimizer fresh(nn::OptimizerKind::kAdam, q.named(), {});
    TrainResult r;
    auto s = LoadCheckpoint(d, run, fresh, &r);
    EXPECT_EQ(q.w.value().f32()[0], 1.0f);  // untouched
    return s.ok() ? std::string("ok") : std::string(s.status().message());
  };
  // Every cut is refused.
  for (size_t cut : {size_t{0}, size_t{5}, size_t{20}, good.size() / 2, good.size() - 1}) {
    const std::string why = refused(good.substr(0, cut));
    EXPECT_TRUE(why.find("truncated") != std::string::npos ||
                why.find("not a FlexGraph checkpoint") != std::string::npos)
        << "cut at " << cut << ": " << why;
  }
  // Bytes after the payload: named as such, not as a truncation.
  const std::string trailing = refused(good + "extra");
  EXPECT_NE(trailing.find("5 trailing bytes after the checkpoint"), std::string::npos) << trailing;
  EXPECT_EQ(trailing.find("truncated"), std::string::npos) << trailing;
  // A flipped byte in the payload: the checksum.
  std::string flipped = good;
  flipped[good.size() - 3] ^= 0x40;
  EXPECT_NE(refused(flipped).find("checksum"), std::string::npos);
  // Another format version.
  std::string version = good;
  version[8] = 9;
  EXPECT_NE(refused(version).find("format version 9"), std::string::npos);
  EXPECT_EQ(refused(good), "ok");
}

// The fuzzer's seed (tests/fuzz/corpus/checkpoint) is a checkpoint of the state fuzz_checkpoint
// restores into, so that mutations reach past the framing. FG_WRITE_FUZZ_SEEDS=1 rewrites it.
TEST(Checkpoint, FuzzSeedIsAValidCheckpoint) {
  ag::Var w = ag::Var::Parameter(Tensor::Full({2, 2}, 1.0f));
  ag::Var b = ag::Var::Parameter(Tensor::Full({2}, 1.0f));
  nn::Optimizer opt(nn::OptimizerKind::kAdam, {{"layer0.w", w}, {"layer0.b", b}}, {});
  w.OwnedGrad() = Tensor::Full({2, 2}, 0.5f);
  b.OwnedGrad() = Tensor::Full({2}, -0.5f);
  opt.Step();
  TrainResult progress;
  progress.losses = {0.75};
  progress.epoch_seconds = {0.01};
  flexgraph::RunConfig config;
  config.mutable_model()->set_name("gcn");
  const std::string bytes = EncodeCheckpoint(IdentityOf(config, 1), 1, opt, progress);
  const std::string seed = std::string(FG_SOURCE_DIR) + "/tests/fuzz/corpus/checkpoint/adam_epoch1.ckpt";
  if (const char* write = std::getenv("FG_WRITE_FUZZ_SEEDS"); write && std::string(write) == "1") {
    ASSERT_TRUE(graph::io::WriteFileAtomically(seed, bytes).ok());
  }
  auto committed = graph::io::ReadFileToString(seed);
  ASSERT_TRUE(committed.ok()) << committed.status();
  EXPECT_EQ(*committed, bytes);
  TrainResult restored;
  auto epochs = DecodeCheckpoint(*committed, seed, IdentityOf(config, 1), opt, &restored);
  ASSERT_TRUE(epochs.ok()) << epochs.status();
  EXPECT_EQ(*epochs, 1);
}

TEST(Checkpoint, InitialParametersByNameWithClearErrors) {
  const std::string d = Dir("fg_init_weights");
  Params p;
  ASSERT_TRUE(graph::io::WriteNpy(d + "/layer0.w.npy",
                                  Tensor::FromVector(std::vector<float>{9, 8, 7, 6}).Reshape({2, 2}))
                  .ok());
  // Missing file: names the parameter and the path looked for.
  auto missing = LoadInitialParameters(d, p.named());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("layer0.b"), std::string::npos) << missing;
  EXPECT_NE(missing.message().find(d + "/layer0.b.npy"), std::string::npos) << missing;
  // Wrong shape: names the file and the parameter's shape.
  ASSERT_TRUE(graph::io::WriteNpy(d + "/layer0.b.npy", Tensor::FromVector(std::vector<float>{1, 2, 3})).ok());
  auto shape = LoadInitialParameters(d, p.named());
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.message().find("layer0.b.npy"), std::string::npos) << shape;
  EXPECT_NE(shape.message().find("[2]"), std::string::npos) << shape;
  ASSERT_TRUE(graph::io::WriteNpy(d + "/layer0.b.npy", Tensor::FromVector(std::vector<float>{1, 2})).ok());
  ASSERT_TRUE(LoadInitialParameters(d, p.named()).ok());
  EXPECT_EQ(p.w.value().f32()[0], 9.0f);
  EXPECT_EQ(p.w.value().f32()[3], 6.0f);
  EXPECT_EQ(p.b.value().f32()[1], 2.0f);
}

// A save keeps the checkpoint it replaces as checkpoint.previous.pb; a newest checkpoint that is
// missing, cut short or damaged is passed over for it, saying why; another run's is not.
TEST(Checkpoint, AwaitingTheDirectoryWaitsForItsHolderAndNamesOneThatStays) {
  const std::string d = Dir("fg_ckpt_await");
  auto held = LockCheckpointDirectory(d);
  ASSERT_TRUE(held.ok()) << held.status();
  // A holder that stays: refused after the timeout, naming this process.
  const absl::Status stays = AwaitCheckpointDirectory(d, 0.3);
  EXPECT_EQ(stays.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(stays.message().find("pid " + std::to_string(::getpid())), std::string::npos) << stays;
  // A holder that lets go within the timeout (a worker of a failed attempt exiting).
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    held->reset();
  });
  EXPECT_TRUE(AwaitCheckpointDirectory(d, 30).ok());
  release.join();
  EXPECT_TRUE(LockCheckpointDirectory(d).ok());
}

TEST(Checkpoint, ADamagedNewestCheckpointFallsBackToThePreviousOne) {
  const std::string d = Dir("fg_ckpt_previous");
  Params p;
  nn::Optimizer opt(nn::OptimizerKind::kAdam, p.named(), {.lr = 0.1f, .weight_decay = 0});
  flexgraph::RunConfig config;
  config.mutable_model()->set_name("gcn");
  const RunIdentity run = IdentityOf(config, 1);
  TrainResult progress;
  progress.losses = {1.0};
  progress.epoch_seconds = {0.1};
  ASSERT_TRUE(SaveCheckpoint(d, run, 1, opt, progress).ok());
  p.w.mutable_value().f32()[0] = 7.0f;
  progress.losses = {1.0, 0.5};
  progress.epoch_seconds = {0.1, 0.1};
  ASSERT_TRUE(SaveCheckpoint(d, run, 2, opt, progress).ok());
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(d)) files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"checkpoint.pb", "checkpoint.previous.pb"}));
  // A save cut short after keeping the previous checkpoint leaves both names on one file; the
  // next save leaves no other name behind.
  std::filesystem::remove(d + "/checkpoint.previous.pb");
  std::filesystem::create_hard_link(d + "/checkpoint.pb", d + "/checkpoint.previous.pb");
  ASSERT_TRUE(SaveCheckpoint(d, run, 2, opt, progress).ok());
  files.clear();
  for (const auto& e : std::filesystem::directory_iterator(d)) files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"checkpoint.pb", "checkpoint.previous.pb"}));
  // Back to epochs 1 and 2.
  p.w.mutable_value().f32()[0] = 1.0f;
  progress.losses = {1.0};
  progress.epoch_seconds = {0.1};
  ASSERT_TRUE(SaveCheckpoint(d, run, 1, opt, progress).ok());
  p.w.mutable_value().f32()[0] = 7.0f;
  progress.losses = {1.0, 0.5};
  progress.epoch_seconds = {0.1, 0.1};
  ASSERT_TRUE(SaveCheckpoint(d, run, 2, opt, progress).ok());
  auto load = [&](const RunIdentity& as, std::string* passed_over, float* w0) {
    Params q;
    nn::Optimizer fresh(nn::OptimizerKind::kAdam, q.named(), {});
    TrainResult r;
    auto epoch = LoadCheckpoint(d, as, fresh, &r, passed_over);
    *w0 = q.w.value().f32()[0];
    if (epoch.ok()) EXPECT_EQ(static_cast<int>(r.losses.size()), *epoch);
    return epoch;
  };
  std::string why;
  float w0 = 0;
  auto newest = load(run, &why, &w0);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(*newest, 2);
  EXPECT_EQ(w0, 7.0f);
  EXPECT_EQ(why, "");

  const std::string path = d + "/checkpoint.pb";
  auto good = graph::io::ReadFileToString(path);
  ASSERT_TRUE(good.ok());
  ASSERT_TRUE(graph::io::WriteFileAtomically(path, good->substr(0, good->size() / 2)).ok());
  auto previous = load(run, &why, &w0);
  ASSERT_TRUE(previous.ok()) << previous.status();
  EXPECT_EQ(*previous, 1);
  EXPECT_EQ(w0, 1.0f);  // the parameters of epoch 1
  EXPECT_NE(why.find("checkpoint.pb: truncated checkpoint"), std::string::npos) << why;
  EXPECT_TRUE(HasCheckpoint(d));

  // Another run: the previous checkpoint is refused too, and the error names both files.
  flexgraph::RunConfig other = config;
  other.mutable_train()->set_lr(0.5f);
  auto refused = load(IdentityOf(other, 1), &why, &w0);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("checkpoint.pb: truncated"), std::string::npos) << refused.status();
  EXPECT_NE(refused.status().message().find("checkpoint.previous.pb: checkpoint of another run"), std::string::npos)
      << refused.status();
  EXPECT_EQ(w0, 1.0f);  // untouched

  // An intact newest checkpoint of another run does not fall back.
  ASSERT_TRUE(graph::io::WriteFileAtomically(path, *good).ok());
  auto other_run = load(IdentityOf(other, 1), &why, &w0);
  ASSERT_FALSE(other_run.ok());
  EXPECT_EQ(other_run.status().message().find("checkpoint.previous.pb"), std::string::npos) << other_run.status();

  // A missing newest checkpoint falls back; a damaged previous one too fails, naming both.
  std::filesystem::remove(path);
  EXPECT_TRUE(HasCheckpoint(d));
  auto missing = load(run, &why, &w0);
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(*missing, 1);
  ASSERT_TRUE(graph::io::WriteFileAtomically(path, good->substr(0, 30)).ok());
  ASSERT_TRUE(graph::io::WriteFileAtomically(d + "/checkpoint.previous.pb", "FGCKPT").ok());
  auto both = load(run, &why, &w0);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("checkpoint.pb: truncated"), std::string::npos) << both.status();
  EXPECT_NE(both.status().message().find("checkpoint.previous.pb: not a FlexGraph checkpoint"), std::string::npos)
      << both.status();
}

TEST(Summary, JsonCarriesEveryFieldAndNullForNonFinite) {
  TrainResult r;
  r.model = "magnn \"quoted\"";
  r.epochs = 3;
  r.losses = {1.0, 0.5, 0.25};
  r.hdg_bytes = int64_t{1} << 40;
  r.extra["test_auc"] = 0.875;
  r.stats.aggregation = 2.5;
  const std::string json = SummaryJson(r);
  auto parsed = StructFromJson(json, "summary");
  ASSERT_TRUE(parsed.ok()) << parsed.status() << json;
  const auto& f = parsed->fields();
  EXPECT_EQ(f.at("model").string_value(), r.model);
  EXPECT_EQ(f.at("epochs").number_value(), 3);
  EXPECT_EQ(f.at("hdg_bytes").number_value(), static_cast<double>(int64_t{1} << 40));
  EXPECT_EQ(f.at("test_auc").number_value(), 0.875);
  EXPECT_EQ(f.at("epoch0_loss").kind_case(), google::protobuf::Value::kNullValue);  // NaN
  EXPECT_EQ(f.at("stage_seconds").struct_value().fields().at("aggregation").number_value(), 2.5);
  ASSERT_EQ(f.at("losses").list_value().values_size(), 3);
  EXPECT_EQ(f.at("losses").list_value().values(2).number_value(), 0.25);
  EXPECT_FALSE(StructFromJson("{\"a\": ", "broken.json").ok());
  EXPECT_NE(StructFromJson("[1]", "list.json").status().message().find("list.json"), std::string::npos);
}

}  // namespace
}  // namespace fg::runtime
