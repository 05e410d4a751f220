// GridAggregation from each worker's own rows of A: on 2D 2 x 2, 1.5D c = 2 (P = 4 and 8) and 3D
// 2 x 2 x 2 grids, every worker gives AddMatrix only some rows of A (its owned rows, or all its held
// ones), the owners' entries are gathered into each block's rows of A and A^T, and the product over
// the held rows and its backward equal one process's (A M, and A^T G summed over a row's copies)
// within 1e-5 relative. The gathering is counted as set-up traffic, never as an epoch's; a worker
// short of its owned rows fails with an error that names it, and no worker hangs.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "flexgraph/autograd/var.h"
#include "flexgraph/ops/ops.h"
#include "runtime/grid/grid_aggregation.h"
#include "tests/runtime/grid/grid_test_util.h"

namespace fg::grid {
namespace {

using runtime::TrafficKind;
using namespace fg::grid::testing;  // NOLINT: the test helpers

// Rows `ids` of `a` (columns as vertex ids).
Csr RowsOf(const Csr& a, const std::vector<int64_t>& ids) {
  std::vector<int64_t> offsets = {0};
  std::vector<int32_t> cols;
  std::vector<float> vals;
  for (int64_t v : ids) {
    for (int64_t e = a.row_ptr()[v]; e < a.row_ptr()[v + 1]; ++e) cols.push_back(a.col()[e]), vals.push_back(a.val()[e]);
    offsets.push_back(static_cast<int64_t>(cols.size()));
  }
  return Csr::FromVectors(static_cast<int64_t>(ids.size()), a.num_cols, offsets, cols, vals);
}

// Rows `ids` of a global [n, w] tensor.
Tensor Rows(const Tensor& t, const std::vector<int64_t>& ids) {
  const int64_t w = t.row_width();
  Tensor out = Tensor::Empty({static_cast<int64_t>(ids.size()), w});
  for (size_t k = 0; k < ids.size(); ++k) {
    for (int64_t c = 0; c < w; ++c) out.f32()[k * w + c] = t.f32()[ids[k] * w + c];
  }
  return out;
}

void ExpectOwnRowsSuffice(const std::string& grid, int workers) {
  SCOPED_TRACE(grid);
  constexpr int64_t kN = 97, kWidth = 6;
  const Csr a = RandomMatrix(kN, 5, 41);
  const Tensor m = RandomDense(kN, kWidth, 42), g = RandomDense(kN, kWidth, 43);
  const Tensor z_want = ops::Spmm(a, m, ops::SpmmReduce::kSum);
  const Tensor gm_want = ops::Spmm(a.Transpose(), g, ops::SpmmReduce::kSum);
  auto spec = ResolveGridSpec(*ParseGridSpec(grid), workers);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto world = runtime::MakeInProcessGroup(workers);
  std::vector<Tensor> grads(workers);
  std::vector<std::vector<int64_t>> held(workers);
  std::vector<int64_t> setup(workers);
  std::vector<std::thread> threads;
  for (int r = 0; r < workers; ++r) {
    threads.emplace_back([&, r] {
      runtime::Communicator& comm = *world[r];
      comm.set_timeout(std::chrono::seconds(30));
      auto agg = GridAggregation::Make(comm, *spec, kN, 7);
      ASSERT_TRUE(agg.ok()) << agg.status();
      std::vector<int64_t> owned, given;
      for (int64_t v = 0; v < kN; ++v) {
        if ((*agg)->Holds(v)) held[r].push_back(v);
        if ((*agg)->Owns(v)) owned.push_back(v);
      }
      given = r % 2 == 0 ? held[r] : owned;  // extra rows are not sent again
      ASSERT_TRUE((*agg)->AddMatrix(3, Tensor::FromVector(given), RowsOf(a, given)).ok());
      setup[r] = comm.bytes_sent(TrafficKind::kSetup);
      EXPECT_EQ(comm.bytes_sent(TrafficKind::kFeatures) + comm.bytes_sent(TrafficKind::kGradients), 0);
      ag::Var x = ag::Var::Parameter(Rows(m, held[r]));
      ag::Var z = (*agg)->Aggregate(3, x);
      EXPECT_LT(RelativeError(z.value(), Rows(z_want, held[r])), 1e-5) << "worker " << r;
      // Each row's gradient given once, by its owner (the others' shares are zero).
      Tensor share = Rows(g, held[r]);
      for (size_t k = 0; k < held[r].size(); ++k) {
        if (!(*agg)->Owns(held[r][k])) {
          for (int64_t c = 0; c < kWidth; ++c) share.f32()[k * kWidth + c] = 0;
        }
      }
      z.Backward(share);
      ASSERT_TRUE((*agg)->status().ok()) << (*agg)->status();
      grads[r] = x.grad();
    });
  }
  for (auto& t : threads) t.join();
  // Summed over the copies of each row, the shares are A^T G's rows.
  Tensor gm = Tensor::Zeros({kN, kWidth});
  for (int r = 0; r < workers; ++r) {
    ASSERT_TRUE(grads[r].defined()) << "worker " << r;
    for (size_t k = 0; k < held[r].size(); ++k) {
      for (int64_t c = 0; c < kWidth; ++c) gm.f32()[held[r][k] * kWidth + c] += grads[r].f32()[k * kWidth + c];
    }
  }
  EXPECT_LT(RelativeError(gm, gm_want), 1e-5);
  // Every entry of A goes, as 12 bytes, to the other workers of its row's block (as A's) and of its
  // column's block (as A^T's): at most 2 (P / blocks) 12 nnz in all, and some.
  int64_t sum = 0;
  for (int r = 0; r < workers; ++r) sum += setup[r];
  const int per_block = spec->scheme == GridScheme::kOnePointFiveD ? spec->c : spec->pc * spec->pf;
  EXPECT_GT(sum, 0);
  EXPECT_LE(sum, 2 * per_block * 12 * a.nnz());
}

TEST(GridAggregation, OwnRowsGiveOneProcessProducts) {
  ExpectOwnRowsSuffice("2d:2x2", 4);
  ExpectOwnRowsSuffice("2d:2x2,oblivious", 4);
  ExpectOwnRowsSuffice("1.5d:c=2", 4);
  ExpectOwnRowsSuffice("1.5d:c=2", 8);
  ExpectOwnRowsSuffice("3d:2x2x2", 8);
}

// A worker that leaves out one of its owned rows fails, naming itself; the others fail or finish,
// and none waits past the call.
TEST(GridAggregation, MissingOwnedRowIsAnErrorNotAHang) {
  constexpr int64_t kN = 40;
  const Csr a = RandomMatrix(kN, 3, 5);
  auto spec = ResolveGridSpec(*ParseGridSpec("2d:2x2"), 4);
  ASSERT_TRUE(spec.ok());
  auto world = runtime::MakeInProcessGroup(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      world[r]->set_timeout(std::chrono::seconds(30));
      auto agg = GridAggregation::Make(*world[r], *spec, kN, 7);
      ASSERT_TRUE(agg.ok()) << agg.status();
      std::vector<int64_t> owned;
      for (int64_t v = 0; v < kN; ++v) {
        if ((*agg)->Owns(v)) owned.push_back(v);
      }
      if (r == 2) owned.pop_back();
      const absl::Status s = (*agg)->AddMatrix(0, Tensor::FromVector(owned), RowsOf(a, owned));
      errors[r] = std::string(s.message());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_NE(errors[2].find("worker 2 gave"), std::string::npos) << errors[2];
  EXPECT_NE(errors[2].find("owned rows"), std::string::npos) << errors[2];
}

}  // namespace
}  // namespace fg::grid
