// Sparse-matrix and segment op tests: hand-computed tiny cases, shared transposes and
// finite-difference gradients (ops_test.cc: the dense ops).
#include <gtest/gtest.h>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/ops/ops.h"
#include "tests/core/gradcheck.h"
#include "tests/core/test_graphs.h"

namespace fg {
namespace {

using ag::Var;
using testing::ExpectGradientsMatch;
using testing::RandomCsr;
using testing::RandomTensor;
using testing::Shared;
using testing::Tiny;
using testing::TinyX;

TEST(Spmm, HandComputed) {
  Csr a = Tiny();
  Tensor x = TinyX();
  EXPECT_EQ(ops::Spmm(a, x, ops::SpmmReduce::kSum).ToVector<float>(),
            (std::vector<float>{6, 8, 0, 0, 3, 4}));
  EXPECT_EQ(ops::Spmm(a, x, ops::SpmmReduce::kMean).ToVector<float>(),
            (std::vector<float>{3, 4, 0, 0, 3, 4}));
  Tensor w = Tensor::FromVector<float>({2, -1, 0.5f});
  EXPECT_EQ(ops::Spmm(a, x, ops::SpmmReduce::kSum, w).ToVector<float>(),
            (std::vector<float>{-3, -2, 0, 0, 1.5f, 2}));
  Tensor argmax;
  EXPECT_EQ(ops::SpmmMax(a, x, &argmax).ToVector<float>(), (std::vector<float>{5, 6, 0, 0, 3, 4}));
  EXPECT_EQ(argmax.ToVector<int32_t>(), (std::vector<int32_t>{2, 2, -1, -1, 1, 1}));
}

// A symmetric matrix is its own transpose (shared storage); any other gets its own. Per-entry
// values come back in transposed order, w itself when they are symmetric too, and a constant w's
// result is reused.
TEST(SparseMatrix, SymmetricMatricesShareTheirTransposeAndValues) {
  // Entries (0,0) (0,1) (1,0) (1,2) (2,1): symmetric; weights symmetric, then not.
  Csr sym = Csr::FromVectors(3, 3, {0, 2, 4, 5}, {0, 1, 0, 2, 1});
  SparseMatrix a(sym);
  EXPECT_EQ(a.transpose().indices.raw(), a.csr().indices.raw());
  const Tensor w = Tensor::FromVector<float>({1, 2, 2, 3, 3});
  EXPECT_EQ(a.TransposedValues(w, true).raw(), w.raw());
  const Tensor v = Tensor::FromVector<float>({1, 2, 4, 3, 5});  // (0,1) = 2 but (1,0) = 4
  const Tensor vt = a.TransposedValues(v, true);
  EXPECT_EQ(vt.ToVector<float>(), (std::vector<float>{1, 4, 2, 5, 3}));
  EXPECT_EQ(a.TransposedValues(v, true).raw(), vt.raw());   // kept for the constant v
  EXPECT_NE(a.TransposedValues(v, false).raw(), vt.raw());  // recomputed for a changing one
  const Tensor heads = Tensor::FromVector<float>({1, 10, 2, 20, 4, 40, 3, 30, 5, 50}).Reshape({5, 2});
  EXPECT_EQ(a.TransposedValues(heads, false).ToVector<float>(),
            (std::vector<float>{1, 10, 4, 40, 2, 20, 5, 50, 3, 30}));

  SparseMatrix b(Csr::FromVectors(2, 3, {0, 2, 3}, {0, 2, 1}));
  EXPECT_NE(b.transpose().indices.raw(), b.csr().indices.raw());
  EXPECT_EQ(b.transpose().num_rows, 3);
  Csr unsorted = Csr::FromVectors(2, 2, {0, 2, 3}, {1, 0, 0});  // symmetric, row 0 out of order
  SparseMatrix c(unsorted);
  EXPECT_NE(c.transpose().indices.raw(), c.csr().indices.raw());
  EXPECT_EQ(c.transpose().indices.ToVector<int32_t>(), (std::vector<int32_t>{0, 1, 0}));
}

TEST(Spmm, Gradients) {
  auto a = Shared(RandomCsr(6, 5, 3, false, 11));
  Tensor x = RandomTensor({5, 4}, 12);
  for (auto reduce : {ops::SpmmReduce::kSum, ops::SpmmReduce::kMean}) {
    ExpectGradientsMatch([&](const std::vector<Var>& v) { return ag::Spmm(a, v[0], reduce); },
                         {x});
    ExpectGradientsMatch(
        [&](const std::vector<Var>& v) { return ag::Spmm(a, v[0], reduce, v[1]); },
        {x, RandomTensor({a->csr().nnz()}, 13)});
    ExpectGradientsMatch(
        [&](const std::vector<Var>& v) { return ag::Spmm(a, v[0], reduce, v[1]); },
        {x, RandomTensor({a->csr().nnz(), 2}, 14)});
  }
  ExpectGradientsMatch([&](const std::vector<Var>& v) { return ag::SpmmMax(a, v[0]); }, {x},
                       1e-3f);
}

TEST(Sddmm, HandComputedAndGradients) {
  Csr a = Tiny();
  Tensor x = TinyX();
  // entry (0,0): <x0,x0> = 5; (0,2): <x0,x2> = 17; (2,1): <x2,x1> = 39.
  EXPECT_EQ(ops::SddmmDot(a, x, x).ToVector<float>(), (std::vector<float>{5, 17, 39}));
  Tensor u = Tensor::FromVector<float>({1, 2, 3}, {3, 1});
  Tensor v = Tensor::FromVector<float>({10, 20, 30}, {3, 1});
  EXPECT_EQ(ops::SddmmAdd(a, u, v).ToVector<float>(), (std::vector<float>{11, 31, 23}));
  auto s = Shared(RandomCsr(5, 6, 3, false, 21));
  ExpectGradientsMatch(
      [&](const std::vector<Var>& v) { return ag::SddmmDot(s, v[0], v[1], 2); },
      {RandomTensor({5, 4}, 22), RandomTensor({6, 4}, 23)});
  ExpectGradientsMatch([&](const std::vector<Var>& v) { return ag::SddmmAdd(s, v[0], v[1]); },
                       {RandomTensor({5, 2}, 24), RandomTensor({6, 2}, 25)});
}

TEST(Segment, SoftmaxAndReduce) {
  Tensor off = Tensor::FromVector<int64_t>({0, 2, 2, 3});
  Tensor s = Tensor::FromVector<float>({0, std::log(3.0f), 7}, {3, 1});
  auto y = ops::SegmentSoftmax(off, s).ToVector<float>();
  EXPECT_NEAR(y[0], 0.25f, 1e-6);
  EXPECT_NEAR(y[1], 0.75f, 1e-6);
  EXPECT_NEAR(y[2], 1.0f, 1e-6);
  Tensor x = TinyX();
  EXPECT_EQ(ops::SegmentReduce(off, x, ops::SegmentReduceOp::kSum).ToVector<float>(),
            (std::vector<float>{4, 6, 0, 0, 5, 6}));
  Tensor am;
  EXPECT_EQ(ops::SegmentReduce(off, x, ops::SegmentReduceOp::kMax, &am).ToVector<float>(),
            (std::vector<float>{3, 4, 0, 0, 5, 6}));
  Tensor offsets = Tensor::FromVector<int64_t>({0, 3, 3, 4, 7});
  for (auto op : {ops::SegmentReduceOp::kSum, ops::SegmentReduceOp::kMean,
                  ops::SegmentReduceOp::kMax}) {
    ExpectGradientsMatch(
        [&](const std::vector<Var>& v) { return ag::SegmentReduce(offsets, v[0], op); },
        {RandomTensor({7, 3}, 31)}, 1e-3f);
  }
  ExpectGradientsMatch(
      [&](const std::vector<Var>& v) { return ag::SegmentSoftmax(offsets, v[0]); },
      {RandomTensor({7, 2}, 32)}, 1e-3f);
}

}  // namespace
}  // namespace fg
