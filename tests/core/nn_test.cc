// nn tests: initialisers, Linear, optimizers against hand-computed updates, metrics.
#include <gtest/gtest.h>

#include <cmath>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/nn/metrics.h"
#include "flexgraph/nn/module.h"
#include "flexgraph/nn/optim.h"

namespace fg::nn {
namespace {

TEST(Init, GlorotBoundsAndSeeding) {
  Tensor a = Initialize({100, 50}, Init::kGlorot, 1, 0);
  Tensor b = Initialize({100, 50}, Init::kGlorot, 1, 0);
  Tensor c = Initialize({100, 50}, Init::kGlorot, 2, 0);
  EXPECT_EQ(a.ToVector<float>(), b.ToVector<float>());
  EXPECT_NE(a.ToVector<float>(), c.ToVector<float>());
  const float bound = std::sqrt(6.0f / 150.0f);
  double var = 0;
  for (float v : a.ToVector<float>()) {
    EXPECT_LE(std::fabs(v), bound);
    var += v * v;
  }
  EXPECT_NEAR(var / a.numel(), bound * bound / 3.0, 0.1 * bound * bound / 3.0);
}

TEST(Optimizer, SgdAndAdamMatchHandComputedSteps) {
  ag::Var w = ag::Var::Parameter(Tensor::FromVector<float>({1.0f}));
  Optimizer sgd(OptimizerKind::kSgd, {{"w", w}}, {.lr = 0.1f, .weight_decay = 0.5f});
  ag::Sum(ag::Scale(w, 3.0f)).Backward();  // grad 3, plus decay 0.5 * 1
  sgd.Step();
  EXPECT_NEAR(w.value().f32()[0], 1.0f - 0.1f * 3.5f, 1e-6);

  ag::Var v = ag::Var::Parameter(Tensor::FromVector<float>({1.0f}));
  Optimizer adam(OptimizerKind::kAdam, {{"v", v}}, {.lr = 0.1f});
  ag::Sum(ag::Scale(v, 2.0f)).Backward();
  adam.Step();  // first Adam step moves by lr * sign(g)
  EXPECT_NEAR(v.value().f32()[0], 0.9f, 1e-5);

  ag::Var u = ag::Var::Parameter(Tensor::FromVector<float>({2.0f}));
  Optimizer adamw(OptimizerKind::kAdamW, {{"u", u}}, {.lr = 0.1f, .weight_decay = 0.1f});
  ag::Sum(ag::Scale(u, 1.0f)).Backward();
  adamw.Step();  // decoupled: 2 - 0.1*0.1*2 - 0.1
  EXPECT_NEAR(u.value().f32()[0], 2.0f - 0.02f - 0.1f, 1e-5);
}

TEST(LrSchedule, ConstantCosineAndWarmup) {
  LrSchedule kind;
  ASSERT_TRUE(ParseLrSchedule("cosine", &kind));
  EXPECT_EQ(kind, LrSchedule::kCosine);
  EXPECT_FALSE(ParseLrSchedule("step", &kind));
  for (int e = 0; e < 10; ++e) EXPECT_EQ(ScheduledLr(LrSchedule::kConstant, 0.1f, e, 10, 3), 0.1f);
  // Cosine over 11 epochs, no warmup: base, the midpoint between base and base/100, base/100.
  EXPECT_FLOAT_EQ(ScheduledLr(LrSchedule::kCosine, 0.1f, 0, 11, 0), 0.1f);
  EXPECT_FLOAT_EQ(ScheduledLr(LrSchedule::kCosine, 0.1f, 5, 11, 0), 0.0505f);
  EXPECT_FLOAT_EQ(ScheduledLr(LrSchedule::kCosine, 0.1f, 10, 11, 0), 0.001f);
  // Two warmup epochs rise to base / 3 and 2 base / 3; the cosine starts at base on the third.
  EXPECT_FLOAT_EQ(ScheduledLr(LrSchedule::kCosine, 0.3f, 0, 12, 2), 0.1f);
  EXPECT_FLOAT_EQ(ScheduledLr(LrSchedule::kCosine, 0.3f, 1, 12, 2), 0.2f);
  EXPECT_FLOAT_EQ(ScheduledLr(LrSchedule::kCosine, 0.3f, 2, 12, 2), 0.3f);
  EXPECT_FLOAT_EQ(ScheduledLr(LrSchedule::kCosine, 0.3f, 11, 12, 2), 0.003f);
  for (int e = 3; e < 12; ++e) {  // decreasing after the warmup
    EXPECT_LT(ScheduledLr(LrSchedule::kCosine, 0.3f, e, 12, 2), ScheduledLr(LrSchedule::kCosine, 0.3f, e - 1, 12, 2));
  }
  EXPECT_FLOAT_EQ(ScheduledLr(LrSchedule::kCosine, 0.3f, 0, 1, 0), 0.3f);  // a single epoch
}

TEST(Linear, ForwardAndTrainsToFit) {
  // Fit y = 2x - 1 with a 1x1 linear layer.
  Linear fc(1, 1, true, Init::kGlorot, 3);
  Optimizer opt(OptimizerKind::kAdam, fc.parameters(), {.lr = 0.05f});
  Tensor x = Tensor::FromVector<float>({-1, 0, 1, 2}, {4, 1});
  Tensor y = Tensor::FromVector<float>({-3, -1, 1, 3}, {4, 1});
  for (int it = 0; it < 800; ++it) {
    ag::Var diff = ag::Sub(fc.Forward(ag::Var(x)), ag::Var(y));
    ag::Mean(ag::Mul(diff, diff)).Backward();
    opt.Step();
    opt.ZeroGrad();
  }
  EXPECT_NEAR(fc.weight().value().f32()[0], 2.0f, 1e-2);
  EXPECT_NEAR(fc.bias().value().f32()[0], -1.0f, 1e-2);
}

TEST(Metrics, HandComputed) {
  std::vector<int64_t> truth = {0, 0, 1, 1, 2};
  std::vector<int64_t> pred = {0, 1, 1, 1, 0};
  EXPECT_DOUBLE_EQ(Accuracy(pred, truth), 0.6);
  // F1: class0 tp1 fp1 fn1 -> 0.5; class1 tp2 fp1 fn0 -> 0.8; class2 tp0 fn1 -> 0.
  EXPECT_NEAR(MacroF1(pred, truth, 3), (0.5 + 0.8 + 0.0) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(MicroF1(pred, truth, 3), 0.6);
  EXPECT_DOUBLE_EQ(RocAuc({0.1f, 0.4f, 0.35f, 0.8f}, {0, 0, 1, 1}), 0.75);
  EXPECT_DOUBLE_EQ(RocAuc({0.5f, 0.5f}, {0, 1}), 0.5);
  EXPECT_DOUBLE_EQ(HitsAtK({0.9f, 0.1f}, {{0.5f, 0.95f}, {0.2f, 0.3f}}, 2), 0.5);
}

}  // namespace
}  // namespace fg::nn
