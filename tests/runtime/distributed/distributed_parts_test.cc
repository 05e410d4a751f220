// Parts of distributed runs on their own: the caches of other workers' rows, and peers whose
// messages are malformed, for LADIES across workers (SampleLayerWiseAcrossWorkers) and the HDG
// export: worker 0 runs the real code, worker 1 is scripted; every malformed message ends worker
// 0's call with a DataLoss error naming worker 1 and what was wrong, never a crash or a hang.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>
#include <tuple>

#include "hdg/builder.h"
#include "runtime/comm/collectives.h"
#include "runtime/distributed/distributed_sampling.h"
#include "runtime/distributed/hdg_export.h"
#include "runtime/distributed/sampling_messages.h"
#include "tests/sampling/sampling_graphs.h"

namespace fg::runtime {
namespace {

using ::testing::HasSubstr;
using namespace sampling_messages;  // NOLINT: its tags and steps

constexpr int kEpoch = 1;
constexpr int64_t kBulk = 0;

std::string Message(const std::function<void(std::string*)>& write) {
  std::string m;
  write(&m);
  return m;
}

// The cache's choice: the most counted vertices of the counting epoch (ties: the lower id), as
// many as fit; a chosen row is read once kept, and the statistics follow the epochs.
TEST(RemoteRowCache, KeepsTheMostCountedRowsThatFit) {
  const int64_t width = 3, row_bytes = width * sizeof(float) + sizeof(int64_t);
  RemoteRowCache cache(3 * row_bytes + row_bytes / 2, width);
  ASSERT_EQ(cache.capacity(), 3);
  cache.BeginBulk(0);
  cache.Count({1, 5, 7, 9});
  cache.Count({5, 7, 11});
  cache.Count({5, 9, 11, 12});
  int64_t key = 0;
  const float row[width] = {1.5f, 2.5f, 3.5f};
  cache.Keep(5, 50, row);  // nothing chosen yet
  EXPECT_EQ(cache.Find(5, &key), nullptr);
  cache.Record(4, 0);
  EXPECT_EQ(cache.rows_fetched(), 4);
  cache.BeginBulk(1);  // chooses 5 (3 counts), then 7, 9, 11 (2 each): 7 and 9
  EXPECT_EQ(cache.rows_fetched(), 0) << "a new epoch's statistics";
  for (int64_t v : {5, 7, 9, 11, 1}) {
    cache.Keep(v, 10 * v, row);
    EXPECT_EQ(cache.Find(v, &key) != nullptr, v == 5 || v == 7 || v == 9) << "vertex " << v;
  }
  const float* kept = cache.Find(9, &key);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(key, 90);
  EXPECT_EQ(std::vector<float>(kept, kept + width), std::vector<float>(row, row + width));
  cache.Keep(9, 99, row);  // kept once
  cache.Find(9, &key);
  EXPECT_EQ(key, 90);
  EXPECT_EQ(cache.Find(-1, &key), nullptr);
  // Counting admits the first 8 x capacity distinct vertices: 15, the ninth, is never counted.
  RemoteRowCache one(row_bytes, width);
  one.BeginBulk(0);
  one.Count({0, 1, 2, 3, 4, 5, 6, 7, 15});
  one.Count({15});
  one.Count({3, 15});
  one.BeginBulk(1);
  one.Keep(15, 150, row);
  one.Keep(3, 30, row);
  EXPECT_EQ(one.Find(15, &key), nullptr);
  EXPECT_NE(one.Find(3, &key), nullptr);
  RemoteRowCache none(0, width);
  none.BeginBulk(0);
  none.Count({1});
  none.BeginBulk(1);
  none.Keep(1, 1, row);
  EXPECT_EQ(none.Find(1, &key), nullptr);
}

// The neighbourhood cache chooses by counts as the row cache does, each row taking its size of the
// budget: a row that no longer fits is passed over for a smaller, less counted one.
TEST(RemoteNeighbourhoodCache, KeepsTheMostCountedRowsThatFitTheirSizes) {
  // A row of n unweighted entries takes 64 + 4n bytes: 4 entries 80, 10 entries 104.
  RemoteNeighbourhoodCache cache(80 + 104 + 90);
  const std::vector<int32_t> cols = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  const std::vector<float> weights(10, 0.5f);
  auto row = [&](int64_t n, bool weighted = false) {
    return RemoteNeighbourhoodCache::Row{cols.data(), weighted ? weights.data() : nullptr, n, 1};
  };
  cache.BeginBulk(0);
  for (int t = 0; t < 3; ++t) cache.Fetched(0, 7, row(10));  // most counted: 104 bytes
  for (int t = 0; t < 2; ++t) cache.Fetched(0, 8, row(10));  // 104 more: does not fit
  for (int t = 0; t < 2; ++t) cache.Fetched(1, 7, row(4));   // the same vertex, another layer: 80
  cache.Fetched(0, 9, row(4));                               // fits too, counted once
  cache.Record(50, 0);
  RemoteNeighbourhoodCache::Row got;
  EXPECT_FALSE(cache.Find(0, 7, &got)) << "nothing chosen while counting";
  EXPECT_EQ(cache.entries_fetched(), 50);
  cache.BeginBulk(1);
  EXPECT_EQ(cache.entries_fetched(), 0) << "a new epoch's statistics";
  for (const auto& [layer, v, n] : {std::tuple<int, int64_t, int64_t>{0, 7, 10}, {0, 8, 10}, {1, 7, 4}, {0, 9, 4}}) {
    cache.Fetched(layer, v, row(n, true));
    const bool chosen = !(layer == 0 && v == 8);
    ASSERT_EQ(cache.Find(layer, v, &got), chosen) << "layer " << layer << " vertex " << v;
    if (!chosen) continue;
    EXPECT_EQ(std::vector<int32_t>(got.cols, got.cols + got.size), std::vector<int32_t>(cols.begin(), cols.begin() + n));
    ASSERT_NE(got.weights, nullptr);
    EXPECT_EQ(got.weights[n - 1], 0.5f);
    EXPECT_EQ(got.own, 1);
  }
  EXPECT_FALSE(cache.Find(1, 9, &got));
  RemoteNeighbourhoodCache none(0);
  none.BeginBulk(0);
  none.Fetched(0, 1, row(2));
  none.BeginBulk(1);
  none.Fetched(0, 1, row(2));
  EXPECT_FALSE(none.Find(0, 1, &got));
}

// Two workers' LADIES batches of `epochs` epochs (one bulk of three batches each) over a graph whose
// rows hold their roots among the other entries, owned by v % 2, each leader keeping other
// workers' rows in a cache of `cache_bytes` (0: none); per worker, the last epoch's batches.
std::vector<std::vector<sampling::MiniBatch>> LadiesOverParts(int64_t cache_bytes, int epochs) {
  sampling::Lists nbrs = sampling::RandomLists(60, 8, 11);
  for (int32_t v = 0; v < 60; ++v) {  // its own entry in the middle of its row
    nbrs[v].erase(std::remove_if(nbrs[v].begin(), nbrs[v].end(), [v](const auto& e) { return e.first == v; }),
                  nbrs[v].end());
    nbrs[v].insert(nbrs[v].begin() + nbrs[v].size() / 2, {v, 1.5f});
  }
  const sampling::NeighbourhoodMatrix a = sampling::MatrixOf(nbrs, true);
  std::vector<int32_t> owner(60);
  for (int v = 0; v < 60; ++v) owner[v] = v % 2;
  const Ownership owners(owner);
  sampling::SamplerOptions o;
  o.kind = sampling::SamplerKind::kLayerWise;
  o.layer_size = 6;
  o.seed = 5;
  auto group = MakeInProcessGroup(2);
  std::vector<std::vector<sampling::MiniBatch>> last(2);
  std::vector<std::thread> workers;
  for (int r = 0; r < 2; ++r) {
    workers.emplace_back([&, r] {
      RemoteNeighbourhoodCache cache(cache_bytes);
      for (int epoch = 0; epoch < epochs; ++epoch) {
        std::vector<Tensor> seeds;
        for (int64_t k = 0; k < 3; ++k) {
          std::vector<int64_t> mine;
          for (int64_t v = 10 * k + r; v < 10 * k + 10; v += 2) mine.push_back(v);
          std::sort(mine.begin(), mine.end());
          seeds.push_back(Tensor::FromVector(mine));
        }
        auto got = SampleLayerWiseAcrossWorkers(*group[r], &owners, {&a, &a}, o, epoch, epoch, 0, seeds, seeds,
                                                cache_bytes > 0 ? &cache : nullptr);
        ASSERT_TRUE(got.ok()) << got.status();
        last[r] = std::move(*got);
      }
      if (cache_bytes > 0) {
        EXPECT_GT(cache.entries_cached(), 0) << "worker " << r;
      }
    });
  }
  for (auto& t : workers) t.join();
  return last;
}

// Rows read from the cache draw the batches that fetched rows draw: their columns, weights and own
// entries as their owner holds them.
TEST(RemoteNeighbourhoodCache, KeptRowsDrawTheBatchesFetchedRowsDraw) {
  const auto fetched = LadiesOverParts(0, 3);
  const auto kept = LadiesOverParts(int64_t{1} << 20, 3);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE(::testing::Message() << "worker " << r);
    sampling::ExpectSameBatches(kept[r], fetched[r]);
  }
}

// Worker 0 samples two batches (batch 0 led by worker 0, batch 1 by worker 1) over a 40-vertex
// graph, owned by v % 2 where `partitioned`, while worker 1 sends `script`'s messages: per exchange
// (tag), its message to worker 0, made from what worker 0 sent it. Returns worker 0's status.
absl::Status RunAgainst(bool partitioned,
                        const std::vector<std::pair<uint64_t, std::function<std::string(const std::string&)>>>& script) {
  const sampling::NeighbourhoodMatrix a = sampling::MatrixOf(sampling::RandomLists(40, 6, 3), true);
  std::vector<int32_t> owner(40);
  for (int v = 0; v < 40; ++v) owner[v] = v % 2;
  const Ownership owners(owner);
  auto group = MakeInProcessGroup(2);
  for (auto& c : group) c->set_timeout(std::chrono::milliseconds(20000));
  std::thread peer([&] {
    for (const auto& [tag, reply] : script) {
      // What worker 0 sent is known only once received: receive first, then send.
      absl::StatusOr<std::string> got = group[1]->Recv(0, tag);
      if (!got.ok()) return;
      group[1]->Send(0, tag, reply(*got));
    }
  });
  sampling::SamplerOptions o;
  o.kind = sampling::SamplerKind::kLayerWise;
  o.layer_size = 8;
  const std::vector<Tensor> seeds = {Tensor::FromVector(std::vector<int64_t>{0, 2, 4}),
                                     Tensor::FromVector(std::vector<int64_t>{6, 8})};
  auto got = SampleLayerWiseAcrossWorkers(*group[0], partitioned ? &owners : nullptr, {&a, &a}, o, kEpoch, kBulk,
                                          0, seeds, seeds);
  group[0]->Abort(absl::CancelledError("done"));
  peer.join();
  return got.status();
}

// Worker 1's seeds of batch 0: vertex 1.
std::string OneSeed(const std::string&) {
  return Message([](std::string* m) {
    AppendVector(m, std::vector<int64_t>{1});
    AppendVector(m, std::vector<int64_t>{1});
    AppendVector(m, std::vector<int64_t>{1});
  });
}

TEST(LayerWiseSamplingMessages, MalformedSeedsAreRefusedNamingTheWorker) {
  const uint64_t seeds = Tag(kEpoch, 0, TrafficKind::kControl, kStepLeaderSeeds, kBulk);
  const absl::Status more_counted = RunAgainst(false, {{seeds, [](const std::string&) {
                                                          return Message([](std::string* m) {
                                                            AppendVector(m, std::vector<int64_t>{5});
                                                            AppendVector(m, std::vector<int64_t>{1});
                                                            AppendVector(m, std::vector<int64_t>{1});
                                                          });
                                                        }}});
  EXPECT_EQ(more_counted.code(), absl::StatusCode::kDataLoss) << more_counted;
  EXPECT_THAT(more_counted.message(), HasSubstr("batch seeds: worker 1 sent 1 seeds and 1 keys in 1 batches"));
  const absl::Status truncated = RunAgainst(false, {{seeds, [](const std::string&) { return std::string("xy"); }}});
  EXPECT_EQ(truncated.code(), absl::StatusCode::kDataLoss) << truncated;
  EXPECT_THAT(truncated.message(), HasSubstr("batch seeds message from worker 1 is truncated"));
}

TEST(LayerWiseSamplingMessages, MalformedSampledBatchesAreRefusedNamingTheWorker) {
  const uint64_t seeds = Tag(kEpoch, 0, TrafficKind::kControl, kStepLeaderSeeds, kBulk);
  const uint64_t batches = Tag(kEpoch, 0, TrafficKind::kControl, kStepLeaderRows, kBulk);
  // Batch 1's two layers: frontier {6, 8}, two entries; `col` the first entry's column, `first` the
  // first row's length (the second row has the others).
  auto batch_one = [](int32_t col, bool truncate, int32_t first = 1) {
    return [=](const std::string&) {
      return Message([&](std::string* m) {
        for (int l = 0; l < 2; ++l) {
          AppendVector(m, std::vector<int64_t>{6, 8});
          AppendVector(m, std::vector<int32_t>{first, 2 - std::max(first, 0)});
          if (truncate) return;
          AppendVector(m, std::vector<int32_t>{col, 3});
          AppendVector(m, std::vector<float>{1.0f, 1.0f});
        }
      });
    };
  };
  const absl::Status outside = RunAgainst(false, {{seeds, OneSeed}, {batches, batch_one(999, false)}});
  EXPECT_EQ(outside.code(), absl::StatusCode::kDataLoss) << outside;
  EXPECT_THAT(outside.message(), HasSubstr("sampled batches: worker 1 sent batch 1 layer 0"));
  EXPECT_THAT(outside.message(), HasSubstr("not all of them in the graph"));
  const absl::Status negative = RunAgainst(false, {{seeds, OneSeed}, {batches, batch_one(5, false, -1)}});
  EXPECT_EQ(negative.code(), absl::StatusCode::kDataLoss) << negative;
  EXPECT_THAT(std::string(negative.message()), HasSubstr("sampled batches: worker 1 sent batch 1 layer 0 with 2 rows"));
  const absl::Status truncated = RunAgainst(false, {{seeds, OneSeed}, {batches, batch_one(5, true)}});
  EXPECT_EQ(truncated.code(), absl::StatusCode::kDataLoss) << truncated;
  EXPECT_THAT(truncated.message(), HasSubstr("sampled batches message from worker 1 is truncated"));
}

TEST(LayerWiseSamplingMessages, MalformedRowsFromAnOwnerAreRefusedNamingTheWorker) {
  const uint64_t seeds = Tag(kEpoch, 0, TrafficKind::kControl, kStepLeaderSeeds, kBulk);
  const uint64_t request = Tag(kEpoch, 1, TrafficKind::kControl, kStepRowRequest, kBulk);
  const uint64_t reply = Tag(kEpoch, 1, TrafficKind::kControl, kStepRowReply, kBulk);
  // Worker 1 asks for no row and keeps what worker 0 asked of it; then replies one row of two
  // entries per vertex asked, its own entry at `own`.
  auto asked_message = std::make_shared<std::string>();
  auto ask_nothing = [=](const std::string& request_from_0) {
    *asked_message = request_from_0;
    return Message([](std::string* m) { AppendVector(m, std::vector<int64_t>{}); });
  };
  auto rows = [=](int32_t own) {
    return [=](const std::string&) {
      std::vector<int64_t> asked;
      size_t pos = 0;
      EXPECT_TRUE(TakeVector(*asked_message, &pos, "request", 0, &asked).ok());
      return Message([&](std::string* m) {
        const size_t n = asked.size();
        AppendVector(m, std::vector<int32_t>(n, 2));
        AppendVector(m, std::vector<int32_t>(n, own));
        AppendVector(m, std::vector<int32_t>(2 * n, 3));
        AppendVector(m, std::vector<float>(2 * n, 1.0f));
      });
    };
  };
  const absl::Status bad_own = RunAgainst(true, {{seeds, OneSeed}, {request, ask_nothing}, {reply, rows(2)}});
  EXPECT_EQ(bad_own.code(), absl::StatusCode::kDataLoss) << bad_own;
  EXPECT_THAT(std::string(bad_own.message()), HasSubstr("sampling layer 1: worker 1 replied 1 rows with 2 entries"));
  // An owner asked for a row it does not hold.
  const absl::Status not_owned = RunAgainst(true, {{seeds, OneSeed}, {request, [](const std::string&) {
                                                     return Message([](std::string* m) {
                                                       AppendVector(m, std::vector<int64_t>{99});
                                                     });
                                                   }}});
  EXPECT_EQ(not_owned.code(), absl::StatusCode::kDataLoss) << not_owned;
  EXPECT_THAT(not_owned.message(), HasSubstr("worker 1 asked for vertex 99, which this worker does not own"));
}

// The HDG export gathers every worker's layers at worker 0: malformed ones are refused, naming the
// worker, before anything is written.
TEST(HdgExportMessages, MalformedLayersAreRefusedNamingTheWorker) {
  auto hdg = hdg::HdgBuilder(hdg::SchemaTree::Flat("neighbor", true), 10)
                 .Build(std::vector<int32_t>{0, 1}, [](int32_t v, hdg::NeighborWriter& out) {
                   out.Add(v + 2, 1.0f);
                 });
  ASSERT_TRUE(hdg.ok()) << hdg.status();
  const Tensor ids = Tensor::FromVector(std::vector<int64_t>{0, 1, 2, 3});
  // Worker 1's message: its table (vertices 5 and 6), then `layers` layers of one flat level.
  auto message = [](int64_t layers, std::vector<int64_t> indptr, std::vector<int32_t> indices) {
    return Message([&](std::string* m) {
      AppendVector(m, std::vector<int64_t>{5, 6});
      AppendVector(m, std::vector<int64_t>{50, 60});
      AppendVector(m, std::vector<int64_t>{layers});
      for (int64_t l = 0; l < std::min<int64_t>(layers, 1); ++l) {
        AppendVector(m, std::vector<int64_t>{5});
        AppendVector(m, std::vector<uint8_t>{0});
        AppendVector(m, indptr);
        AppendVector(m, indices);
        AppendVector(m, std::vector<float>{});
      }
    });
  };
  const std::string dir = ::testing::TempDir() + "/fg_export_messages";
  auto run = [&](const std::string& from_1) {
    auto group = MakeInProcessGroup(2);
    for (auto& c : group) c->set_timeout(std::chrono::milliseconds(20000));
    const uint64_t tag = MakeTag(0, 0, 0, TrafficKind::kControl, 11);
    std::thread peer([&] {
      if (group[1]->Recv(0, tag).ok()) group[1]->Send(0, tag, from_1);
    });
    const hdg::Hdg* layer = &*hdg;
    const absl::Status s = ExportHdgs(group[0].get(), {layer}, ids, ids, dir);
    group[0]->Abort(absl::CancelledError("done"));
    peer.join();
    return s;
  };
  EXPECT_TRUE(run(message(1, {0, 1}, {6})).ok()) << "a well-formed layer";
  for (const auto& [from_1, expected] : std::vector<std::pair<std::string, std::string>>{
           {message(int64_t{1} << 40, {0, 1}, {6}), "worker 1 sent 1099511627776 layers"},
           {message(1, {0, 2}, {6}), "worker 1 sent layer 0 level 1 malformed"},
           {message(1, {1, 1}, {6}), "worker 1 sent layer 0 level 1 malformed"},
           {message(1, {0, 1}, {9}), "worker 1 sent vertex 9 in layer 0, which is in no worker's table"},
           {message(2, {0, 1}, {6}), "export_hdg message from worker 1 is truncated"}}) {
    const absl::Status s = run(from_1);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(expected));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fg::runtime
