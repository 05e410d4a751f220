// LADIES across workers (SampleLayerWiseAcrossWorkers) facing a peer whose messages are malformed:
// worker 0 runs the sampler, worker 1 is scripted; every malformed message ends worker 0's call
// with a DataLoss error naming worker 1 and what was wrong, never a crash or a hang.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>

#include "runtime/collectives.h"
#include "runtime/distributed_sampling.h"
#include "runtime/sampling_messages.h"
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
  // Batch 1's two layers: frontier {6, 8}, one entry each; `col` the first entry's column.
  auto batch_one = [](int32_t col, bool truncate) {
    return [=](const std::string&) {
      return Message([&](std::string* m) {
        for (int l = 0; l < 2; ++l) {
          AppendVector(m, std::vector<int64_t>{6, 8});
          AppendVector(m, std::vector<int32_t>{1, 1});
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

}  // namespace
}  // namespace fg::runtime
