// Edge ops: EdgeInput and AggregateEdges (sum, mean, max, std; by destination, source or both)
// against hand-computed values and finite-difference gradients.
#include <gtest/gtest.h>

#include <cmath>

#include "flexgraph/autograd/edge_functions.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/nn/layer_norm.h"
#include "flexgraph/ops/edge_ops.h"
#include "tests/core/gradcheck.h"

namespace fg {
namespace {

using ag::EdgeReduce;
using ag::EdgeSide;
using ag::Var;
using testing::ExpectGradientsMatch;
using testing::RandomTensor;

//   0 -> 1, 0 -> 2, 1 -> 2, 2 -> 0, 3 -> 2     (vertex 3 has no in-edges)
// In-edge structure (row = destination): row 0: {2}, row 1: {0}, row 2: {0, 1, 3}, row 3: {}.
// Entries in order: k0 = 2->0, k1 = 0->1, k2 = 0->2, k3 = 1->2, k4 = 3->2.
SparseMatrixPtr Graph() {
  return std::make_shared<SparseMatrix>(Csr::FromVectors(4, 4, {0, 1, 2, 5, 5}, {2, 0, 0, 1, 3}));
}

TEST(EdgeOpsTest, EdgeInputConcatenatesSourceDestinationAndEdge) {
  const Tensor x = Tensor::FromVector<float>({10, 11, 12, 13}, {4, 1});
  const Tensor y = Tensor::FromVector<float>({20, 21, 22, 23}, {4, 1});
  const Tensor e = Tensor::FromVector<float>({0, 1, 2, 3, 4}, {5, 1});
  Tensor out = ops::EdgeInput(Graph()->csr(), x, y, e);
  ASSERT_EQ(out.dim(0), 5);
  ASSERT_EQ(out.dim(1), 3);
  const float want[5][3] = {{12, 20, 0}, {10, 21, 1}, {10, 22, 2}, {11, 22, 3}, {13, 22, 4}};
  for (int k = 0; k < 5; ++k) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(out.f32()[k * 3 + j], want[k][j]) << k << "," << j;
  }
  // Without an edge state: the two ends only.
  EXPECT_EQ(ops::EdgeInput(Graph()->csr(), x, y, Tensor()).dim(1), 2);
}

TEST(EdgeOpsTest, EdgeInputGradients) {
  auto a = Graph();
  ExpectGradientsMatch(
      [&](const std::vector<Var>& v) { return ag::EdgeInput(a, v[0], v[1], v[2]); },
      {RandomTensor({4, 3}, 1), RandomTensor({4, 2}, 2), RandomTensor({5, 2}, 3)});
  ExpectGradientsMatch([&](const std::vector<Var>& v) { return ag::EdgeInput(a, v[0], v[0], Var()); },
                       {RandomTensor({4, 3}, 4)});
}

TEST(EdgeOpsTest, AggregationByDestinationHandComputed) {
  // Messages of k0..k4: 1, 2, 3, 5, 10 -> row 0 {1}, row 1 {2}, row 2 {3, 5, 10}, row 3 {}.
  const Var m(Tensor::FromVector<float>({1, 2, 3, 5, 10}, {5, 1}));
  Tensor out = ag::AggregateEdges(Graph(), m,
                                  {EdgeReduce::kSum, EdgeReduce::kMean, EdgeReduce::kMax,
                                   EdgeReduce::kStd})
                   .value();
  ASSERT_EQ(out.dim(0), 4);
  ASSERT_EQ(out.dim(1), 4);
  auto at = [&](int r, int j) { return out.f32()[r * 4 + j]; };
  EXPECT_FLOAT_EQ(at(2, 0), 18.0f);
  EXPECT_FLOAT_EQ(at(2, 1), 6.0f);
  EXPECT_FLOAT_EQ(at(2, 2), 10.0f);
  // Variance of {3, 5, 10}: mean 6, (9 + 1 + 16) / 3.
  EXPECT_NEAR(at(2, 3), std::sqrt(26.0 / 3 + 1e-5), 1e-5);
  EXPECT_FLOAT_EQ(at(0, 0), 1.0f);
  EXPECT_NEAR(at(0, 3), std::sqrt(1e-5), 1e-6);  // one message: no spread
  for (int j = 0; j < 3; ++j) EXPECT_EQ(at(3, j), 0.0f) << "empty row, column " << j;
}

TEST(EdgeOpsTest, AggregationBySourceAndBothEnds) {
  // By source: vertex 0 sends k1, k2 (2 + 3), 1 sends k3 (5), 2 sends k0 (1), 3 sends k4 (10).
  const Var m(Tensor::FromVector<float>({1, 2, 3, 5, 10}, {5, 1}));
  Tensor src = ag::AggregateEdges(Graph(), m, {EdgeReduce::kSum}, EdgeSide::kSource).value();
  const float want[4] = {5, 5, 1, 10};
  for (int v = 0; v < 4; ++v) EXPECT_EQ(src.f32()[v], want[v]) << v;
  Tensor both = ag::AggregateEdges(Graph(), m, {EdgeReduce::kSum}, EdgeSide::kBoth).value();
  ASSERT_EQ(both.dim(1), 2);
  EXPECT_EQ(both.f32()[2 * 2 + 0], 18.0f);  // vertex 2 receives 3 + 5 + 10
  EXPECT_EQ(both.f32()[2 * 2 + 1], 1.0f);   // and sends 1
}

class AggregationGradientTest : public ::testing::TestWithParam<std::tuple<EdgeReduce, EdgeSide>> {};

TEST_P(AggregationGradientTest, MatchesFiniteDifferences) {
  const auto [reduce, side] = GetParam();
  auto a = Graph();
  ExpectGradientsMatch(
      [&](const std::vector<Var>& v) { return ag::AggregateEdges(a, v[0], {reduce}, side); },
      {RandomTensor({5, 3}, 7)}, 1e-3f, 2e-2f);
}

INSTANTIATE_TEST_SUITE_P(
    AllReductions, AggregationGradientTest,
    ::testing::Combine(::testing::Values(EdgeReduce::kSum, EdgeReduce::kMean, EdgeReduce::kMax,
                                         EdgeReduce::kStd),
                       ::testing::Values(EdgeSide::kDestination, EdgeSide::kSource, EdgeSide::kBoth)));

TEST(EdgeOpsTest, SeveralReductionsAtOnceGradients) {
  auto a = Graph();
  ExpectGradientsMatch(
      [&](const std::vector<Var>& v) {
        return ag::AggregateEdges(
            a, v[0], {EdgeReduce::kSum, EdgeReduce::kMean, EdgeReduce::kMax, EdgeReduce::kStd},
            EdgeSide::kBoth);
      },
      {RandomTensor({5, 2}, 11)}, 1e-3f, 2e-2f);
}

TEST(EdgeOpsTest, ParseEdgeReductions) {
  auto ok = ag::ParseEdgeReductions("sum,max,std", "aggregation");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 3u);
  EXPECT_EQ((*ok)[1], EdgeReduce::kMax);
  auto bad = ag::ParseEdgeReductions("sum,median", "aggregation");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("median"), std::string::npos);
  EXPECT_FALSE(ag::ParseEdgeReductions("sum,sum", "aggregation").ok());
}

// LayerNorm and SiLU, the Interaction Network's MLP blocks.
TEST(EdgeOpsTest, LayerNormNormalisesRowsAndMatchesFiniteDifferences) {
  nn::LayerNorm norm(4);
  Tensor y = norm.Forward(Var(Tensor::FromVector<float>({1, 2, 3, 6}, {1, 4}))).value();
  // mean 3, variance (4 + 1 + 0 + 9) / 4 = 3.5.
  EXPECT_NEAR(y.f32()[3], 3 / std::sqrt(3.5 + 1e-5), 1e-5);
  EXPECT_NEAR(y.f32()[0] + y.f32()[1] + y.f32()[2] + y.f32()[3], 0.0, 1e-5);
  ExpectGradientsMatch(
      [](const std::vector<Var>& v) { return ag::LayerNormRows(v[0], v[1], v[2]); },
      {RandomTensor({3, 5}, 21), RandomTensor({5}, 22), RandomTensor({5}, 23)}, 1e-3f, 2e-2f);
  // Rows wider than the 8 summing lanes with a tail; enough rows for two blocks of the parameter
  // gradients' partial sums.
  ExpectGradientsMatch(
      [](const std::vector<Var>& v) { return ag::LayerNormRows(v[0], v[1], v[2]); },
      {RandomTensor({4, 19}, 29), RandomTensor({19}, 30), RandomTensor({19}, 31)}, 1e-3f, 2e-2f);
  ExpectGradientsMatch(
      [](const std::vector<Var>& v) { return ag::LayerNormRows(v[0], v[1], v[2]); },
      {RandomTensor({1030, 3}, 25), RandomTensor({3}, 26), RandomTensor({3}, 27)}, 1e-3f, 2e-2f);
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::Silu(v[0]); },
                       {RandomTensor({3, 4}, 24, -3.0f, 3.0f)}, 1e-3f, 2e-2f);
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::Silu(v[0]); },
                       {RandomTensor({1, 4200}, 28, -6.0f, 6.0f)}, 1e-3f, 2e-2f);
}

TEST(EdgeOpsTest, FusedLayerNormSiluIsSiluOfLayerNormAndMatchesFiniteDifferences) {
  // Rows wider than the backward's 512-column pieces, with a tail; gain and bias away from 1 and 0.
  const Tensor x = RandomTensor({6, 530}, 41, -2.0f, 2.0f), g = RandomTensor({530}, 42, 0.5f, 1.5f),
               b = RandomTensor({530}, 43);
  std::vector<Var> fused = {Var::Parameter(x.Clone()), Var::Parameter(g.Clone()), Var::Parameter(b.Clone())};
  std::vector<Var> apart = {Var::Parameter(x.Clone()), Var::Parameter(g.Clone()), Var::Parameter(b.Clone())};
  const Tensor r = RandomTensor({6, 530}, 44);
  Var yf = ag::LayerNormSilu(fused[0], fused[1], fused[2]);
  Var ya = ag::Silu(ag::LayerNormRows(apart[0], apart[1], apart[2]));
  for (int64_t i = 0; i < yf.value().numel(); ++i) ASSERT_EQ(yf.value().f32()[i], ya.value().f32()[i]) << i;
  ag::Sum(ag::Mul(yf, Var(r))).Backward();
  ag::Sum(ag::Mul(ya, Var(r))).Backward();
  for (int k = 0; k < 3; ++k) {
    const Tensor& gf = fused[k].grad();
    const Tensor& ga = apart[k].grad();
    for (int64_t i = 0; i < gf.numel(); ++i) {
      EXPECT_NEAR(gf.f32()[i], ga.f32()[i], 1e-5f * std::max(1.0f, std::fabs(ga.f32()[i])))
          << "input " << k << " [" << i << "]";
    }
  }
  ExpectGradientsMatch(
      [](const std::vector<Var>& v) { return ag::LayerNormSilu(v[0], v[1], v[2]); },
      {RandomTensor({4, 19}, 45), RandomTensor({19}, 46), RandomTensor({19}, 47)}, 1e-3f, 2e-2f);
}

}  // namespace
}  // namespace fg
