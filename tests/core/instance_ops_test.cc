// Ops of metapath-instance models (ops/instances.h, autograd/instance_functions.h): values against
// hand computation and against compositions of other ops, gradients against finite differences,
// and summation orders that do not depend on the thread count.
#include "flexgraph/autograd/instance_functions.h"

#include <gtest/gtest.h>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/parallel.h"
#include "tests/core/gradcheck.h"

namespace fg {
namespace {

using testing::ExpectGradientsMatch;
using testing::RandomTensor;
using testing::Rows;

TEST(InstanceOps, ComplexMulMatchesHandComputation) {
  // (1 + 2i)(3 + 4i) = -5 + 10i;  (0 + 1i)(0 + 1i) = -1.
  ag::Var y = ag::ComplexMul(ag::Var(Rows({1, 2, 0, 1}, 1)), ag::Var(Rows({3, 4, 0, 1}, 1)));
  EXPECT_EQ(y.value().ToVector<float>(), (std::vector<float>{-5, 10, -1, 0}));
  // [n, L, d] against one rotation per position: i and -1.
  Tensor x = Tensor::FromVector(std::vector<float>{1, 0, 1, 0, 2, 0, 2, 0}, {2, 2, 2});
  ag::Var z = ag::ComplexMul(ag::Var(x), ag::Var(Rows({0, 1, -1, 0}, 2)));
  EXPECT_EQ(z.value().ToVector<float>(), (std::vector<float>{0, 1, -1, 0, 0, 2, -2, 0}));
}

TEST(InstanceOps, ComplexMulGradients) {
  ExpectGradientsMatch([](const std::vector<ag::Var>& in) { return ag::ComplexMul(in[0], in[1]); },
                       {RandomTensor({5, 3, 4}, 1), RandomTensor({3, 4}, 2)}, 1e-3f, 1e-2f);
  ExpectGradientsMatch([](const std::vector<ag::Var>& in) { return ag::ComplexMul(in[0], in[1]); },
                       {RandomTensor({7, 6}, 3), RandomTensor({1, 6}, 4)}, 1e-3f, 1e-2f);
}

// Instances over a table of 5 rows (row 1 repeats, row 4 is unused) in two blocks of lengths 4 and 3.
const Tensor kLong = Tensor::FromVector(std::vector<int32_t>{0, 1, 2, 3, 1, 1, 0, 2, 3, 2, 1, 0}, {3, 4});
const Tensor kShort = Tensor::FromVector(std::vector<int32_t>{4, 0, 4, 2, 2, 3}, {2, 3});

// The unfused encoder: gather [n, L, d], rotate, mean over L.
ag::Var Gathered(const ag::Var& table, const Tensor& vertices, const ag::Var& rotations) {
  const int64_t n = vertices.dim(0), len = vertices.dim(1), d = table.row_width();
  ag::Var x = ag::Reshape(ag::GatherRows(table, vertices.Reshape({n * len})), {n, len, d});
  return ag::MeanMiddle(rotations.defined() ? ag::ComplexMul(x, rotations) : x);
}

TEST(InstanceOps, EncodeInstancesEqualsTheGatheredBatchAndDifferentiates) {
  const Tensor table = RandomTensor({5, 6}, 14);
  const Tensor r_long = RandomTensor({4, 6}, 15), r_short = RandomTensor({3, 6}, 16);
  for (bool rotate : {false, true}) {
    SCOPED_TRACE(rotate ? "rotate" : "mean");
    auto fused = [&](const std::vector<ag::Var>& in) {
      return ag::EncodeInstances(in[0], {kLong, kShort},
                                 {rotate ? in[1] : ag::Var(), rotate ? in[2] : ag::Var()});
    };
    const std::vector<ag::Var> in = {ag::Var(table), ag::Var(r_long), ag::Var(r_short)};
    std::vector<float> want = Gathered(in[0], kLong, rotate ? in[1] : ag::Var()).value().ToVector<float>();
    const std::vector<float> second =
        Gathered(in[0], kShort, rotate ? in[2] : ag::Var()).value().ToVector<float>();
    want.insert(want.end(), second.begin(), second.end());
    const std::vector<float> got = fused(in).value().ToVector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
    ExpectGradientsMatch(fused, {table, r_long, r_short}, 1e-3f, 1e-2f);
  }
}

TEST(InstanceOps, GradientsDoNotDependOnTheThreadCount) {
  // More instances than one partial-sum block, so the fixed blocking is exercised.
  const int64_t n = 3000, len = 3, d = 8, rows = 50;
  Tensor vertices = Tensor::Empty({n, len}, DType::kInt32);
  for (int64_t k = 0; k < n * len; ++k) vertices.i32()[k] = static_cast<int32_t>((k * 7919) % rows);
  const Tensor table = RandomTensor({rows, d}, 21), rot = RandomTensor({len, d}, 22);
  auto grads = [&](int threads) {
    SetNumThreads(threads);
    ag::Var t = ag::Var::Parameter(table.Clone()), r = ag::Var::Parameter(rot.Clone());
    ag::Sum(ag::ComplexMul(ag::EncodeInstances(t, {vertices}, {r}), ag::Var(Rows({1, 2, 3, 4, 5, 6, 7, 8}, 1))))
        .Backward();
    std::vector<float> g = t.grad().ToVector<float>();
    const std::vector<float> gr = r.grad().ToVector<float>();
    g.insert(g.end(), gr.begin(), gr.end());
    return g;
  };
  const std::vector<float> one = grads(1), two = grads(2);
  SetNumThreads(0);
  EXPECT_EQ(one, two);
}

// Groups (rows) over instances (columns):  g0 = {p0, p1},  g1 = {p2},  g2 = {}.
SparseMatrixPtr ThreeGroups() {
  return std::make_shared<SparseMatrix>(Csr::FromVectors(3, 3, {0, 2, 3, 3}, {0, 1, 2}));
}

TEST(InstanceOps, HeadWeightedSumEqualsPerHeadSpmm) {
  const SparseMatrixPtr groups = ThreeGroups();
  const Tensor x = RandomTensor({3, 4}, 16);
  const Tensor alpha = RandomTensor({3, 2}, 17);
  std::vector<ag::Var> heads = ag::Split(ag::Var(alpha), {1, 1});
  const std::vector<float> want =
      ag::Concat({ag::Spmm(groups, ag::Var(x), ops::SpmmReduce::kSum, heads[0]),
                  ag::Spmm(groups, ag::Var(x), ops::SpmmReduce::kSum, heads[1])})
          .value()
          .ToVector<float>();
  const std::vector<float> got =
      ag::HeadWeightedSum(groups, ag::Var(x), ag::Var(alpha)).value().ToVector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  // The empty group g2 is zero.
  EXPECT_EQ(got[16], 0.0f);
  EXPECT_EQ(got[23], 0.0f);
  ExpectGradientsMatch(
      [&](const std::vector<ag::Var>& in) { return ag::HeadWeightedSum(groups, in[0], in[1]); },
      {x, alpha}, 1e-3f, 1e-2f);
}

TEST(InstanceOps, PickRowsAccumulatesIntoOneGradient) {
  // Two picks of x's rows: the gradient is the sum of both, in one tensor of x's shape.
  const Tensor x = RandomTensor({6, 3}, 30);
  auto f = [](const std::vector<ag::Var>& in) {
    const ag::Var a = ag::PickRows(in[0], Tensor::FromVector(std::vector<int32_t>{4, 1}));
    const ag::Var b = ag::PickRows(in[0], Tensor::FromVector(std::vector<int32_t>{1, 0, 5}));
    return ag::Concat({ag::Reshape(a, {1, 6}), ag::Reshape(b, {1, 9})});
  };
  ExpectGradientsMatch(f, {x}, 1e-3f, 1e-2f);
  ag::Var p = ag::PickRows(ag::Var(x), Tensor::FromVector(std::vector<int32_t>{2}));
  EXPECT_EQ(p.value().ToVector<float>(),
            (std::vector<float>{x.f32()[6], x.f32()[7], x.f32()[8]}));
}

}  // namespace
}  // namespace fg
