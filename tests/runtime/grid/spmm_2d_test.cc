// The 2D grid product against one process: P in-process workers on pr x pc grids (2 x 2, 3 x 3 and
// the non-square 2 x 3 and 3 x 2) multiply a random non-symmetric weighted matrix (n not a multiple
// of the grid, widths not a multiple of pc) by a dense block, forward (A H) and backward (A^T G, also
// through autograd), sparsity-oblivious and aware; every block equals one process's product within
// 1e-5 relative, and the bytes the grid's communicators count equal runtime/plan/volumes.h's
// TwoDVolume from the matrix's exact block counts. Also the wire format of a sparse block.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "flexgraph/autograd/var.h"
#include "flexgraph/ops/ops.h"
#include "runtime/comm/process_grid.h"
#include "runtime/grid/spmm_2d.h"
#include "runtime/plan/volumes.h"
#include "tests/runtime/grid/grid_test_util.h"

namespace fg::grid {
namespace {

using runtime::TrafficKind;
using namespace fg::grid::testing;  // NOLINT: the test helpers

struct Counted {
  int64_t forward = 0, backward = 0;  // bytes sent on the grid's row and column communicators
};

void ExpectGridMatchesOneProcess(int pr, int pc, bool aware) {
  SCOPED_TRACE(::testing::Message() << pr << " x " << pc << (aware ? " aware" : " oblivious"));
  constexpr int64_t kN = 101, kWidth = 7;
  const Csr a = RandomMatrix(kN, 4, 11);
  const Tensor h = RandomDense(kN, kWidth, 12), g = RandomDense(kN, kWidth, 13);
  const Tensor z_want = ops::Spmm(a, h, ops::SpmmReduce::kSum);
  const Tensor gh_want = ops::Spmm(a.Transpose(), g, ops::SpmmReduce::kSum);
  const VertexBlocks blocks = VertexBlocks::Make(kN, pr, 5);

  const int parts = pr * pc;
  auto world = runtime::MakeInProcessGroup(parts);
  std::vector<Counted> counted(parts);
  std::vector<std::thread> threads;
  for (int r = 0; r < parts; ++r) {
    threads.emplace_back([&, r] {
      runtime::Communicator& comm = *world[r];
      comm.set_timeout(std::chrono::seconds(30));
      auto grid = runtime::ProcessGrid::Make2D(comm, pr, pc);
      ASSERT_TRUE(grid.ok()) << grid.status();
      auto spmm = Spmm2D::Make(*grid, a, blocks, aware);
      ASSERT_TRUE(spmm.ok()) << spmm.status();
      const int i = grid->i(), j = grid->j();
      const Tensor mine = BlockOf(h, blocks, i, pc, j);
      auto z = (*spmm)->Forward(mine);
      ASSERT_TRUE(z.ok()) << z.status();
      EXPECT_LT(RelativeError(*z, BlockOf(z_want, blocks, i, pc, j)), 1e-5) << "worker " << r;
      auto gh = (*spmm)->Backward(BlockOf(g, blocks, i, pc, j));
      ASSERT_TRUE(gh.ok()) << gh.status();
      EXPECT_LT(RelativeError(*gh, BlockOf(gh_want, blocks, i, pc, j)), 1e-5) << "worker " << r;
      auto sent = [&](TrafficKind k) { return grid->row().bytes_sent(k) + grid->column().bytes_sent(k); };
      counted[r] = {sent(TrafficKind::kFeatures), sent(TrafficKind::kGradients)};
      // The gradient through autograd: d sum(G o AH) / dH = A^T G.
      ag::Var x = ag::Var::Parameter(mine);
      ag::Var y = (*spmm)->Apply(x);
      y.Backward(BlockOf(g, blocks, i, pc, j));
      ASSERT_TRUE((*spmm)->status().ok()) << (*spmm)->status();
      EXPECT_LT(RelativeError(x.grad(), BlockOf(gh_want, blocks, i, pc, j)), 1e-5) << "worker " << r;
    });
  }
  for (auto& t : threads) t.join();

  // Bytes against the model, from the exact block counts (A for forward, A^T for backward).
  std::vector<int32_t> block_of(kN);
  for (int64_t v = 0; v < kN; ++v) block_of[v] = blocks.BlockOf(blocks.position[v]);
  plan::StrategySpec spec;
  spec.scheme = plan::Scheme::kTwoD;
  spec.aware = aware;
  spec.grid[0] = pr, spec.grid[1] = pc;
  const plan::Volume fwd = plan::TwoDVolume(spec, plan::CountBlocks(a, block_of, pr), parts, kWidth, 0);
  const plan::Volume bwd = plan::TwoDVolume(spec, plan::CountBlocks(a.Transpose(), block_of, pr), parts, kWidth, 0);
  int64_t forward = 0, backward = 0;
  for (const Counted& c : counted) forward += c.forward, backward += c.backward;
  EXPECT_NEAR(static_cast<double>(forward), fwd.bytes_sent * parts, 1e-6 * forward);
  EXPECT_NEAR(static_cast<double>(backward), bwd.bytes_sent * parts, 1e-6 * backward);
  EXPECT_EQ(static_cast<int64_t>(std::llround(fwd.bytes_sent * parts)), forward);
  EXPECT_EQ(static_cast<int64_t>(std::llround(bwd.bytes_sent * parts)), backward);
}

TEST(Spmm2D, SquareGridsMatchOneProcessAndTheModel) {
  for (bool aware : {false, true}) {
    ExpectGridMatchesOneProcess(2, 2, aware);
    ExpectGridMatchesOneProcess(3, 3, aware);
  }
}

TEST(Spmm2D, NonSquareGridsMatchOneProcessAndTheModel) {
  for (bool aware : {false, true}) {
    ExpectGridMatchesOneProcess(2, 3, aware);
    ExpectGridMatchesOneProcess(3, 2, aware);
  }
}

TEST(Spmm2D, AwareSendsFewerBytesThanOblivious) {
  const Csr a = RandomMatrix(400, 2, 3);
  const VertexBlocks blocks = VertexBlocks::Make(400, 3, 9);
  std::vector<int32_t> block_of(400);
  for (int64_t v = 0; v < 400; ++v) block_of[v] = blocks.BlockOf(blocks.position[v]);
  plan::StrategySpec spec;
  spec.scheme = plan::Scheme::kTwoD;
  spec.grid[0] = spec.grid[1] = 3;
  const plan::BlockCounts counts = plan::CountBlocks(a, block_of, 3);
  spec.aware = true;
  const double aware = plan::TwoDVolume(spec, counts, 9, 16, 0).bytes_sent;
  spec.aware = false;
  EXPECT_LT(aware, plan::TwoDVolume(spec, counts, 9, 16, 0).bytes_sent);
}

TEST(Blocks, WireFormatRoundTripsAndRejectsDamage) {
  const Csr a = RandomMatrix(30, 3, 4);
  const std::string bytes = EncodeBlock(a);
  EXPECT_EQ(bytes.size(), static_cast<size_t>(4 * 30 + 8 * a.nnz()));
  auto back = DecodeBlock(bytes, 30, 30, 2);
  ASSERT_TRUE(back.ok()) << back.status();
  const Tensor x = RandomDense(30, 3, 1);
  EXPECT_LT(RelativeError(ops::Spmm(*back, x, ops::SpmmReduce::kSum), ops::Spmm(a, x, ops::SpmmReduce::kSum)), 1e-7);
  auto cut = DecodeBlock(bytes.substr(0, bytes.size() - 8), 30, 30, 2);
  EXPECT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("grid worker 2"), std::string::npos) << cut.status();
  EXPECT_FALSE(DecodeBlock(bytes, 30, 5, 2).ok());  // columns outside the block
}

TEST(Blocks, PermutationIsABijectionAndBlocksCoverIt) {
  const VertexBlocks b = VertexBlocks::Make(103, 4, 77);
  std::vector<bool> seen(103, false);
  for (int64_t p = 0; p < 103; ++p) {
    EXPECT_EQ(b.position[b.order[p]], p);
    seen[b.order[p]] = true;
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 103);
  EXPECT_NE(b.order, VertexBlocks::Make(103, 4, 0).order);  // seed 0 is the identity; 77 is not
  int64_t total = 0;
  for (int k = 0; k < 4; ++k) {
    total += b.Size(k);
    for (int64_t p = b.Lo(k); p < b.Lo(k + 1); ++p) EXPECT_EQ(b.BlockOf(p), k);
  }
  EXPECT_EQ(total, 103);
}

}  // namespace
}  // namespace fg::grid
