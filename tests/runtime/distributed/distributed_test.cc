// Distributed training in one process: P workers as threads over the in-process communicator
// must match the single-process trainer (loss within 1e-4 relative at every epoch, and at every
// batch of mini-batch training; same test accuracy), for row fetch, partial aggregation and the
// per-peer choice.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "flexgraph/base/parallel.h"
#include "runtime/comm/communicator.h"
#include "runtime/distributed/exchange.h"
#include "runtime/train/trainer.h"
#include "tests/runtime/in_process_workers.h"

namespace fg::runtime {
namespace {

const std::string kCora = std::string(FG_SHARED_DATA_DIR) + "/cora";

flexgraph::RunConfig Options(const std::string& model, int epochs,
                             const std::string& dataset = kCora) {
  flexgraph::RunConfig config;
  config.mutable_model()->set_name(model);
  config.mutable_dataset()->set_path(dataset);
  config.mutable_train()->set_epochs(epochs);
  config.mutable_train()->set_threads(1);
  config.mutable_output()->set_quiet(true);
  return config;
}

using fg::testing::RunWorkers;

void ExpectMatchesSingleProcess(const std::string& model, ExchangeMode mode,
                                std::vector<int> parts_list, flexgraph::RunConfig o) {
  auto single = Trainer::Create(o);
  ASSERT_TRUE(single.ok()) << single.status();
  auto base = (*single)->Run();
  ASSERT_TRUE(base.ok());
  for (int parts : parts_list) {
    int64_t vertices = 0;
    for (int64_t n : (*single)->dataset().graph.num_nodes) vertices += n;
    auto results = RunWorkers(o, parts, mode, vertices);
    for (int r = 0; r < parts; ++r) {
      ASSERT_EQ(results[r].losses.size(), base->losses.size()) << model << " P=" << parts;
      for (size_t e = 0; e < base->losses.size(); ++e) {
        EXPECT_NEAR(results[r].losses[e], base->losses[e], 1e-4 * std::fabs(base->losses[e]))
            << model << " P=" << parts << " worker " << r << " epoch " << e + 1;
      }
      // NaN for link prediction, whose metrics are not accuracies.
      EXPECT_THAT(results[r].test_accuracy, ::testing::NanSensitiveDoubleEq(base->test_accuracy)) << model << " P=" << parts;
      EXPECT_EQ(results[r].traffic.world_size, parts);
      // The training steps' time outside receives: positive, and at most their wall time.
      double step_seconds = 0;
      for (const auto& h : results[r].history) step_seconds += h.seconds;
      if (parts > 1) {
        EXPECT_GT(results[r].traffic.compute_seconds, 0) << model << " P=" << parts << " worker " << r;
        EXPECT_LE(results[r].traffic.compute_seconds, step_seconds) << model << " P=" << parts << " worker " << r;
      }
      if (o.train().batch_size() == 0) continue;
      // Batch by batch: every batch's loss (the workers' shares summed) is the single process's.
      ASSERT_GT(base->batches_per_epoch, 1) << model;
      ASSERT_EQ(base->batch_losses.size(), base->losses.size() * base->batches_per_epoch) << model;
      const std::vector<double>& want = base->batch_losses;
      ASSERT_EQ(results[r].batch_losses.size(), want.size()) << model << " P=" << parts;
      for (size_t b = 0; b < want.size(); ++b) {
        EXPECT_NEAR(results[r].batch_losses[b], want[b], 1e-4 * std::fabs(want[b]))
            << model << " P=" << parts << " worker " << r << " epoch "
            << b / base->batches_per_epoch + 1 << " batch " << b % base->batches_per_epoch;
      }
    }
    if (parts == 1) continue;
    // Every worker sent something: features or partials, and gradients back (mini-batches
    // exchange only when evaluating, and all-reduce the parameters' gradients every step).
    // (ShaDow evaluates each worker's roots on their subgraphs, from its copy of the graph.)
    if (o.train().sampler() != "shadow") {
      EXPECT_GT(results[0].traffic.bytes_features + results[0].traffic.bytes_partials, 0);
    }
    EXPECT_GT(o.train().batch_size() > 0 ? results[0].traffic.bytes_allreduce : results[0].traffic.bytes_gradients, 0);
  }
}

// Positions in sorted id lists, as the exchange plans look up owned vertices and ghosts: lists of
// a few runs (searched by run) and of many (hashed), ids between, before and after the runs, and
// negative ones.
TEST(IdPositions, FindsEveryListedIdAndNoOther) {
  std::vector<std::vector<int64_t>> lists = {{}, {0}, {5, 6, 7, 20, 21, 1000}};
  std::vector<int64_t> scattered;  // 3000 runs of one or two ids
  for (int64_t k = 0; k < 3000; ++k) {
    scattered.push_back(3 * k + 1);
    if (k % 2 == 0) scattered.push_back(3 * k + 2);
  }
  lists.push_back(scattered);
  std::vector<int64_t> ranges;  // 64 runs, then 65
  for (int64_t r = 0; r < 64; ++r) {
    for (int64_t k = 0; k < 10; ++k) ranges.push_back(100 * r + k);
  }
  lists.push_back(ranges);
  ranges.push_back(100000);
  lists.push_back(ranges);
  for (const std::vector<int64_t>& ids : lists) {
    const IdPositions positions(ids.data(), static_cast<int64_t>(ids.size()));
    const int64_t last = ids.empty() ? 10 : ids.back() + 10;
    size_t next = 0;
    for (int64_t v = -3; v <= last; ++v) {
      const bool listed = next < ids.size() && ids[next] == v;
      ASSERT_EQ(positions.Of(v), listed ? static_cast<int64_t>(next) : -1) << "id " << v << " of " << ids.size();
      if (listed) ++next;
    }
  }
}

TEST(Distributed, GcnMatchesSingleProcessForP1To4) {
  ExpectMatchesSingleProcess("gcn", ExchangeMode::kAuto, {1, 2, 3, 4}, Options("gcn", 10));
}

TEST(Distributed, MiniBatchesMatchSingleProcessBatchByBatch) {
  // Every worker trains its own seeds of each batch; the gradients are summed every step.
  for (const char* model : {"gcn", "sage"}) {
    flexgraph::RunConfig o = Options(model, 4);
    o.mutable_train()->set_batch_size(32);
    o.mutable_train()->set_fanouts("10,5");
    ExpectMatchesSingleProcess(model, ExchangeMode::kAuto, {2, 3}, o);
  }
  flexgraph::RunConfig links = Options("pinsage", 3, std::string(FG_SHARED_DATA_DIR) + "/lastfm");
  links.mutable_train()->set_batch_size(16384);
  links.mutable_train()->set_fanouts("5,5");
  ExpectMatchesSingleProcess("pinsage", ExchangeMode::kAuto, {2}, links);
}

// LADIES draws each layer over all of a batch's seeds: each batch is drawn whole by one worker (in
// turn), which sends it to the others; each trains its seeds' part of it.
TEST(Distributed, LadiesBatchesMatchSingleProcessBatchByBatch) {
  for (const char* model : {"gcn", "sage"}) {
    flexgraph::RunConfig o = Options(model, 3);
    o.mutable_train()->set_batch_size(32);
    o.mutable_train()->set_sampler("ladies");
    o.mutable_train()->set_layer_size(48);
    ExpectMatchesSingleProcess(model, ExchangeMode::kAuto, {2, 3}, o);
  }
  flexgraph::RunConfig links = Options("pinsage", 2, std::string(FG_SHARED_DATA_DIR) + "/lastfm");
  links.mutable_train()->set_batch_size(16384);
  links.mutable_train()->set_sampler("ladies");
  links.mutable_train()->set_layer_size(256);
  ExpectMatchesSingleProcess("pinsage", ExchangeMode::kAuto, {2}, links);
}

// ShaDow: each worker draws its seeds' subgraphs from the whole graph, keyed by batch and root as
// a single process draws them, and evaluates its roots on their subgraphs.
TEST(Distributed, ShadowBatchesMatchSingleProcessBatchByBatch) {
  for (const char* pool : {"pool=none", "pool=mean"}) {
    flexgraph::RunConfig o = Options("gcn", 3);
    o.mutable_model()->set_layers(3);
    o.mutable_train()->set_batch_size(32);
    o.mutable_train()->set_sampler("shadow");
    o.mutable_train()->set_sampler_opt(pool);
    ExpectMatchesSingleProcess(std::string("gcn shadow ") + pool, ExchangeMode::kAuto, {2, 3}, o);
  }
}

// The automatic LADIES bulk counts every worker's threads (each leads its share of a bulk's
// batches), and every worker takes the same.
TEST(Distributed, AutomaticLadiesBulksCountEveryWorkersThreads) {
  const int threads = NumThreads();
  flexgraph::RunConfig o = Options("gcn", 1);
  o.mutable_train()->set_batch_size(32);
  o.mutable_train()->set_sampler("ladies");
  o.mutable_train()->set_threads(4);
  const auto results = RunWorkers(o, 3, ExchangeMode::kAuto, 2708);
  SetNumThreads(threads);
  for (const TrainResult& r : results) EXPECT_EQ(r.bulk, 12);  // one process: max(8, 4)
}

// Layer 0's remote rows of a constant input are fetched once per run: with GCN's input dropout
// off (and hidden wider than the 16 features, so the input itself is the message), extra epochs
// add only layer 1's traffic, a quarter as wide; with it on, every pass fetches layer 0 again.
TEST(Distributed, AConstantInputIsFetchedOncePerRun) {
  auto traffic = [](const char* input_dropout, int epochs) {
    flexgraph::RunConfig o = Options("gcn", epochs, "sbm:nodes=2000,classes=4,features=16");
    o.mutable_model()->set_hidden(32);
    (*o.mutable_model()->mutable_options())["input_dropout"] = input_dropout;
    const std::vector<TrainResult> r = RunWorkers(o, 2, ExchangeMode::kAuto, 2000);
    return r[0].traffic.bytes_features + r[0].traffic.bytes_partials;
  };
  const int64_t once = traffic("0", 6) - traffic("0", 2);
  const int64_t every = traffic("1", 6) - traffic("1", 2);
  EXPECT_GT(once, 0);  // layer 1 still exchanges every pass
  EXPECT_LT(once, every / 2) << "4 epochs: " << once << " bytes with a constant input, " << every
                             << " with dropout on it";
}

TEST(Distributed, RowFetchAndPartialAggregationAgree) {
  ExpectMatchesSingleProcess("gcn", ExchangeMode::kRowFetch, {3}, Options("gcn", 10));
  ExpectMatchesSingleProcess("sage", ExchangeMode::kPartial, {2}, Options("sage", 10));
  ExpectMatchesSingleProcess("gin", ExchangeMode::kAuto, {2}, Options("gin", 10));
}

TEST(Distributed, PinSageMatchesSingleProcessForP2To4) {
  // Sampled selection: random walks keyed by global root, identical on any partitioning.
  ExpectMatchesSingleProcess("pinsage", ExchangeMode::kAuto, {2, 3, 4}, Options("pinsage", 10));
}

TEST(Distributed, PinSageLinkPredictionMatchesSingleProcess) {
  // Pairs of rows that different workers own: every worker sees all output rows.
  flexgraph::RunConfig o = Options("pinsage", 3, std::string(FG_SHARED_DATA_DIR) + "/lastfm");
  auto single = Trainer::Create(o);
  ASSERT_TRUE(single.ok()) << single.status();
  auto base = (*single)->Run();
  ASSERT_TRUE(base.ok()) << base.status();
  ExpectMatchesSingleProcess("pinsage", ExchangeMode::kAuto, {2, 3}, o);
  for (int parts : {2, 3}) {
    int64_t vertices = 0;
    for (int64_t n : (*single)->dataset().graph.num_nodes) vertices += n;
    for (const TrainResult& r : RunWorkers(o, parts, ExchangeMode::kAuto, vertices)) {
      // Hits@10 counts pairs ranked above a cut-off: rounding in the distributed sums may move
      // a pair scored at a tie across it (one pair of LastFM's test split is 1.6e-4).
      for (const auto& [key, tolerance] : {std::pair<const char*, double>{"valid_auc", 1e-4},
                                           {"test_auc", 1e-4}, {"test_hits_at_10", 5e-4}}) {
        EXPECT_NEAR(r.extra.at(key), base->extra.at(key), tolerance) << key << " P=" << parts;
      }
    }
  }
}

TEST(Distributed, MagnnMatchesSingleProcess) {
  // Hierarchical, custom aggregators (row fetch) and a cross-worker mean in metapath fusion.
  flexgraph::RunConfig o = Options("magnn", 4, std::string(FG_SHARED_DATA_DIR) + "/imdb");
  o.mutable_model()->set_hidden(16);
  o.mutable_model()->set_heads(2);
  (*o.mutable_model()->mutable_options())["max_instances"] = "8";
  ExpectMatchesSingleProcess("magnn", ExchangeMode::kAuto, {2, 3}, o);
}

TEST(Distributed, RgcnMatchesSingleProcess) {
  // Per-relation means of the basis products (row fetch of Message's rows), with dropout.
  flexgraph::RunConfig o = Options("rgcn", 4, std::string(FG_SHARED_DATA_DIR) + "/imdb");
  o.mutable_model()->set_hidden(16);
  ExpectMatchesSingleProcess("rgcn", ExchangeMode::kAuto, {2, 3}, o);
}

}  // namespace
}  // namespace fg::runtime
