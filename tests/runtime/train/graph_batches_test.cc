// Training on batches of whole graphs through the Trainer (a graph-set dataset with an edge task):
// the run reports the edge metrics at the top of its result, and P data-parallel workers with the
// same global batches give the single process's losses, epoch by epoch and batch by batch.
#include <gtest/gtest.h>

#include <cmath>

#include "absl/strings/str_cat.h"

#include "flexgraph/graph/dataset.h"
#include "tests/runtime/in_process_workers.h"
#include "tests/udf_examples/graph_classification_set.h"

namespace fg::runtime {
namespace {

constexpr char kEvents[] = "trackml:events=20,particles=15,noise=0.1,seed=7";

flexgraph::RunConfig Config(int64_t batch_size, int epochs) {
  flexgraph::RunConfig c;
  c.mutable_dataset()->set_path(kEvents);
  c.mutable_model()->set_name("interaction");
  c.mutable_model()->set_hidden(8);
  c.mutable_model()->set_layers(2);
  c.mutable_train()->set_epochs(epochs);
  c.mutable_train()->set_batch_size(batch_size);
  c.mutable_train()->set_lr(0.01f);
  c.mutable_train()->set_seed(3);
  c.mutable_output()->set_quiet(true);
  return c;
}

TrainResult Single(const flexgraph::RunConfig& c) {
  auto t = Trainer::Create(c);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return {};
  EXPECT_NE((*t)->graph_batches(), nullptr);
  auto r = (*t)->Run();
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : TrainResult{};
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_FALSE(want.empty()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::abs(want[i]))) << what << " " << i;
  }
}

TEST(GraphBatches, TrainsAnEdgeClassifierAndReportsItsMetrics) {
  const TrainResult r = Single(Config(3, 8));
  ASSERT_EQ(r.losses.size(), 8u);
  EXPECT_LT(r.losses.back(), r.losses.front());
  // 20 events: 16 train, 2 valid, 2 test; batches of 3 graphs (the last of 1).
  EXPECT_EQ(r.batches_per_epoch, 6);
  EXPECT_EQ(r.batch_losses.size(), 48u);
  for (const char* key : {"test_efficiency", "test_purity", "test_auc", "valid_auc", "valid_accuracy"}) {
    ASSERT_TRUE(r.extra.count(key)) << key;
    EXPECT_GE(r.extra.at(key), 0.0) << key;
    EXPECT_LE(r.extra.at(key), 1.0) << key;
  }
  // Accuracies are accuracies (not the AUC that selects the model).
  EXPECT_EQ(r.test_accuracy, r.extra.at("test_accuracy"));
  EXPECT_EQ(r.valid_accuracy, r.extra.at("valid_accuracy"));
  EXPECT_FALSE(r.extra.count("train_accuracy"));  // not evaluated: a pass over every training graph
}

TEST(GraphBatches, DataParallelWorkersGiveTheSingleProcessLosses) {
  const flexgraph::RunConfig c = Config(5, 3);
  const TrainResult single = Single(c);
  const int64_t vertices = graph::LoadDataset(kEvents, {})->graph.NumNodes("node");
  // 16 training events in batches of 5, 5, 5, 1: with 3 workers, two hold nothing of the last.
  for (int parts : {2, 3}) {
    SCOPED_TRACE(parts);
    const auto results = testing::RunWorkers(c, parts, ExchangeMode::kAuto, vertices);
    for (const TrainResult& r : results) {
      ExpectNear(r.losses, single.losses, "epoch loss");
      ExpectNear(r.batch_losses, single.batch_losses, "batch loss");
      EXPECT_EQ(r.traffic.exchange, "data-parallel graphs");
      ASSERT_TRUE(r.extra.count("test_auc"));
      EXPECT_NEAR(r.extra.at("test_auc"), single.extra.at("test_auc"), 1e-5);
    }
  }
}

// Vertex sharding: every worker takes the whole batch, METIS (or hash) splits its vertices, each
// worker computes its own vertices' rows and their edges' states and fetches its neighbours' rows
// per layer; losses and evaluation equal the single process's at P = 2 and 3, with bytes of
// fetched rows really sent. `edges` is the interaction model's option.
void ExpectShardedEqualsSingle(const std::string& edges) {
  flexgraph::RunConfig c = Config(2, 3);
  c.mutable_model()->set_layers(3);
  c.mutable_model()->mutable_options()->insert({"aggregation", "sum,max"});
  c.mutable_model()->mutable_options()->insert({"edges", edges});
  const TrainResult single = Single(c);
  c.mutable_train()->set_batch_sharding("vertices");
  const int64_t vertices = graph::LoadDataset(kEvents, {})->graph.NumNodes("node");
  // Layers recomputed in the backward pass exchange their rows again.
  flexgraph::RunConfig recomputed = c;
  (*recomputed.mutable_model()->mutable_options())["recompute"] = "1";
  recomputed.mutable_partition()->set_method("hash");
  for (const TrainResult& r : testing::RunWorkers(recomputed, 2, ExchangeMode::kAuto, vertices)) {
    ExpectNear(r.batch_losses, single.batch_losses, "batch loss, layers recomputed");
  }
  for (const char* method : {"metis", "hash"}) {
    c.mutable_partition()->set_method(method);
    for (int parts : {2, 3}) {
      SCOPED_TRACE(absl::StrCat(method, " ", parts));
      const auto results = testing::RunWorkers(c, parts, ExchangeMode::kAuto, vertices);
      ASSERT_EQ(results.size(), static_cast<size_t>(parts));
      for (const TrainResult& r : results) {
        ExpectNear(r.losses, single.losses, "epoch loss");
        ExpectNear(r.batch_losses, single.batch_losses, "batch loss");
        // Evaluation: every worker its own entries' scores, summed into the batch's.
        for (const char* key : {"test_auc", "test_efficiency", "valid_purity"}) {
          ASSERT_TRUE(r.extra.count(key)) << key;
          EXPECT_NEAR(r.extra.at(key), single.extra.at(key), 1e-5) << key;
        }
        // A hash partition cuts edges: neighbours' rows and their gradients cross between workers.
        if (method == std::string("hash")) EXPECT_GT(r.traffic.bytes_features, 0);
        if (method == std::string("hash")) EXPECT_GT(r.traffic.bytes_gradients, 0);
        EXPECT_EQ(r.traffic.exchange, "vertex-sharded batches (1d rows)");
      }
    }
  }
}

TEST(GraphBatches, VertexShardedWorkersGiveTheSingleProcessLosses) { ExpectShardedEqualsSingle("both"); }

// One state per edge as stored, aggregated into both of its hits: the states of edges whose
// source another worker owns travel to it (runtime/distributed/edge_return.h), and the worker
// owning an edge's destination scores both of its entries.
TEST(GraphBatches, VertexShardedEdgesOnceGiveTheSingleProcessLosses) { ExpectShardedEqualsSingle("once"); }

// Tracking events train on their mirror images by default (--augment auto); other sets of graphs
// cannot be mirrored, and asking for it is an error naming the dataset.
TEST(GraphBatches, TrackingEventsTrainOnTheirMirrorImagesByDefault) {
  flexgraph::RunConfig c = Config(4, 2);
  const TrainResult automatic = Single(c);
  c.mutable_train()->set_augment("reflect");
  const TrainResult reflected = Single(c);
  c.mutable_train()->set_augment("none");
  const TrainResult plain = Single(c);
  ExpectNear(automatic.batch_losses, reflected.batch_losses, "auto against reflect");
  ASSERT_EQ(plain.batch_losses.size(), reflected.batch_losses.size());
  EXPECT_NE(plain.batch_losses[0], reflected.batch_losses[0]);  // the first batch already differs
  c.mutable_train()->set_augment("flip");
  EXPECT_NE(Trainer::Create(c).status().message().find("augment: expected auto, none or reflect, got 'flip'"),
            std::string::npos);
  graph::testing::TempDir dir;
  flexgraph::RunConfig gin;
  gin.mutable_dataset()->set_path(testing::WriteChordedPaths(dir));
  gin.mutable_model()->set_name("gin");
  gin.mutable_train()->set_epochs(1);
  gin.mutable_output()->set_quiet(true);
  EXPECT_TRUE(Trainer::Create(gin).ok());  // auto: nothing to mirror
  gin.mutable_train()->set_augment("reflect");
  const absl::Status refused = Trainer::Create(gin).status();
  EXPECT_NE(refused.message().find("augment: reflect mirrors tracking events; dataset "), std::string::npos) << refused;
}

TEST(GraphBatches, MaxStepsEndsTrainingAfterTheEpochThatReachesThem) {
  // 16 training events in batches of 5: 4 steps per epoch; 9 steps end in the third epoch.
  flexgraph::RunConfig c = Config(5, 20);
  c.mutable_train()->set_lr_schedule("cosine");
  c.mutable_train()->set_max_steps(9);
  const TrainResult limited = Single(c);
  EXPECT_EQ(limited.losses.size(), 3u);
  EXPECT_EQ(limited.batch_losses.size(), 12u);
  // The same run as --epochs 3: the cosine ends at the epochs that run, not at --epochs.
  c.mutable_train()->set_max_steps(0);
  c.mutable_train()->set_epochs(3);
  const TrainResult three = Single(c);
  ExpectNear(limited.losses, three.losses, "max_steps 9 against epochs 3");
  // A limit past the epochs changes nothing; too few steps for the warm-up is named.
  c.mutable_train()->set_max_steps(1000);
  ExpectNear(Single(c).losses, three.losses, "max_steps 1000 against epochs 3");
  c.mutable_train()->set_epochs(20);
  c.mutable_train()->set_max_steps(8);
  c.mutable_train()->set_warmup_epochs(2);
  const absl::Status refused = Trainer::Create(c).status();
  EXPECT_NE(refused.message().find("max_steps: 8 steps of 4 batches per epoch make 2 epochs"), std::string::npos)
      << refused;
  c.mutable_train()->set_max_steps(-1);
  EXPECT_NE(Trainer::Create(c).status().message().find("max_steps: must not be negative"), std::string::npos);
}

TEST(GraphBatches, VertexShardingRefusesWhatItCannotShard) {
  flexgraph::RunConfig c = Config(2, 1);
  c.mutable_train()->set_batch_sharding("nodes");
  EXPECT_NE(Trainer::Create(c).status().message().find("batch_sharding"), std::string::npos);
}

}  // namespace
}  // namespace fg::runtime
