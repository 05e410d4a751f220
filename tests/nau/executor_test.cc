// HybridExecutor tests: the plan per level, dense and sparse execution agree (values and
// gradients), max runs as a graph op, custom aggregators see their level.
#include <gtest/gtest.h>

#include "nau/executor.h"
#include "tests/core/gradcheck.h"

namespace fg::nau {
namespace {

// A layer whose selection is a fixed list per root and whose Update returns the aggregate.
class ListLayer : public Layer {
 public:
  ListLayer(std::vector<std::vector<int32_t>> nbrs, Aggregator agg, bool weighted)
      : nbrs_(std::move(nbrs)), agg_(std::move(agg)), weighted_(weighted) {}
  hdg::SchemaTree Schema() const override { return hdg::SchemaTree::Flat("n", weighted_); }
  void SelectNeighbors(const SelectContext&, int32_t r, hdg::NeighborWriter& out) const override {
    for (int32_t u : nbrs_[r]) out.Add(u, 1.0f + u);
  }
  Aggregator LevelAggregator(int) const override { return agg_; }
  ag::Var Update(UpdateContext&, const ag::Var&, const ag::Var& nbr) override { return nbr; }

 private:
  std::vector<std::vector<int32_t>> nbrs_;
  Aggregator agg_;
  bool weighted_;
};

hdg::Hdg Build(const Layer& layer, int64_t n) {
  std::vector<int32_t> roots(n);
  for (int64_t i = 0; i < n; ++i) roots[i] = static_cast<int32_t>(i);
  SelectContext ctx(nullptr, nullptr, 0, 0, 0);
  auto h = hdg::HdgBuilder(layer.Schema(), n).Build(roots, [&](int32_t r, hdg::NeighborWriter& o) {
    layer.SelectNeighbors(ctx, r, o);
  });
  EXPECT_TRUE(h.ok());
  return std::move(h).value();
}

TEST(HybridExecutor, PlansByArityAndReduction) {
  ListLayer uniform({{1, 2}, {0, 2}, {0, 1}}, Aggregator::Mean(), false);
  ListLayer variable({{1}, {0, 2}, {}}, Aggregator::Sum(), false);
  ListLayer maxed({{1}, {0, 2}, {}}, Aggregator::Max(), false);
  HybridExecutor ex;
  EXPECT_EQ(ex.Plan(Build(uniform, 3), uniform)[0].strategy, Strategy::kDense);
  EXPECT_EQ(ex.Plan(Build(variable, 3), variable)[0].strategy, Strategy::kSparse);
  EXPECT_EQ(ex.Plan(Build(maxed, 3), maxed)[0].strategy, Strategy::kGraph);
  ex.SetOverride(Strategy::kSparse);
  auto plan = ex.Plan(Build(uniform, 3), uniform);
  EXPECT_EQ(plan[0].strategy, Strategy::kSparse);
  EXPECT_NE(HybridExecutor::Explain(plan).find("level 1 (mean): sparse - override"),
            std::string::npos)
      << HybridExecutor::Explain(plan);
  // Dense cannot be forced onto variable arity.
  ex.SetOverride(Strategy::kDense);
  EXPECT_EQ(ex.Plan(Build(variable, 3), variable)[0].strategy, Strategy::kSparse);
}

TEST(HybridExecutor, DenseAndSparseAgreeInValueAndGradient) {
  for (Aggregator agg : {Aggregator::Sum(), Aggregator::Mean(), Aggregator::WeightedSum(),
                         Aggregator::WeightedMean()}) {
    const bool weighted = agg.reduction() == Reduction::kWeightedSum;
    ListLayer layer({{1, 2, 3}, {0, 2, 3}, {0, 1, 1}, {3, 3, 0}}, agg, weighted);
    hdg::Hdg hdg = Build(layer, 4);
    Tensor x = testing::RandomTensor({4, 5}, 3);
    std::vector<std::vector<float>> values, grads;
    for (Strategy s : {Strategy::kDense, Strategy::kSparse}) {
      HybridExecutor ex;
      ex.SetOverride(s);
      auto plan = ex.Plan(hdg, layer);
      ASSERT_EQ(plan[0].strategy, s);
      LayerContext ctx;
      ag::Var in = ag::Var::Parameter(x.Clone());
      ag::Var out = ex.Run(hdg, plan, layer, in, ctx);
      ag::Sum(ag::Mul(out, ag::Var(testing::RandomTensor({4, 5}, 9)))).Backward();
      values.push_back(out.value().ToVector<float>());
      grads.push_back(in.grad().ToVector<float>());
    }
    for (size_t i = 0; i < values[0].size(); ++i) {
      EXPECT_NEAR(values[0][i], values[1][i], 1e-5) << agg.name();
      EXPECT_NEAR(grads[0][i], grads[1][i], 1e-5) << agg.name();
    }
  }
}

TEST(HybridExecutor, HandComputedWeightedMean) {
  // Root 0 has neighbours 1 (weight 2) and 2 (weight 3): (2*x1 + 3*x2) / 5.
  ListLayer layer({{1, 2}, {}, {}}, Aggregator::WeightedMean(), true);
  hdg::Hdg hdg = Build(layer, 3);
  HybridExecutor ex;
  LayerContext ctx;
  ag::Var x(Tensor::FromVector<float>({0, 10, 20}, {3, 1}));
  ag::Var out = ex.Run(hdg, ex.Plan(hdg, layer), layer, x, ctx);
  EXPECT_NEAR(out.value().f32()[0], (2 * 10 + 3 * 20) / 5.0f, 1e-5);
  EXPECT_EQ(out.value().f32()[1], 0.0f);
}

TEST(HybridExecutor, CustomAggregatorSeesItsLevel) {
  ListLayer layer({{1, 2}, {0}, {0, 1}},
                  Aggregator::Custom("count", Strategy::kGraph,
                                     [](const LevelInput& in) {
                                       // Returns each node's arity, as a [n, 1] tensor.
                                       const Csr& c = in.lvl().csr();
                                       Tensor t = Tensor::Empty({c.num_rows, 1});
                                       for (int64_t i = 0; i < c.num_rows; ++i) t.f32()[i] = c.degree(i);
                                       return ag::Var(t);
                                     }),
                  false);
  hdg::Hdg hdg = Build(layer, 3);
  HybridExecutor ex;
  auto plan = ex.Plan(hdg, layer);
  EXPECT_EQ(plan[0].strategy, Strategy::kGraph);
  LayerContext ctx;
  ag::Var out = ex.Run(hdg, plan, layer, ag::Var(Tensor::Zeros({3, 2})), ctx);
  EXPECT_EQ(out.value().ToVector<float>(), (std::vector<float>{2, 1, 2}));
}

}  // namespace
}  // namespace fg::nau
