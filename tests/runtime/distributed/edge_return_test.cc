// Edge states aggregated into both ends across workers (runtime/distributed/edge_return.h), on a
// hand-made split of four vertices over two in-process workers: each owned vertex reduces the
// states of the edges it is the source of, wherever they were computed; gradients return to the
// worker that computed each state; a peer's damaged list is a DataLoss error naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "flexgraph/autograd/functions.h"
#include "hdg/hdg.h"
#include "runtime/distributed/edge_return.h"

namespace fg::runtime {
namespace {

using ::testing::HasSubstr;

constexpr int kLayer = 2, kEpoch = 5;

// A flat HDG over [owned | ghosts]: root i's children are table rows children[i].
hdg::Hdg Flat(const std::vector<std::vector<int32_t>>& children, int64_t table) {
  std::vector<int64_t> off = {0};
  std::vector<int32_t> idx;
  for (const auto& c : children) {
    idx.insert(idx.end(), c.begin(), c.end());
    off.push_back(static_cast<int64_t>(idx.size()));
  }
  const int64_t n = static_cast<int64_t>(children.size());
  hdg::HdgLevel level{.matrix = std::make_shared<SparseMatrix>(Csr::FromVectors(n, table, off, idx, {})),
                      .type_offsets = {0, n}, .block_arity = {-1}};
  std::vector<int32_t> roots(n);
  for (int32_t r = 0; r < n; ++r) roots[r] = r;
  return hdg::Hdg(hdg::SchemaTree::Flat("neighbor"), table, Tensor::FromVector(roots), {level});
}

// Worker 0 owns vertices 0, 1 and computes edges 2 -> 0, 1 -> 0, 3 -> 1 (states a, b, c); worker 1
// owns 2, 3 and computes 0 -> 2, 2 -> 3 (d, e). At the sources: 0 gets d, 1 gets b, 2 gets a and
// e, 3 gets c.
struct Worker {
  hdg::Hdg hdg;
  Tensor owned, ghosts;
  std::vector<float> states;  // one row of width 2 per entry
};

Worker MakeWorker(int rank) {
  if (rank == 0) {
    return {Flat({{2, 1}, {3}}, 4), Tensor::FromVector(std::vector<int64_t>{0, 1}),
            Tensor::FromVector(std::vector<int64_t>{2, 3}), {1, 10, 2, 20, 3, 30}};
  }
  return {Flat({{2}, {0}}, 3), Tensor::FromVector(std::vector<int64_t>{2, 3}),
          Tensor::FromVector(std::vector<int64_t>{0}), {4, 40, 5, 50}};
}

TEST(EdgeReturn, EachSourceReducesItsEdgesStatesWhereverTheyWereComputed) {
  auto comms = MakeInProcessGroup(2);
  const Ownership owners(std::vector<int32_t>{0, 0, 1, 1});
  std::vector<Tensor> out(2), grads(2);
  std::vector<absl::Status> status(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      Worker w = MakeWorker(rank);
      auto r = BuildEdgeReturn(*comms[rank], w.hdg, 2, w.owned, w.ghosts, owners, kLayer, kEpoch);
      if (!r.ok()) {
        status[rank] = r.status();
        return;
      }
      ExchangeContext ctx;
      ctx.comm = comms[rank].get();
      ctx.epoch = kEpoch;
      const int64_t n = static_cast<int64_t>(w.states.size() / 2);
      ag::Var states(Tensor::FromVector(w.states).Reshape({n, 2}), true);
      const ag::Var agg = AggregateAtSources(ctx, *r, states, {ag::EdgeReduce::kSum, ag::EdgeReduce::kMax});
      out[rank] = agg.value();
      // Row i of worker r weighs 10 r + i + 1 in the loss: a state's gradient names its source.
      const ag::Var weights(Tensor::FromVector(std::vector<float>{10.0f * rank + 1, 10.0f * rank + 2}));
      ag::Sum(ag::ScaleRows(agg, weights)).Backward();
      grads[rank] = states.grad();
      status[rank] = *ctx.error;
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(status[0].ok()) << status[0];
  ASSERT_TRUE(status[1].ok()) << status[1];
  // [sum | max] per owned vertex.
  EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{4, 40, 4, 40, 2, 20, 2, 20}));
  EXPECT_EQ(out[1].ToVector<float>(), (std::vector<float>{1 + 5, 10 + 50, 5, 50, 3, 30, 3, 30}));
  // A state's gradient is its source's weight, once for the sum and once more where it is the
  // maximum: a, b, c at sources 2 (not its maximum), 1, 3; d, e at 0, 2 (e the maximum).
  EXPECT_EQ(grads[0].ToVector<float>(), (std::vector<float>{11, 11, 2 + 2, 2 + 2, 12 + 12, 12 + 12}));
  EXPECT_EQ(grads[1].ToVector<float>(), (std::vector<float>{1 + 1, 1 + 1, 11 + 11, 11 + 11}));
}

TEST(EdgeReturn, APeersDamagedListIsNamed) {
  const Ownership owners(std::vector<int32_t>{0, 0, 1, 1});
  auto ids = [](std::vector<int64_t> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8); };
  // A torn id; vertex 3 and vertex -7, which worker 0 does not own.
  for (const std::string& damaged : {std::string("abc"), ids({0, 3}), ids({1, -7})}) {
    auto comms = MakeInProcessGroup(2);
    absl::Status got;
    std::thread peer([&] {  // worker 1 is scripted
      (void)comms[1]->AllToAllV({damaged, ""}, MakeTag(kEpoch, kLayer, 8, TrafficKind::kControl, 1));
    });
    Worker w = MakeWorker(0);
    got = BuildEdgeReturn(*comms[0], w.hdg, 2, w.owned, w.ghosts, owners, kLayer, kEpoch).status();
    peer.join();
    EXPECT_EQ(got.code(), absl::StatusCode::kDataLoss) << got;
    EXPECT_THAT(std::string(got.message()), HasSubstr("worker 1")) << got;
  }
}

}  // namespace
}  // namespace fg::runtime
