// The 2D and 3D grid products against one process: P in-process workers on pr x pc grids (2 x 2,
// 3 x 3 and the non-square 2 x 3, 3 x 2) and pr x pc x pf grids (2 x 2 x 2, 2 x 3 x 2, 3 x 2 x 3) multiply a random non-symmetric weighted matrix by a dense block, forward
// (A H) and backward (A^T G, also through autograd), sparsity-oblivious and aware; every slice
// equals one process's product within 1e-5 relative, and the bytes the row, column and fibre
// communicators count equal runtime/plan/volumes.h's TwoDVolume / ThreeDVolume from the exact block
// counts.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "flexgraph/autograd/var.h"
#include "flexgraph/ops/ops.h"
#include "runtime/comm/process_grid.h"
#include "runtime/grid/spmm_3d.h"
#include "runtime/plan/volumes.h"
#include "tests/runtime/grid/grid_test_util.h"

namespace fg::grid {
namespace {

using runtime::TrafficKind;
using namespace fg::grid::testing;  // NOLINT: the test helpers

// Worker (i, j, l)'s slice of a global [n, w] tensor: positions [lo, hi) of the order, columns block j.
Tensor SliceOf(const Tensor& global, const VertexBlocks& b, int64_t lo, int64_t hi, int pc, int j) {
  const int64_t w = global.row_width(), c0 = ColumnLo(w, pc, j), cols = ColumnLo(w, pc, j + 1) - c0;
  Tensor t = Tensor::Empty({hi - lo, cols});
  for (int64_t r = 0; r < hi - lo; ++r) {
    for (int64_t c = 0; c < cols; ++c) t.f32()[r * cols + c] = global.f32()[b.order[lo + r] * w + c0 + c];
  }
  return t;
}

void ExpectThreeDMatchesOneProcess(int pr, int pc, int pf, bool aware) {
  SCOPED_TRACE(::testing::Message() << pr << " x " << pc << " x " << pf << (aware ? " aware" : " oblivious"));
  constexpr int64_t kN = 101, kWidth = 7;
  const Csr a = RandomMatrix(kN, 4, 31);
  const Tensor h = RandomDense(kN, kWidth, 32), g = RandomDense(kN, kWidth, 33);
  const Tensor z_want = ops::Spmm(a, h, ops::SpmmReduce::kSum);
  const Tensor gh_want = ops::Spmm(a.Transpose(), g, ops::SpmmReduce::kSum);
  const VertexBlocks blocks = VertexBlocks::Make(kN, pr, 6);
  const int parts = pr * pc * pf;
  auto world = runtime::MakeInProcessGroup(parts);
  std::vector<int64_t> forward(parts), backward(parts);
  std::vector<std::thread> threads;
  for (int r = 0; r < parts; ++r) {
    threads.emplace_back([&, r] {
      runtime::Communicator& comm = *world[r];
      comm.set_timeout(std::chrono::seconds(30));
      auto grid = runtime::ProcessGrid::Make3D(comm, pr, pc, pf);
      ASSERT_TRUE(grid.ok()) << grid.status();
      auto spmm = Spmm3D::Make(*grid, a, blocks, aware);
      ASSERT_TRUE(spmm.ok()) << spmm.status();
      const int i = grid->i(), j = grid->j(), l = grid->l();
      const int64_t lo = (*spmm)->SliceLo(i, l), hi = (*spmm)->SliceLo(i, l + 1);
      auto sent = [&](TrafficKind k) {
        return grid->row().bytes_sent(k) + grid->column().bytes_sent(k) + (pf > 1 ? grid->fibre().bytes_sent(k) : 0);
      };
      auto z = (*spmm)->Forward(SliceOf(h, blocks, lo, hi, pc, j));
      ASSERT_TRUE(z.ok()) << z.status();
      EXPECT_LT(RelativeError(*z, SliceOf(z_want, blocks, lo, hi, pc, j)), 1e-5) << "worker " << r;
      auto gh = (*spmm)->Backward(SliceOf(g, blocks, lo, hi, pc, j));
      ASSERT_TRUE(gh.ok()) << gh.status();
      EXPECT_LT(RelativeError(*gh, SliceOf(gh_want, blocks, lo, hi, pc, j)), 1e-5) << "worker " << r;
      forward[r] = sent(TrafficKind::kFeatures);
      backward[r] = sent(TrafficKind::kGradients);
      ag::Var x = ag::Var::Parameter(SliceOf(h, blocks, lo, hi, pc, j));
      ag::Var y = (*spmm)->Apply(x);
      y.Backward(SliceOf(g, blocks, lo, hi, pc, j));
      ASSERT_TRUE((*spmm)->status().ok()) << (*spmm)->status();
      EXPECT_LT(RelativeError(x.grad(), SliceOf(gh_want, blocks, lo, hi, pc, j)), 1e-5) << "worker " << r;
    });
  }
  for (auto& t : threads) t.join();

  std::vector<int32_t> block_of(kN);
  for (int64_t v = 0; v < kN; ++v) block_of[v] = blocks.BlockOf(blocks.position[v]);
  plan::StrategySpec spec;
  spec.scheme = plan::Scheme::kThreeD;
  spec.aware = aware;
  spec.grid[0] = pr, spec.grid[1] = pc, spec.grid[2] = pf;
  auto volume = [&](const Csr& m) {  // 2D (one fibre layer) has a model of its own
    const plan::BlockCounts counts = plan::CountBlocks(m, block_of, pr);
    if (pf > 1) return plan::ThreeDVolume(spec, counts, parts, kWidth, 0);
    spec.scheme = plan::Scheme::kTwoD;
    return plan::TwoDVolume(spec, counts, parts, kWidth, 0);
  };
  const plan::Volume fwd = volume(a), bwd = volume(a.Transpose());
  int64_t f = 0, b = 0;
  for (int r = 0; r < parts; ++r) f += forward[r], b += backward[r];
  EXPECT_EQ(static_cast<int64_t>(std::llround(fwd.bytes_sent * parts)), f);
  EXPECT_EQ(static_cast<int64_t>(std::llround(bwd.bytes_sent * parts)), b);
}

TEST(Spmm2D, SquareGridsMatchOneProcessAndTheModel) {
  for (bool aware : {false, true}) {
    ExpectThreeDMatchesOneProcess(2, 2, 1, aware);
    ExpectThreeDMatchesOneProcess(3, 3, 1, aware);
  }
}

TEST(Spmm2D, NonSquareGridsMatchOneProcessAndTheModel) {
  for (bool aware : {false, true}) {
    ExpectThreeDMatchesOneProcess(2, 3, 1, aware);
    ExpectThreeDMatchesOneProcess(3, 2, 1, aware);
  }
}

TEST(Spmm3D, GridsMatchOneProcessAndTheModel) {
  for (bool aware : {false, true}) {
    ExpectThreeDMatchesOneProcess(2, 2, 2, aware);
    ExpectThreeDMatchesOneProcess(2, 3, 2, aware);
    ExpectThreeDMatchesOneProcess(3, 2, 3, aware);
  }
}

}  // namespace
}  // namespace fg::grid
