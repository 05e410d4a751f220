// Trainer tests on real data (../shared/data/cora, its README's reference setup) and on the
// built-in SBM dataset: accuracy, determinism, checkpoint/resume exactness, config validation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "flexgraph/graph/io/file.h"
#include "flexgraph/nn/optim.h"
#include "flexgraph/tensor/device_alloc.h"
#include "runtime/comm/communicator.h"
#include "runtime/train/config.h"
#include "runtime/train/trainer.h"
#include "runtime/train/tensorboard.h"
#include "tests/runtime/scratch_dir.h"

namespace fg::runtime {
namespace {

const std::string kCora = std::string(FG_SHARED_DATA_DIR) + "/cora";

flexgraph::RunConfig CoraOptions(const std::string& model) {
  flexgraph::RunConfig config;
  config.mutable_model()->set_name(model);
  config.mutable_dataset()->set_path(kCora);
  config.mutable_output()->set_quiet(true);
  auto c = ResolveConfig(config);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TrainResult TrainOrDie(const flexgraph::RunConfig& c) {
  auto trainer = Trainer::Create(c);
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

// GCN selects Â in column order, so on an undirected graph its backward uses Â itself as the
// transpose (no second copy of the level).
TEST(Trainer, GcnLevelIsItsOwnTransposeOnAnUndirectedGraph) {
  flexgraph::RunConfig o = CoraOptions("gcn");
  o.mutable_train()->set_epochs(1);
  auto trainer = Trainer::Create(o);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  ASSERT_TRUE((*trainer)->Run().ok());
  const SparseMatrix& a = *(*trainer)->layer_hdg(0).level(1).matrix;
  EXPECT_EQ(a.transpose().indices.raw(), a.csr().indices.raw());
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
  flexgraph::RunConfig o = CoraOptions("gcn");
  o.mutable_train()->set_epochs(12);
  TrainResult full = TrainOrDie(o);
  TrainResult again = TrainOrDie(o);
  EXPECT_EQ(full.losses, again.losses);

  const std::string dir = ::testing::TempDir() + "/fg_resume_ckpt_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  flexgraph::RunConfig first = o;
  first.mutable_train()->set_checkpoint_every(5);
  first.mutable_train()->set_checkpoint_dir(dir);
  first.mutable_train()->set_stop_after(7);  // checkpoint at 5, stop at 7: resume redoes 6 and 7
  TrainResult partial = TrainOrDie(first);
  EXPECT_EQ(partial.epochs, 7);
  flexgraph::RunConfig second = first;
  second.mutable_train()->set_stop_after(0);
  second.mutable_train()->set_resume(true);
  TrainResult resumed = TrainOrDie(second);
  EXPECT_EQ(resumed.epochs, 12);
  EXPECT_EQ(resumed.resumed_from_epoch, 5);
  EXPECT_EQ(resumed.losses, full.losses);
  EXPECT_EQ(resumed.test_accuracy, full.test_accuracy);
  std::filesystem::remove_all(dir);
}

TEST(Trainer, InvalidOptionsNameTheField) {
  flexgraph::RunConfig config;
  config.mutable_model()->set_name("nosuchmodel");
  auto unknown = ResolveConfig(config);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("model: unknown model 'nosuchmodel'"), std::string::npos);
  flexgraph::RunConfig o = CoraOptions("gcn");
  o.mutable_model()->set_hidden(0);
  EXPECT_NE(ValidateConfig(o).message().find("hidden"), std::string::npos);
  EXPECT_NE(Trainer::Create(o).status().message().find("hidden"), std::string::npos);
  o = CoraOptions("gcn");
  o.mutable_model()->set_dropout(1.5f);
  EXPECT_NE(ValidateConfig(o).message().find("dropout"), std::string::npos);
  o = CoraOptions("gcn");
  o.mutable_train()->set_exec("fast");
  EXPECT_NE(ValidateConfig(o).message().find("exec"), std::string::npos);
  o = CoraOptions("gcn");  // epoch and layer numbers must fit their message tag fields
  o.mutable_train()->set_epochs(kMaxTagEpoch + 2);
  EXPECT_NE(ValidateConfig(o).message().find("epochs"), std::string::npos);
  o = CoraOptions("gcn");
  o.mutable_model()->set_layers(kMaxTagLayer + 2);
  EXPECT_NE(ValidateConfig(o).message().find("layers"), std::string::npos);
  o = CoraOptions("gcn");
  o.mutable_train()->set_device_memory_gib(-1);
  EXPECT_NE(ValidateConfig(o).message().find("device_memory_gib"), std::string::npos);
  for (const char* device : {"gpu", "cuda:", "cuda:-1", "cuda:x", "cuda0"}) {
    o = CoraOptions("gcn");
    o.mutable_train()->set_device(device);
    EXPECT_NE(ValidateConfig(o).message().find("device"), std::string::npos) << device;
  }
  for (const char* device : {"cpu", "cuda", "cuda:0", "cuda:3"}) {
    o = CoraOptions("gcn");
    o.mutable_train()->set_device(device);
    EXPECT_TRUE(ValidateConfig(o).ok()) << device;
  }
  EXPECT_EQ(CudaDeviceIndex("cuda:3"), 3);
  EXPECT_EQ(DeviceOf("cuda:3"), Device::kCuda);
  EXPECT_EQ(DeviceOf("cpu"), Device::kCpu);
  if (!CudaAvailable()) {  // a GPU asked for where none is usable: the reason, naming the flag
    o = CoraOptions("gcn");
    o.mutable_train()->set_device("cuda:1");
    EXPECT_NE(Trainer::Create(o).status().message().find("device: cuda:1"), std::string::npos);
  }
  o = CoraOptions("gcn");
  o.mutable_dataset()->set_path("/nonexistent/dataset");
  EXPECT_FALSE(Trainer::Create(o).ok());
  o = CoraOptions("gcn");
  o.mutable_dataset()->set_split("nosuchsplit");
  EXPECT_FALSE(Trainer::Create(o).ok());
  // Homogeneous layers on a heterogeneous graph: an error that says what to do, not a crash.
  for (const char* model : {"gcn", "sage", "gin"}) {
    o = CoraOptions(model);
    o.mutable_dataset()->set_path(std::string(FG_SHARED_DATA_DIR) + "/imdb");
    auto hetero = Trainer::Create(o);
    ASSERT_FALSE(hetero.ok()) << model;
    EXPECT_NE(hetero.status().message().find("heterogeneous model"), std::string::npos)
        << hetero.status();
  }
}

// A copy of Cora with one file's first line replaced.
std::string CoraWith(const std::string& name, const std::string& file, const std::string& first) {
  const std::string dir = fg::testing::ScratchDir("fg_" + name);
  std::filesystem::copy(kCora, dir, std::filesystem::copy_options::recursive);
  auto text = graph::io::ReadFileToString(dir + "/" + file);
  EXPECT_TRUE(text.ok()) << text.status();
  const std::string rest = text->substr(text->find('\n'));
  EXPECT_TRUE(graph::io::WriteGzipFile(dir + "/" + file, first + rest).ok());
  return dir;
}

TEST(Trainer, AModelThatDoesNotFitTheDatasetIsRefusedSayingWhatFits) {
  // Classifiers on a dataset with only an edge split: refused before the model is built.
  for (const char* model : {"gcn", "magnn", "han", "rgcn"}) {
    flexgraph::RunConfig o = CoraOptions(model);
    o.mutable_dataset()->set_path(std::string(FG_SHARED_DATA_DIR) + "/lastfm");
    auto t = Trainer::Create(o);
    ASSERT_FALSE(t.ok()) << model;
    EXPECT_NE(t.status().message().find("does not predict links"), std::string::npos) << t.status();
    EXPECT_NE(t.status().message().find("models that do: pinsage"), std::string::npos) << t.status();
  }
  // Metapath models on a homogeneous graph.
  for (const char* model : {"magnn", "han"}) {
    auto t = Trainer::Create(CoraOptions(model));
    ASSERT_FALSE(t.ok()) << model;
    EXPECT_NE(t.status().message().find("need a heterogeneous graph"), std::string::npos) << t.status();
  }
}

TEST(Trainer, BrokenLabelsSplitsAndFeaturesAreClearErrors) {
  auto error_of = [](const std::string& dir) {
    flexgraph::RunConfig o = CoraOptions("gcn");
    o.mutable_dataset()->set_path(dir);
    auto t = Trainer::Create(o);
    std::filesystem::remove_all(dir);
    return t.ok() ? std::string("ok") : std::string(t.status().message());
  };
  // Cora's training vertices are 0..139; vertex 0 is one.
  EXPECT_NE(error_of(CoraWith("neg_label", "raw/node-label.csv.gz", "-1"))
                .find("train split: node 0 of type 'node' has label -1"),
            std::string::npos);
  EXPECT_NE(error_of(CoraWith("huge_label", "raw/node-label.csv.gz", "1000000000")).find("classes for 2708"),
            std::string::npos);
  EXPECT_NE(error_of(CoraWith("overlap", "split/planetoid/test.csv.gz", "0")).find("is also in the train"),
            std::string::npos);
  auto text = graph::io::ReadFileToString(kCora + "/raw/node-feat.csv.gz");
  ASSERT_TRUE(text.ok());
  const std::string first_row = text->substr(0, text->find('\n'));
  const std::string nan_row = "nan" + first_row.substr(first_row.find(','));
  EXPECT_NE(error_of(CoraWith("nan_feature", "raw/node-feat.csv.gz", nan_row)).find("features of node type"),
            std::string::npos);
}

TEST(Trainer, ALabelThatSkipsClassesIsReported) {
  // Cora's classes are 0..6: a 9 makes two classes no vertex has.
  flexgraph::RunConfig o = CoraOptions("gcn");
  const std::string dir = CoraWith("typo_label", "raw/node-label.csv.gz", "9");
  o.mutable_dataset()->set_path(dir);
  o.mutable_output()->set_quiet(false);
  ::testing::internal::CaptureStderr();
  auto t = Trainer::Create(o);
  const std::string err = ::testing::internal::GetCapturedStderr();
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_NE(err.find("no vertex has class 7, 8; the largest label, 9 (vertex 0), makes 10 classes"),
            std::string::npos)
      << err;
}

TEST(Trainer, ModelOptionsAreDeclaredAndChecked) {
  // An unknown option names itself and the valid ones.
  flexgraph::RunConfig c;
  c.mutable_model()->set_name("gcn");
  (*c.mutable_model()->mutable_options())["typo"] = "1";
  auto typo = ResolveConfig(c);
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("unknown option 'typo'"), std::string::npos) << typo.status();
  EXPECT_NE(typo.status().message().find("input_dropout"), std::string::npos) << typo.status();
  // A value of the wrong type names the option and the type.
  c.mutable_model()->mutable_options()->clear();
  (*c.mutable_model()->mutable_options())["input_dropout"] = "yes";
  auto mistyped = ResolveConfig(c);
  ASSERT_FALSE(mistyped.ok());
  EXPECT_NE(mistyped.status().message().find("'input_dropout'"), std::string::npos);
  EXPECT_NE(mistyped.status().message().find("integer"), std::string::npos);
  // Models that predict links accept the link-prediction task's options; others do not.
  c.mutable_model()->mutable_options()->clear();
  (*c.mutable_model()->mutable_options())["negatives"] = "8";
  EXPECT_FALSE(ResolveConfig(c).ok());
  c.mutable_model()->set_name("pinsage");
  EXPECT_TRUE(ResolveConfig(c).ok());
  // Every registered model's defaults parse, and every option it declares has a typed default.
  for (const std::string& name : nau::ModelRegistry::Get().Names()) {
    flexgraph::RunConfig m;
    m.mutable_model()->set_name(name);
    auto resolved = ResolveConfig(m);
    ASSERT_TRUE(resolved.ok()) << name << ": " << resolved.status();
    EXPECT_EQ(resolved->model().name(), name);
    const nau::ModelInfo* info = nau::ModelRegistry::Get().Find(name);
    for (const nau::OptionSpec& o : ModelOptions(*info)) {
      if (o.default_value.empty()) continue;  // chosen by the model (its help says how)
      EXPECT_TRUE(nau::CheckOptions(ModelOptions(*info), {{o.name, o.default_value}}, name).ok())
          << name << " option " << o.name;
    }
  }
}

TEST(Trainer, ConfigLayersResolveInOrder) {
  // Built-in defaults < the model's defaults < the user's config.
  flexgraph::RunConfig c;
  c.mutable_model()->set_name("magnn");
  c.mutable_train()->set_lr(0.5f);
  auto r = ResolveConfig(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->train().lr(), 0.5f);              // user
  EXPECT_EQ(r->model().heads(), 8);              // MAGNN's default
  EXPECT_EQ(r->train().optimizer(), "adam");     // built-in
  EXPECT_EQ(r->dataset().path(), kDefaultDataset);
  // Resolving a resolved configuration changes nothing.
  auto again = ResolveConfig(*r);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->SerializeAsString(), r->SerializeAsString());
  // A config file's errors name the file, line and column.
  auto bad = ParseConfigText("train { epochs: 3 }\nmodel { hiden: 4 }\n", "run.cfg");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("run.cfg:2:"), std::string::npos) << bad.status();
}

TEST(Trainer, SelectsOnValidationAccuracyOrMacroF1) {
  // The same training run either way; each selection keeps the epoch best in its own metric.
  flexgraph::RunConfig o = CoraOptions("gcn");
  o.mutable_train()->set_epochs(40);
  const TrainResult by_accuracy = TrainOrDie(o);
  o.mutable_train()->set_select_on("macro_f1");
  const TrainResult by_macro_f1 = TrainOrDie(o);
  EXPECT_EQ(by_accuracy.losses, by_macro_f1.losses);
  EXPECT_GE(by_macro_f1.valid_macro_f1, by_accuracy.valid_macro_f1);
  EXPECT_GE(by_accuracy.valid_accuracy, by_macro_f1.valid_accuracy);
  EXPECT_GT(by_macro_f1.valid_macro_f1, 0.6);
  EXPECT_LE(by_macro_f1.valid_macro_f1, 1.0);
  o.mutable_train()->set_select_on("f1");
  EXPECT_NE(ValidateConfig(o).message().find("select_on"), std::string::npos);
}

TEST(Trainer, EvaluatesEveryKEpochsAndAfterTheLast) {
  // Evaluation leaves training alone; selection only sees the evaluated epochs.
  flexgraph::RunConfig o = CoraOptions("gcn");
  o.mutable_train()->set_epochs(40);
  const TrainResult every = TrainOrDie(o);
  o.mutable_train()->set_eval_every(7);
  const TrainResult sparse = TrainOrDie(o);
  EXPECT_EQ(every.losses, sparse.losses);
  EXPECT_EQ(sparse.epochs, 40);
  EXPECT_TRUE(sparse.best_epoch % 7 == 0 || sparse.best_epoch == 40) << sparse.best_epoch;
  EXPECT_LE(sparse.valid_accuracy, every.valid_accuracy);
  EXPECT_GT(sparse.test_accuracy, 0.7);
  o.mutable_train()->set_patience(1);  // counts evaluations: stops at the first that does not improve
  const TrainResult stopped = TrainOrDie(o);
  EXPECT_EQ(stopped.epochs % 7, 0);
  EXPECT_LE(stopped.epochs, 40);
  o.mutable_train()->set_eval_every(0);
  EXPECT_NE(ValidateConfig(o).message().find("eval_every"), std::string::npos);
}

TEST(Trainer, SummaryJsonHasTheDocumentedKeys) {
  flexgraph::RunConfig o = CoraOptions("gcn");
  o.mutable_train()->set_epochs(3);
  std::string json = SummaryJson(TrainOrDie(o));
  for (const char* key : {"model", "dataset", "epochs", "seed", "final_loss", "test_accuracy",
                          "test_macro_f1", "test_micro_f1", "valid_accuracy", "valid_macro_f1",
                          "epoch_seconds_median", "stage_seconds_median_epoch", "hdg_bytes",
                          "peak_rss_bytes", "peak_tensor_bytes", "host_fresh_bytes", "peak_device_bytes",
                          "epoch_host_syncs"}) {
    EXPECT_NE(json.find(std::string("\"") + key + "\":"), std::string::npos) << key;
  }
  // A CPU run holds no device memory.
  EXPECT_NE(json.find("\"peak_device_bytes\": 0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"epoch_host_syncs\": [\n  0,\n  0,\n  0\n ]"), std::string::npos) << json;
}

TEST(Trainer, SummaryHistoryHasOneEntryPerEpoch) {
  flexgraph::RunConfig o = CoraOptions("gcn");
  o.mutable_train()->set_epochs(3);
  o.mutable_train()->set_eval_every(2);
  const TrainResult r = TrainOrDie(o);
  const google::protobuf::Struct s = SummaryStruct(r);
  const auto& history = s.fields().at("history").list_value().values();
  ASSERT_EQ(history.size(), 3);
  for (int e = 0; e < 3; ++e) {
    const auto& h = history[e].struct_value().fields();
    EXPECT_EQ(h.at("epoch").number_value(), e + 1);
    EXPECT_EQ(h.at("loss").number_value(), r.losses[e]);
    EXPECT_EQ(h.at("seconds").number_value(), r.epoch_seconds[e]);
    EXPECT_TRUE(h.at("stage_seconds").struct_value().fields().contains("aggregation"));
    // Epochs 2 and 3 (the last) are evaluated.
    EXPECT_EQ(h.contains("valid_accuracy"), e >= 1) << e;
  }
  EXPECT_EQ(history[2].struct_value().fields().at("valid_accuracy").number_value(), r.valid_accuracy);
}

// The schedule sets the optimizer's rate each epoch, and the history reports it.
TEST(Trainer, LrScheduleDrivesTheOptimizer) {
  flexgraph::RunConfig o = CoraOptions("gcn");
  o.mutable_train()->set_epochs(4);
  const TrainResult constant = TrainOrDie(o);
  o.mutable_train()->set_lr_schedule("cosine");
  o.mutable_train()->set_warmup_epochs(1);
  const TrainResult cosine = TrainOrDie(o);
  const google::protobuf::Struct summary = SummaryStruct(cosine);
  const auto& history = summary.fields().at("history").list_value().values();
  ASSERT_EQ(history.size(), 4);
  for (int e = 0; e < 4; ++e) {
    EXPECT_FLOAT_EQ(history[e].struct_value().fields().at("lr").number_value(),
                    nn::ScheduledLr(nn::LrSchedule::kCosine, o.train().lr(), e, 4, 1)) << e;
  }
  EXPECT_EQ(cosine.losses[0], constant.losses[0]);  // before any step
  EXPECT_NE(cosine.losses[1], constant.losses[1]);  // after a step at half the rate
  o.mutable_train()->set_warmup_epochs(4);
  EXPECT_NE(ValidateConfig(o).message().find("warmup_epochs"), std::string::npos);
  o.mutable_train()->set_warmup_epochs(0);
  o.mutable_train()->set_lr_schedule("step");
  EXPECT_NE(ValidateConfig(o).message().find("lr_schedule"), std::string::npos);
}

// The check value of CRC-32C (RFC 3720) and TFRecord's mask of it.
TEST(Tensorboard, Crc32cOfTheCheckString) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  const uint32_t c = 0xE3069283u;
  EXPECT_EQ(MaskedCrc32c("123456789"), ((c >> 15) | (c << 17)) + 0xA282EAD8u);
}

}  // namespace
}  // namespace fg::runtime
