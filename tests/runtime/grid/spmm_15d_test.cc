// The 1.5D grid product against one process: P in-process workers with replication c (P = 4 and 8
// with c = 2, P = 9 with c = 3, and c = 1) multiply a random non-symmetric weighted matrix by a
// dense block, forward (A H) and backward (A^T G, also through autograd), sparsity-oblivious and
// aware; every replica's block equals one process's product within 1e-5 relative, and the bytes
// the layer and replica communicators count equal runtime/plan/volumes.h's OnePointFiveDVolume
// from the matrix's exact block counts.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "flexgraph/autograd/var.h"
#include "flexgraph/ops/ops.h"
#include "runtime/comm/process_grid.h"
#include "runtime/grid/spmm_15d.h"
#include "runtime/plan/volumes.h"
#include "tests/runtime/grid/grid_test_util.h"

namespace fg::grid {
namespace {

using runtime::TrafficKind;
using namespace fg::grid::testing;  // NOLINT: the test helpers

void ExpectReplicatedMatchesOneProcess(int parts, int c, bool aware) {
  SCOPED_TRACE(::testing::Message() << "P=" << parts << " c=" << c << (aware ? " aware" : " oblivious"));
  constexpr int64_t kN = 101, kWidth = 7;
  const Csr a = RandomMatrix(kN, 4, 21);
  const Tensor h = RandomDense(kN, kWidth, 22), g = RandomDense(kN, kWidth, 23);
  const Tensor z_want = ops::Spmm(a, h, ops::SpmmReduce::kSum);
  const Tensor gh_want = ops::Spmm(a.Transpose(), g, ops::SpmmReduce::kSum);
  const int teams = parts / c;
  const VertexBlocks blocks = VertexBlocks::Make(kN, teams, 8);

  auto world = runtime::MakeInProcessGroup(parts);
  std::vector<int64_t> forward(parts), backward(parts);
  std::vector<std::thread> threads;
  for (int r = 0; r < parts; ++r) {
    threads.emplace_back([&, r] {
      runtime::Communicator& comm = *world[r];
      comm.set_timeout(std::chrono::seconds(30));
      auto grid = runtime::ProcessGrid::Make15D(comm, c);
      ASSERT_TRUE(grid.ok()) << grid.status();
      auto spmm = Spmm15D::Make(*grid, a, blocks, aware);
      ASSERT_TRUE(spmm.ok()) << spmm.status();
      const int b = grid->i();
      auto sent = [&](TrafficKind k) { return grid->layer().bytes_sent(k) + grid->replicas().bytes_sent(k); };
      auto z = (*spmm)->Forward(BlockOf(h, blocks, b, 1, 0));
      ASSERT_TRUE(z.ok()) << z.status();
      EXPECT_LT(RelativeError(*z, BlockOf(z_want, blocks, b, 1, 0)), 1e-5) << "worker " << r;
      forward[r] = sent(TrafficKind::kFeatures) + sent(TrafficKind::kAllReduce);
      auto gh = (*spmm)->Backward(BlockOf(g, blocks, b, 1, 0));
      ASSERT_TRUE(gh.ok()) << gh.status();
      EXPECT_LT(RelativeError(*gh, BlockOf(gh_want, blocks, b, 1, 0)), 1e-5) << "worker " << r;
      backward[r] = sent(TrafficKind::kGradients) + sent(TrafficKind::kAllReduce) - (forward[r] - sent(TrafficKind::kFeatures));
      ag::Var x = ag::Var::Parameter(BlockOf(h, blocks, b, 1, 0));
      ag::Var y = (*spmm)->Apply(x);
      y.Backward(BlockOf(g, blocks, b, 1, 0));
      ASSERT_TRUE((*spmm)->status().ok()) << (*spmm)->status();
      EXPECT_LT(RelativeError(x.grad(), BlockOf(gh_want, blocks, b, 1, 0)), 1e-5) << "worker " << r;
    });
  }
  for (auto& t : threads) t.join();

  std::vector<int32_t> block_of(kN);
  for (int64_t v = 0; v < kN; ++v) block_of[v] = blocks.BlockOf(blocks.position[v]);
  plan::StrategySpec spec;
  spec.scheme = plan::Scheme::kOnePointFiveD;
  spec.aware = aware;
  spec.c = c;
  const plan::Volume fwd = plan::OnePointFiveDVolume(spec, plan::CountBlocks(a, block_of, teams), parts, kWidth);
  const plan::Volume bwd =
      plan::OnePointFiveDVolume(spec, plan::CountBlocks(a.Transpose(), block_of, teams), parts, kWidth);
  int64_t f = 0, bw = 0;
  for (int r = 0; r < parts; ++r) f += forward[r], bw += backward[r];
  EXPECT_EQ(static_cast<int64_t>(std::llround(fwd.bytes_sent * parts)), f);
  EXPECT_EQ(static_cast<int64_t>(std::llround(bwd.bytes_sent * parts)), bw);
}

TEST(Spmm15D, ReplicatedBlocksMatchOneProcessAndTheModel) {
  for (bool aware : {false, true}) {
    ExpectReplicatedMatchesOneProcess(4, 2, aware);
    ExpectReplicatedMatchesOneProcess(8, 2, aware);
    ExpectReplicatedMatchesOneProcess(9, 3, aware);
    ExpectReplicatedMatchesOneProcess(3, 1, aware);
  }
}

TEST(Spmm15D, AReplicationThatDoesNotDivideTheBlocksIsAClearError) {
  auto world = runtime::MakeInProcessGroup(6);  // c = 2: 3 blocks, which 2 does not divide
  std::vector<std::thread> threads;
  const Csr a = RandomMatrix(20, 2, 1);
  for (int r = 0; r < 6; ++r) {
    threads.emplace_back([&, r] {
      auto grid = runtime::ProcessGrid::Make15D(*world[r], 2);
      ASSERT_TRUE(grid.ok()) << grid.status();
      auto s = Spmm15D::Make(*grid, a, VertexBlocks::Make(20, 3, 1), false);
      EXPECT_FALSE(s.ok());
      EXPECT_NE(s.status().message().find("c=2 must divide the 3 blocks"), std::string::npos) << s.status();
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace fg::grid
