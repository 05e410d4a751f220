// Saved models and inference (runtime/train/saved_model.h, runtime/train/inference.h): a trained model is
// written with the parameters of its best validation epoch and reproduces that epoch's test
// metrics when loaded; class probabilities, embeddings and recommendations are what the model
// computes; runs that differ from the saved model are refused naming the difference; a directory
// that is not a saved model is never overwritten.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/npy.h"
#include "runtime/train/config.h"
#include "runtime/train/inference.h"
#include "runtime/tasks/link_prediction.h"
#include "runtime/train/saved_model.h"
#include "runtime/train/trainer.h"

namespace fg::runtime {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SavedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fg_saved_model_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Trains `config` (quiet) saving into <dir>/model; returns the run's result.
  TrainResult TrainAndSave(flexgraph::RunConfig config) {
    config.mutable_output()->set_quiet(true);
    config.mutable_output()->set_save_model(model_dir());
    auto trainer = Trainer::Create(config);
    EXPECT_TRUE(trainer.ok()) << trainer.status();
    auto result = (*trainer)->Run();
    EXPECT_TRUE(result.ok()) << result.status();
    return *result;
  }
  std::unique_ptr<LoadedModel> Load(const flexgraph::RunConfig& overrides = {}) {
    auto saved = ReadSavedModel(model_dir());
    EXPECT_TRUE(saved.ok()) << saved.status();
    flexgraph::RunConfig config = saved->config();
    config.MergeFrom(overrides);
    auto resolved = ResolveConfig(config);
    EXPECT_TRUE(resolved.ok()) << resolved.status();
    auto model = LoadModel(model_dir(), *saved, *resolved);
    EXPECT_TRUE(model.ok()) << model.status();
    return model.ok() ? std::move(*model) : nullptr;
  }
  std::string model_dir() const { return (dir_ / "model").string(); }

  fs::path dir_;
};

flexgraph::RunConfig Config(const std::string& model, const std::string& dataset, int epochs) {
  flexgraph::RunConfig c;
  c.mutable_model()->set_name(model);
  c.mutable_dataset()->set_path(dataset);
  c.mutable_train()->set_epochs(epochs);
  c.mutable_train()->set_seed(3);
  return c;
}

const std::string kData = FG_SHARED_DATA_DIR;

TEST_F(SavedModelTest, GcnReproducesItsBestEpochAndRefusesOtherSettings) {
  // Patience ends the run after its best epoch: the saved parameters are the best epoch's.
  flexgraph::RunConfig c = Config("gcn", kData + "/cora", 60);
  c.mutable_train()->set_patience(5);
  const TrainResult r = TrainAndSave(c);
  ASSERT_LT(r.best_epoch, r.epochs);
  auto saved = ReadSavedModel(model_dir());
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->epoch(), r.best_epoch);
  EXPECT_EQ(saved->num_classes(), 7);
  EXPECT_TRUE(graph::io::PathExists(model_dir() + "/params/layer0.linear.weight.npy"));

  auto model = Load();
  ASSERT_NE(model, nullptr);
  auto m = model->trainer->EvaluateAt(model->epoch);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(m->test, r.test_accuracy);
  EXPECT_DOUBLE_EQ(m->test_macro_f1, r.test_macro_f1);

  auto probs = PredictProbabilities(*model, {});
  ASSERT_TRUE(probs.ok()) << probs.status();
  ASSERT_EQ(probs->rows(), 2708);
  ASSERT_EQ(probs->row_width(), 7);
  for (int64_t v = 0; v < probs->rows(); ++v) {
    double sum = 0;
    for (int j = 0; j < 7; ++j) sum += probs->f32()[v * 7 + j];
    ASSERT_NEAR(sum, 1.0, 1e-5) << "vertex " << v;
  }
  // A node list selects rows, in its order.
  auto some = PredictProbabilities(*model, {5, 0, 5});
  ASSERT_TRUE(some.ok());
  for (int j = 0; j < 7; ++j) {
    EXPECT_EQ(some->f32()[j], probs->f32()[5 * 7 + j]);
    EXPECT_EQ(some->f32()[7 + j], probs->f32()[j]);
  }
  EXPECT_FALSE(PredictProbabilities(*model, {2708}).ok());

  // Embeddings: the hidden layer by default, [vertices, hidden].
  EXPECT_EQ(DefaultEmbedding(*model).layer, 0);
  EXPECT_FALSE(DefaultEmbedding(*model).nbr);
  auto h = Embeddings(*model, {0, false}, "node", {});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->rows(), 2708);
  EXPECT_EQ(h->row_width(), 16);

  // Settings the parameters depend on: refused before any data is read, naming the field.
  auto saved_again = ReadSavedModel(model_dir());
  flexgraph::RunConfig other = saved_again->config();
  other.mutable_model()->set_hidden(32);
  auto refused = LoadModel(model_dir(), *saved_again, other);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("model.hidden: 16 -> 32"));
}

TEST_F(SavedModelTest, ADatasetOfAnotherSchemaIsRefusedNamingIt) {
  TrainAndSave(Config("sage", "sbm:nodes=300,classes=3,features=16", 3));
  flexgraph::RunConfig other;
  other.mutable_dataset()->set_path("sbm:nodes=300,classes=4,features=8");
  auto saved = ReadSavedModel(model_dir());
  ASSERT_TRUE(saved.ok());
  flexgraph::RunConfig config = saved->config();
  config.MergeFrom(other);
  auto model = LoadModel(model_dir(), *saved, *ResolveConfig(config));
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("features of 'node': 16 -> 8 columns"));
  EXPECT_THAT(model.status().message(), HasSubstr("classes: 3 -> 4"));
  // Another graph of the same schema (more vertices) takes the model: inductive inference.
  config.mutable_dataset()->set_path("sbm:nodes=500,classes=3,features=16");
  auto bigger = LoadModel(model_dir(), *saved, *ResolveConfig(config));
  ASSERT_TRUE(bigger.ok()) << bigger.status();
  auto probs = PredictProbabilities(**bigger, {});
  ASSERT_TRUE(probs.ok());
  EXPECT_EQ(probs->rows(), 500);
}

TEST_F(SavedModelTest, HeterogeneousModelOnAnotherSplitAndItsLearnedEmbeddings) {
  flexgraph::RunConfig c = Config("rgcn", kData + "/dblp", 3);
  c.mutable_dataset()->set_split("heco20");
  c.mutable_model()->set_hidden(16);
  const TrainResult r = TrainAndSave(c);
  auto model = Load();
  ASSERT_NE(model, nullptr);
  auto m = model->trainer->EvaluateAt(model->epoch);
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ(m->test_macro_f1, r.test_macro_f1);
  // Conferences have no features: their input rows are the learned table, as saved.
  auto input = Embeddings(*model, {-1, false}, "conference", {});
  ASSERT_TRUE(input.ok()) << input.status();
  auto table = graph::io::ReadNpy(model_dir() + "/params/embed.conference.table.npy");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(input->shape(), table->shape());
  for (int64_t i = 0; i < table->numel(); ++i) ASSERT_EQ(input->f32()[i], table->f32()[i]);
  // Another split of the same graph: predictions for every author.
  flexgraph::RunConfig heco40;
  heco40.mutable_dataset()->set_split("heco40");
  auto other = Load(heco40);
  ASSERT_NE(other, nullptr);
  auto probs = PredictProbabilities(*other, {});
  ASSERT_TRUE(probs.ok());
  EXPECT_EQ(probs->rows(), 4057);
  EXPECT_EQ(probs->row_width(), 4);
}

TEST_F(SavedModelTest, HanEmbeddingsAreWhatItsOutputTransformReads) {
  flexgraph::RunConfig c = Config("han", kData + "/dblp", 2);
  c.mutable_dataset()->set_split("heco20");
  c.mutable_model()->set_hidden(4);
  c.mutable_model()->set_heads(2);
  TrainAndSave(c);
  auto model = Load();
  ASSERT_NE(model, nullptr);
  const EmbeddingSource source = DefaultEmbedding(*model);
  EXPECT_EQ(source.layer, 0);
  EXPECT_TRUE(source.nbr);
  auto emb = Embeddings(*model, source, "author", {});
  ASSERT_TRUE(emb.ok()) << emb.status();
  ASSERT_EQ(emb->shape(), (std::vector<int64_t>{4057, 8}));  // heads x hidden
  // The logits are the output transform of the embeddings: emb W + b.
  Tensor ids;
  auto logits = model->trainer->Infer(model->epoch, 0, &ids);
  ASSERT_TRUE(logits.ok());
  auto w = graph::io::ReadNpy(model_dir() + "/params/layer0.output.weight.npy");
  auto b = graph::io::ReadNpy(model_dir() + "/params/layer0.output.bias.npy");
  ASSERT_TRUE(w.ok() && b.ok()) << w.status() << b.status();
  ASSERT_EQ(w->shape(), (std::vector<int64_t>{8, 4}));
  for (int64_t v : {0, 1, 4056}) {
    for (int j = 0; j < 4; ++j) {
      double want = b->f32()[j];
      for (int k = 0; k < 8; ++k) want += emb->f32()[v * 8 + k] * w->f32()[k * 4 + j];
      EXPECT_NEAR(logits->f32()[v * 4 + j], want, 1e-4) << "vertex " << v << " class " << j;
    }
  }
}

TEST_F(SavedModelTest, PinSageRecommendsUnseenItemsByScore) {
  flexgraph::RunConfig c = Config("pinsage", kData + "/lastfm", 3);
  TrainAndSave(c);
  auto model = Load();
  ASSERT_NE(model, nullptr);
  EXPECT_FALSE(PredictProbabilities(*model, {}).ok());  // it predicts links
  const auto& lp = dynamic_cast<const LinkPredictionTask&>(model->trainer->task());
  Tensor ids;
  const int last = model->trainer->model().num_layers() - 1;
  auto out = model->trainer->Infer(model->epoch, last, &ids);
  ASSERT_TRUE(out.ok());
  const int k = 5;
  const auto rec = lp.Recommend(*out, k);
  // Brute force for a few users: the k best artists the user did not listen to in training.
  EXPECT_EQ(DefaultEmbedding(*model).layer, last);
  auto users = Embeddings(*model, {last, false}, "user", {});
  auto artists = Embeddings(*model, {last, false}, "artist", {});
  ASSERT_TRUE(users.ok() && artists.ok());
  const graph::Dataset& ds = model->trainer->dataset();
  const graph::Relation* rel = ds.graph.FindRelation("user___listens___artist");
  ASSERT_NE(rel, nullptr);
  const int64_t d = users->row_width();
  for (int32_t u : {0, 17, 1000}) {
    std::set<int32_t> seen;
    // The task's graph holds the training edges only.
    const Csr& by_user = rel->by_src;
    for (int64_t e = by_user.row_ptr()[u]; e < by_user.row_ptr()[u + 1]; ++e) seen.insert(by_user.col()[e]);
    std::vector<std::pair<float, int32_t>> all;
    for (int32_t a = 0; a < artists->rows(); ++a) {
      if (seen.count(a)) continue;
      float s = 0;
      for (int64_t j = 0; j < d; ++j) s += users->f32()[u * d + j] * artists->f32()[a * d + j];
      all.emplace_back(-s, a);
    }
    std::sort(all.begin(), all.end());
    for (int r = 0; r < k; ++r) {
      EXPECT_EQ(rec.dst[u * k + r], all[r].second) << "user " << u << " rank " << r;
      EXPECT_NEAR(rec.score[u * k + r], -all[r].first, 1e-4);
    }
  }
  EXPECT_GE(rec.test_recall, 0.0);
  EXPECT_LE(rec.test_recall, 1.0);
}

TEST_F(SavedModelTest, NothingIsOverwrittenButASavedModel) {
  // A directory with other files is refused and left as it was.
  fs::create_directories(model_dir());
  { std::ofstream(model_dir() + "/notes.txt") << "keep"; }
  auto s = PrepareModelDir(model_dir());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("not overwritten"));
  EXPECT_FALSE(SaveModel(model_dir(), flexgraph::SavedModel(), {}).ok());
  EXPECT_TRUE(graph::io::PathExists(model_dir() + "/notes.txt"));
  // A saved model is replaced by a whole new one.
  fs::remove_all(model_dir());
  TrainAndSave(Config("gcn", "sbm:nodes=200,classes=2,features=4", 2));
  TrainAndSave(Config("sage", "sbm:nodes=200,classes=2,features=4", 2));
  auto saved = ReadSavedModel(model_dir());
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(saved->config().model().name(), "sage");
  EXPECT_FALSE(graph::io::PathExists(model_dir() + ".partial"));
  EXPECT_FALSE(graph::io::PathExists(model_dir() + "/params/layer0.linear.weight.npy"));  // gcn's
}

TEST_F(SavedModelTest, ParametersThatAreNotFiniteOrDoNotMatchTheirChecksumAreRefused) {
  TrainAndSave(Config("gcn", "sbm:nodes=200,classes=2,features=4", 2));
  auto saved = ReadSavedModel(model_dir());
  ASSERT_TRUE(saved.ok()) << saved.status();
  for (const auto& p : saved->params()) EXPECT_TRUE(p.has_crc32()) << p.name();
  auto load = [&]() -> absl::Status {
    auto again = ReadSavedModel(model_dir());
    if (!again.ok()) return again.status();
    auto resolved = ResolveConfig(again->config());
    EXPECT_TRUE(resolved.ok());
    return LoadModel(model_dir(), *again, *resolved).status();
  };
  ASSERT_TRUE(load().ok());
  std::vector<std::pair<std::string, Tensor>> params;
  for (const auto& p : saved->params()) {
    auto t = graph::io::ReadNpy(model_dir() + "/params/" + p.name() + ".npy");
    ASSERT_TRUE(t.ok()) << t.status();
    params.emplace_back(p.name(), *t);
  }
  const std::string name = params[0].first;
  // Saved that way (the checksum is of the NaN): refused, naming the parameter and the element.
  for (float bad : {std::nanf(""), INFINITY}) {
    Tensor t = params[0].second.Clone();
    t.f32()[1] = bad;
    auto with = params;
    with[0].second = t;
    ASSERT_TRUE(SaveModel(model_dir(), *saved, with).ok());
    const absl::Status s = load();
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.message(), HasSubstr("parameter " + name + " holds " +
                                       (std::isnan(bad) ? "NaN" : "inf") + " at element 1"));
  }
  // Changed after saving: the checksum names the file.
  ASSERT_TRUE(SaveModel(model_dir(), *saved, params).ok());
  ASSERT_TRUE(load().ok());
  Tensor t = params[0].second.Clone();
  t.f32()[0] += 1;
  ASSERT_TRUE(graph::io::WriteNpy(model_dir() + "/params/" + name + ".npy", t).ok());
  const absl::Status s = load();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(model_dir() + "/params/" + name + ".npy: checksum mismatch"));
  // A model saved before checksums is refused by its format version.
  auto old =
      ParseSavedModel("format_version: 1\nconfig { model { name: \"gcn\" } }\n", "m/model.txtpb");
  ASSERT_FALSE(old.ok());
  EXPECT_THAT(old.status().message(), HasSubstr("saved-model format version 1"));
}

TEST(SavedModelFiles, ManifestAndNodeListErrorsNameTheFileAndLine) {
  auto bad = ParseSavedModel("format_version: 1\nconfig { model { nme: \"gcn\" } }\n", "m/model.txtpb");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("m/model.txtpb:2"));
  auto version = ParseSavedModel("format_version: 7\nconfig { model { name: \"gcn\" } }\n", "m/model.txtpb");
  ASSERT_FALSE(version.ok());
  EXPECT_THAT(version.status().message(), HasSubstr("version 7"));
  auto nodes = ParseNodeList("3\n# a comment\n\n 4 \n", "n.txt", 10);
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(*nodes, (std::vector<int64_t>{3, 4}));
  auto word = ParseNodeList("3\nfour\n", "n.txt", 10);
  ASSERT_FALSE(word.ok());
  EXPECT_THAT(word.status().message(), HasSubstr("n.txt:2: 'four' is not a vertex id"));
  auto range = ParseNodeList("10\n", "n.txt", 10);
  ASSERT_FALSE(range.ok());
  EXPECT_THAT(range.status().message(), HasSubstr("n.txt:1: vertex 10 out of range [0, 10)"));
  EXPECT_FALSE(ParseNodeList("# nothing\n", "n.txt", 10).ok());
}

}  // namespace
}  // namespace fg::runtime
