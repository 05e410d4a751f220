// Op tests: hand-computed tiny cases, finite-difference gradients, dropout masks and autograd.
// Sparse-matrix and segment ops: sparse_ops_test.cc. The CPU kernels' paths against serial
// references: parallel_kernels_test.cc.
#include <cstring>
#include <gtest/gtest.h>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/ops/ops.h"
#include "flexgraph/ops/shared/elementwise.h"
#include "tests/core/gradcheck.h"
#include "tests/core/test_graphs.h"

namespace fg {
namespace {

using ag::Var;
using testing::ExpectGradientsMatch;
using testing::RandomTensor;
using testing::TinyX;

TEST(Matmul, HandComputed) {
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::FromVector<float>({1, 0, 0, 1, 1, 1}, {3, 2});
  EXPECT_EQ(ops::Matmul(a, b).ToVector<float>(), (std::vector<float>{4, 5, 10, 11}));
  // a^T a is [3, 3]; entry (0, 0) = 1 + 16.
  EXPECT_FLOAT_EQ(ops::Matmul(a, a, true, false).f32()[0], 17.0f);
  EXPECT_FLOAT_EQ(ops::Matmul(a, a, false, true).f32()[1], 32.0f);
}

TEST(Matmul, Gradients) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = RandomTensor(ta ? Shape{4, 3} : Shape{3, 4}, 1);
      Tensor b = RandomTensor(tb ? Shape{5, 4} : Shape{4, 5}, 2);
      ExpectGradientsMatch(
          [=](const std::vector<Var>& v) { return ag::MatMul(v[0], v[1], ta, tb); }, {a, b});
    }
  }
}

TEST(MatMulSum, EqualsTheSumOfProductsWithItsGradients) {
  Tensor a1 = RandomTensor({5, 3}, 1), b1 = RandomTensor({3, 4}, 2);
  Tensor a2 = RandomTensor({5, 6}, 3), b2 = RandomTensor({6, 4}, 4);
  const Tensor y = ag::MatMulSum(Var(a1), Var(b1), Var(a2), Var(b2)).value();
  const Tensor expected = ops::Add(ops::Matmul(a1, b1), ops::Matmul(a2, b2));
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(y.f32()[i], expected.f32()[i], 1e-5) << i;
  ExpectGradientsMatch(
      [](const std::vector<Var>& v) { return ag::MatMulSum(v[0], v[1], v[2], v[3]); }, {a1, b1, a2, b2});
}

// Dropout(x) w + x2 w2 in one op: the values and gradients of the two-op form, finite
// differences, and no dropped copy of x held between forward and backward.
TEST(DropoutMatMul, EqualsDropoutThenProductsWithItsGradientsAndKeepsNoDroppedCopy) {
  Tensor x = RandomTensor({37, 70}, 1), w = RandomTensor({70, 5}, 2);
  Tensor x2 = RandomTensor({37, 6}, 3), w2 = RandomTensor({6, 5}, 4);
  const Tensor ids = Tensor::FromVector(std::vector<int64_t>(37, 9));  // every row keyed alike
  for (const Tensor& row_ids : {Tensor(), ids}) {
    Var xv(x, true), wv(w, true), x2v(x2, true), w2v(w2, true);
    Var fused = ag::DropoutMatMul(xv, wv, 0.4f, 77, row_ids, x2v, w2v);
    Var ex(x, true), ew(w, true), ex2(x2, true), ew2(w2, true);
    Var two = ag::MatMulSum(ag::Dropout(ex, 0.4f, 77, true, row_ids), ew, ex2, ew2);
    for (int64_t i = 0; i < two.value().numel(); ++i) {
      ASSERT_NEAR(fused.value().f32()[i], two.value().f32()[i], 1e-5) << i;
    }
    ag::Sum(fused).Backward();
    ag::Sum(two).Backward();
    for (auto [a, b] : {std::pair{xv, ex}, {wv, ew}, {x2v, ex2}, {w2v, ew2}}) {
      for (int64_t i = 0; i < a.grad().numel(); ++i) ASSERT_NEAR(a.grad().f32()[i], b.grad().f32()[i], 1e-4) << i;
    }
  }
  ExpectGradientsMatch(
      [](const std::vector<Var>& v) { return ag::DropoutMatMul(v[0], v[1], 0.3f, 5, Tensor(), v[2], v[3]); },
      {x, w, x2, w2});
  // Between forward and backward the op holds x, w and its output only.
  Tensor big = RandomTensor({4096, 256}, 5);
  Var bx(big, true), bw(RandomTensor({256, 8}, 6), true);
  const size_t before = GetCpuAllocatorStats().bytes_in_use;
  Var y = ag::DropoutMatMul(bx, bw, 0.5f, 3, Tensor());
  EXPECT_LT(GetCpuAllocatorStats().bytes_in_use - before, big.nbytes() / 4);
  ag::Sum(y).Backward();
  EXPECT_EQ(bx.grad().rows(), 4096);
}

// ReLU(x w + x2 w2 + b) in one op: the values and gradients of BiasRelu over MatMulSum, for a
// narrow and a wide input, with and without input gradients.
TEST(LinearBiasRelu, WithASecondProductEqualsBiasReluOfTheSum) {
  for (const int64_t width : {9, 260}) {
    for (const bool input_grads : {true, false}) {
      Tensor x = RandomTensor({23, width}, 1), w = RandomTensor({width, 6}, 2), x2 = RandomTensor({23, 4}, 3),
             w2 = RandomTensor({4, 6}, 4), b = RandomTensor({6}, 5);
      Var a[5] = {Var(x, input_grads), Var(w, true), Var(b, true), Var(x2, input_grads), Var(w2, true)};
      Var e[5] = {Var(x, input_grads), Var(w, true), Var(b, true), Var(x2, input_grads), Var(w2, true)};
      Var fused = ag::LinearBiasRelu(a[0], a[1], a[2], a[3], a[4]);
      Var two = ag::BiasRelu(ag::MatMulSum(e[0], e[1], e[3], e[4]), e[2]);
      for (int64_t i = 0; i < two.value().numel(); ++i) {
        ASSERT_NEAR(fused.value().f32()[i], two.value().f32()[i], 1e-4) << width;
      }
      const Tensor r = RandomTensor(two.value().shape(), 6);
      ag::Sum(ag::Mul(fused, Var(r))).Backward();
      ag::Sum(ag::Mul(two, Var(r))).Backward();
      for (int k = 0; k < 5; ++k) {
        ASSERT_EQ(a[k].grad().defined(), e[k].grad().defined()) << "input " << k;
        if (!a[k].grad().defined()) continue;
        for (int64_t i = 0; i < a[k].grad().numel(); ++i) {
          ASSERT_NEAR(a[k].grad().f32()[i], e[k].grad().f32()[i], 1e-3) << width << " input " << k << " element " << i;
        }
      }
    }
  }
  ExpectGradientsMatch(
      [](const std::vector<Var>& v) { return ag::LinearBiasRelu(v[0], v[1], v[2], v[3], v[4]); },
      {RandomTensor({5, 3}, 7), RandomTensor({3, 4}, 8), Tensor::Full({4}, 6.0f), RandomTensor({5, 2}, 9),
       RandomTensor({2, 4}, 10)},
      1e-2f);
}

// A large input's backward runs in blocks of rows (keys by row id or by position, each block's
// input gradient added into a gradient already there): the same gradients as the two-op form.
TEST(DropoutMatMul, BlockedBackwardOfALargeInputEqualsTheTwoOpForm) {
  const int64_t n = 70000;  // 70000 x 256 floats: over the blocked backward's threshold
  Tensor x = RandomTensor({n, 256}, 1), w = RandomTensor({256, 3}, 2), r = RandomTensor({n, 3}, 3);
  std::vector<int64_t> keys(n);
  for (int64_t i = 0; i < n; ++i) keys[i] = 5 * i + 11;
  for (const Tensor& row_ids : {Tensor(), Tensor::FromVector(keys)}) {
    Var xv(x, true), wv(w, true), ex(x, true), ew(w, true);
    // x also reaches the loss directly, so the blocks add into a gradient already there.
    ag::Sum(ag::Add(ag::Sum(ag::Mul(ag::DropoutMatMul(xv, wv, 0.5f, 9, row_ids), Var(r))), ag::Sum(xv))).Backward();
    ag::Sum(ag::Add(ag::Sum(ag::Mul(ag::MatMul(ag::Dropout(ex, 0.5f, 9, true, row_ids), ew), Var(r))), ag::Sum(ex)))
        .Backward();
    const std::vector<float> gx = xv.grad().ToVector<float>(), ex_g = ex.grad().ToVector<float>();
    for (size_t i = 0; i < gx.size(); ++i) ASSERT_NEAR(gx[i], ex_g[i], 1e-4f * (1 + std::fabs(ex_g[i]))) << i;
    const std::vector<float> gw = wv.grad().ToVector<float>(), ew_g = ew.grad().ToVector<float>();
    for (size_t i = 0; i < gw.size(); ++i) ASSERT_NEAR(gw[i], ew_g[i], 1e-3f * (1 + std::fabs(ew_g[i]))) << i;
  }
}

// Backward writes over a gradient only when nothing else holds it: a caller's seed is unchanged.
TEST(InPlaceBackward, LeavesAGradientHeldElsewhereUnchanged) {
  Tensor x = RandomTensor({9, 33}, 1), b = RandomTensor({33}, 2);
  const Tensor seed = RandomTensor({9, 33}, 3);
  const std::vector<float> kept = seed.ToVector<float>();
  Var xv(x, true), bv(b, true);
  ag::BiasRelu(xv, bv).Backward(seed);
  EXPECT_EQ(seed.ToVector<float>(), kept);
  Var dx(x, true);
  ag::Dropout(dx, 0.5f, 11, true).Backward(seed);
  EXPECT_EQ(seed.ToVector<float>(), kept);
  // A gradient made by the next op (Scale) is the node's own: written over. Pre-activations at
  // least 0.1 from the kink, beyond the finite differences' step.
  Tensor away = x.Clone();
  for (int64_t i = 0; i < away.numel(); ++i) {
    const float v = away.f32()[i] + b.f32()[i % 33];
    away.f32()[i] += (v >= 0 ? 0.1f : -0.1f);
  }
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::Scale(ag::BiasRelu(v[0], v[1]), 3.0f); },
                       {away, b});
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::Scale(ag::Dropout(v[0], 0.3f, 4, true), 3.0f); },
                       {x});
}

TEST(BatchedMatmul, GradientsAndValues) {
  Tensor a = RandomTensor({2, 3, 4}, 1), b = RandomTensor({2, 4, 2}, 2);
  Tensor c = ops::BatchedMatmul(a, b);
  Tensor a1 = Tensor::FromVector(std::vector<float>(a.f32() + 12, a.f32() + 24), {3, 4});
  Tensor b1 = Tensor::FromVector(std::vector<float>(b.f32() + 8, b.f32() + 16), {4, 2});
  Tensor c1 = ops::Matmul(a1, b1);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(c.f32()[6 + i], c1.f32()[i], 1e-5);
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::BatchedMatMul(v[0], v[1]); },
                       {a, b});
  ExpectGradientsMatch(
      [](const std::vector<Var>& v) { return ag::BatchedMatMul(v[0], v[1], false, true); },
      {a, RandomTensor({2, 2, 4}, 3)});
}

TEST(Elementwise, HandComputed) {
  Var x(Tensor::FromVector<float>({-2, 0.5f}));
  EXPECT_EQ(ag::Relu(x).value().ToVector<float>(), (std::vector<float>{0, 0.5f}));
  EXPECT_FLOAT_EQ(ag::LeakyRelu(x, 0.2f).value().f32()[0], -0.4f);
  EXPECT_NEAR(ag::Elu(x).value().f32()[0], std::expm1(-2.0f), 1e-6);
  EXPECT_NEAR(ag::Sigmoid(x).value().f32()[1], 1.0f / (1.0f + std::exp(-0.5f)), 1e-6);
  EXPECT_NEAR(ag::Tanh(x).value().f32()[0], std::tanh(-2.0f), 1e-6);
  EXPECT_NEAR(ag::Exp(x).value().f32()[1], std::exp(0.5f), 1e-6);
}

TEST(Elementwise, Gradients) {
  // Keep values away from the kinks of relu-like functions.
  Tensor x = RandomTensor({4, 3}, 5);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::fabs(x.f32()[i]) < 0.05f) x.f32()[i] = 0.3f;
  }
  using F = std::function<Var(const Var&)>;
  std::vector<F> fns = {[](const Var& v) { return ag::Relu(v); },
                        [](const Var& v) { return ag::LeakyRelu(v, 0.2f); },
                        [](const Var& v) { return ag::Elu(v, 1.0f); },
                        [](const Var& v) { return ag::Tanh(v); },
                        [](const Var& v) { return ag::Sigmoid(v); },
                        [](const Var& v) { return ag::Exp(v); },
                        [](const Var& v) { return ag::Scale(v, -3.0f); },
                        [](const Var& v) { return ag::RowL2Normalize(v); },
                        [](const Var& v) { return ag::LogSoftmax(v); },
                        [](const Var& v) { return ag::Mean(v); }};
  for (auto& fn : fns) {
    ExpectGradientsMatch([&](const std::vector<Var>& v) { return fn(v[0]); }, {x}, 1e-3f);
  }
  Tensor y = RandomTensor({4, 3}, 6);
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::Mul(v[0], v[1]); }, {x, y});
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::Add(v[0], v[1]); }, {x, y});
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::Sub(v[0], v[1]); }, {x, y});
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::AddBias(v[0], v[1]); },
                       {x, RandomTensor({3}, 7)});
  // Inputs away from the kink (|x + b| > 0.05) so finite differences see one side of it.
  Tensor xr = RandomTensor({4, 3}, 11);
  for (int64_t i = 0; i < xr.numel(); ++i) xr.f32()[i] += xr.f32()[i] >= 0 ? 0.3f : -0.3f;
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::BiasRelu(v[0], v[1]); },
                       {xr, Tensor::Zeros({3})});
  // x W + b away from the kink: W = I (3 x 3) perturbed by the check itself is smooth enough.
  Tensor eye = Tensor::Zeros({3, 3});
  for (int i = 0; i < 3; ++i) eye.f32()[i * 4] = 1.0f;
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::LinearBiasRelu(v[0], v[1], v[2]); },
                       {xr, eye, Tensor::Zeros({3})}, 1e-2f);
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::ScaleRows(v[0], v[1]); },
                       {RandomTensor({4, 6}, 8), RandomTensor({4, 2}, 9)});
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::SumRows(v[0]); }, {x});
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::MeanMiddle(v[0]); },
                       {RandomTensor({3, 4, 2}, 10)});
}

TEST(ConcatSplit, ValuesAndGradients) {
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
  Tensor b = Tensor::FromVector<float>({5, 6}, {2, 1});
  Tensor c = ops::Concat({a, b});
  EXPECT_EQ(c.ToVector<float>(), (std::vector<float>{1, 2, 5, 3, 4, 6}));
  auto parts = ops::Split(c, {2, 1});
  EXPECT_EQ(parts[1].ToVector<float>(), (std::vector<float>{5, 6}));
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::Concat({v[0], v[1]}); },
                       {RandomTensor({3, 2}, 1), RandomTensor({3, 4}, 2)});
  ExpectGradientsMatch(
      [](const std::vector<Var>& v) {
        auto s = ag::Split(v[0], {1, 3});
        return ag::Concat({ag::Scale(s[1], 2.0f), s[0]});
      },
      {RandomTensor({3, 4}, 3)});
}

// Rows of several parts one after another (the edge filter's pieces): values, a part without
// rows, gradients against finite differences, and a part that needs none.
TEST(ConcatRows, ValuesAndGradients) {
  Var a(Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2})), b(Tensor::FromVector<float>({5, 6}, {1, 2}));
  Var none(Tensor::Empty({0, 2}));
  EXPECT_EQ(ag::ConcatRows({a, none, b}).value().ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ag::ConcatRows({a, none, b}).value().shape(), (Shape{3, 2}));
  ExpectGradientsMatch(
      [](const std::vector<Var>& v) {
        return ag::Tanh(ag::ConcatRows({v[0], ag::Scale(v[1], 2.0f), v[0]}));
      },
      {RandomTensor({3, 4}, 4), RandomTensor({2, 4}, 5)});
  Var p = Var::Parameter(RandomTensor({2, 3}, 6));
  Var loss = ag::Sum(ag::Mul(ag::ConcatRows({Var(RandomTensor({4, 3}, 7)), p}), ag::ConcatRows({p, p, p})));
  loss.Backward();
  ASSERT_TRUE(p.grad().defined());
  EXPECT_EQ(p.grad().shape(), (Shape{2, 3}));
}

TEST(Index, GatherScatter) {
  Tensor x = TinyX();
  Tensor idx = Tensor::FromVector<int32_t>({2, 0, 2});
  EXPECT_EQ(ops::GatherRows(x, idx).ToVector<float>(), (std::vector<float>{5, 6, 1, 2, 5, 6}));
  EXPECT_EQ(ops::ScatterAddRows(x, idx, 4).ToVector<float>(),
            (std::vector<float>{3, 4, 0, 0, 6, 8, 0, 0}));
  ExpectGradientsMatch([&](const std::vector<Var>& v) { return ag::GatherRows(v[0], idx); },
                       {RandomTensor({3, 2}, 41)});
  ExpectGradientsMatch(
      [&](const std::vector<Var>& v) { return ag::ScatterAddRows(v[0], idx, 4); },
      {RandomTensor({3, 2}, 42)});
}

// The first rows as a view: GatherRows of 0 .. n-1 in value and gradient, no copy made, and
// neither tensor a sole owner (so no op writes over one through the other).
TEST(Index, FirstRowsIsAViewWithGatherRowsGradient) {
  Tensor x = TinyX();
  const Tensor view = x.FirstRows(2);
  EXPECT_EQ(view.shape(), (Shape{2, 2}));
  EXPECT_EQ(view.raw(), x.raw());
  EXPECT_EQ(view.ToVector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_FALSE(view.sole_owner());
  EXPECT_EQ(x.FirstRows(0).numel(), 0);
  ExpectGradientsMatch([](const std::vector<Var>& v) { return ag::FirstRows(v[0], 2); }, {RandomTensor({3, 2}, 43)});
  // Its gradient adds into one already there.
  Var a(RandomTensor({3, 2}, 44), true);
  ag::Sum(ag::Add(ag::Sum(ag::FirstRows(a, 2)), ag::Sum(a))).Backward();
  EXPECT_EQ(a.grad().ToVector<float>(), (std::vector<float>{2, 2, 2, 2, 1, 1}));
}

TEST(Losses, HandComputedAndGradients) {
  // log_softmax([0, 0]) = [-log 2, -log 2]; NLL = log 2.
  Var logits(Tensor::Zeros({2, 2}));
  Tensor labels = Tensor::FromVector<int64_t>({1, 0});
  Tensor rows = Tensor::FromVector<int32_t>({0, 1});
  EXPECT_NEAR(ag::NllLoss(ag::LogSoftmax(logits), labels, rows).value().Item(), std::log(2.0f),
              1e-6);
  // BCE(0, 1) = log 2.
  EXPECT_NEAR(ag::BceWithLogits(Var(Tensor::Zeros({1})), Tensor::Full({1}, 1.0f)).value().Item(),
              std::log(2.0f), 1e-6);
  Tensor labels3 = Tensor::FromVector<int64_t>({2, 0, 1, 1});
  Tensor rows3 = Tensor::FromVector<int32_t>({0, 2, 3});
  ExpectGradientsMatch(
      [&](const std::vector<Var>& v) { return ag::NllLoss(ag::LogSoftmax(v[0]), labels3, rows3); },
      {RandomTensor({4, 3}, 51)}, 1e-3f);
  Tensor targets = Tensor::FromVector<float>({0, 1, 1, 0});
  ExpectGradientsMatch(
      [&](const std::vector<Var>& v) { return ag::BceWithLogits(v[0], targets); },
      {RandomTensor({4}, 52, -3, 3)}, 1e-3f);
}

// PhiloxBlocks draws many blocks at once (32 in AVX2 lanes, the rest one by one): each must be
// PhiloxBlock's, for any count and any counters.
TEST(Philox, ManyBlocksAtOnceAreEachTheBlockItself) {
  RandomStream rng(3, 4);
  for (int64_t n : {0, 1, 31, 32, 33, 64, 100}) {
    std::vector<uint64_t> lo(n), hi(n);
    for (int64_t i = 0; i < n; ++i) lo[i] = rng.NextU64(), hi[i] = i % 3 == 0 ? rng.NextU64() : i;
    std::vector<uint32_t> words(4 * n);
    PhiloxBlocks(0xF00DF00DF00Dull, lo.data(), hi.data(), n, words.data());
    for (int64_t i = 0; i < n; ++i) {
      const Philox4 b = PhiloxBlock(0xF00DF00DF00Dull, lo[i], hi[i]);
      for (int w = 0; w < 4; ++w) ASSERT_EQ(words[4 * i + w], b.v[w]) << "block " << i << " of " << n;
    }
  }
  // MixKey is MixStep over its parts, so that keys sharing leading parts can share their steps.
  EXPECT_EQ(MixKey(1, 2, 3, 4), MixStep(MixStep(MixStep(MixStep(kMixKeyStart, 1), 2), 3), 4));
  EXPECT_NE(MixKey(1, 2, 3, 4), MixKey(1, 2, 4, 3));
}

TEST(Dropout, SeededAndUnbiased) {
  Tensor x = Tensor::Full({200, 50}, 1.0f);
  Var a = ag::Dropout(Var(x), 0.5f, 7, true);
  Var b = ag::Dropout(Var(x), 0.5f, 7, true);
  Var c = ag::Dropout(Var(x), 0.5f, 8, true);
  EXPECT_EQ(a.value().ToVector<float>(), b.value().ToVector<float>());
  EXPECT_NE(a.value().ToVector<float>(), c.value().ToVector<float>());
  double mean = 0;
  for (float v : a.value().ToVector<float>()) mean += v;
  EXPECT_NEAR(mean / x.numel(), 1.0, 0.05);
  // Row r's mask depends on its id only: row ids {5, 6} reproduce rows 5 and 6.
  Tensor ids = Tensor::FromVector<int64_t>({5, 6});
  Tensor m = ops::DropoutMask(2, 50, 0.5f, 7, ids);
  Tensor full = ops::DropoutMask(200, 50, 0.5f, 7);
  for (int j = 0; j < 100; ++j) EXPECT_EQ(m.f32()[j], full.f32()[250 + j]);
  EXPECT_EQ(ag::Dropout(Var(x), 0.5f, 7, false).value().f32(), x.f32());
  // Entry (r, j) is decided by Philox block (seed; j / 8, r) (base/rng.h), 16 bits of it: half
  // j % 2 of word (j % 8) / 2, kept iff at least p * 2^16.
  for (int64_t r : {0, 3, 199}) {
    for (int64_t j : {0, 5, 47, 49}) {
      const Philox4 b = PhiloxBlock(7, j / 8, r);
      const uint32_t bits = (b.v[(j % 8) / 2] >> (16 * (j % 2))) & 0xFFFF;
      const float expect = bits >= 32768 ? 2.0f : 0.0f;
      EXPECT_EQ(full.f32()[r * 50 + j], expect) << r << "," << j;
    }
  }
  ExpectGradientsMatch(
      [](const std::vector<Var>& v) { return ag::Dropout(v[0], 0.3f, 3, true); },
      {RandomTensor({5, 4}, 53)});
  ExpectGradientsMatch(  // 133 columns: the 128-column vector stretch and a partial block
      [](const std::vector<Var>& v) { return ag::Dropout(v[0], 0.4f, 9, true); },
      {RandomTensor({3, 133}, 54)});
}

TEST(Dropout, SameRowsTwiceShareOneResultAndGradientsAddUp) {
  Var x = Var::Parameter(RandomTensor({6, 9}, 81));
  Tensor ids = Tensor::FromVector<int64_t>({10, 11, 12, 13, 14, 15});
  Tensor same_ids = ids.Clone();
  Var a = ag::Dropout(x, 0.5f, 5, true, ids);
  Var b = ag::Dropout(x, 0.5f, 5, true, same_ids);  // equal ids in another tensor
  EXPECT_EQ(a.node(), b.node());
  Var c = ag::Dropout(x, 0.5f, 6, true, ids);  // another seed: a new mask
  EXPECT_NE(c.node(), a.node());
  Tensor other = Tensor::FromVector<int64_t>({10, 11, 12, 13, 14, 16});
  EXPECT_NE(ag::Dropout(x, 0.5f, 6, true, other).node(), c.node());
  // d/dx sum(D(x) + D(x)) = 2 mask.
  ag::Sum(ag::Add(a, b)).Backward();
  const Tensor mask = ops::DropoutMask(6, 9, 0.5f, 5, ids);
  for (int64_t i = 0; i < mask.numel(); ++i) EXPECT_EQ(x.grad().f32()[i], 2.0f * mask.f32()[i]);
}

TEST(Dropout, FusedIsExactlyTheMaskProduct) {
  for (int64_t cols : {1, 50, 64, 130}) {
    Tensor x = RandomTensor({33, cols}, 60 + cols);  // signed values
    Tensor ids = Tensor::Empty({33}, DType::kInt64);
    for (int64_t r = 0; r < 33; ++r) ids.i64()[r] = 1000 + 3 * r;
    const Tensor expect = ops::Mul(x, ops::DropoutMask(33, cols, 0.35f, 11, ids));
    const Tensor got = ops::Dropout(x, 0.35f, 11, ids);
    ASSERT_EQ(got.ShapeString(), x.ShapeString());
    const std::vector<float> e = expect.ToVector<float>(), g = got.ToVector<float>();
    ASSERT_EQ(e.size(), g.size());
    EXPECT_EQ(0, std::memcmp(e.data(), g.data(), e.size() * sizeof(float))) << cols << " columns";
  }
}

// Rows of every width give exactly the per-block masks that every device computes (ops/shared),
// signed inputs included: the vectorised 64-column stretches, and the blocks past them, drawn
// across rows; the keep rate is 1 - p.
TEST(Dropout, RowsOfAnyWidthMatchTheBlockReference) {
  for (int64_t cols : {1, 7, 8, 16, 25, 64, 100, 128, 130, 256, 300}) {
    constexpr int64_t kRows = 300;  // tasks of several rows, the last one partial
    Tensor x = RandomTensor({kRows, cols}, 70 + cols);
    Tensor ids = Tensor::Empty({kRows}, DType::kInt64);
    for (int64_t r = 0; r < kRows; ++r) ids.i64()[r] = 77 * r + 5;
    const Tensor got = ops::Dropout(x, 0.3f, 21, ids);
    const Tensor mask = ops::DropoutMask(kRows, cols, 0.3f, 21, ids);
    std::vector<float> expect(x.numel()), expect_mask(x.numel());
    for (int64_t r = 0; r < kRows; ++r) {
      for (int64_t j = 0; j < cols; j += ops::shared::kDropoutBlockCols) {
        const uint64_t id = static_cast<uint64_t>(ids.i64()[r]);
        ops::shared::DropoutBlock(21, id, j, cols, 0.3f, 1.0f / 0.7f, x.f32() + r * cols, expect.data() + r * cols);
        ops::shared::DropoutBlock(21, id, j, cols, 0.3f, 1.0f / 0.7f, nullptr, expect_mask.data() + r * cols);
      }
    }
    EXPECT_EQ(0, std::memcmp(expect.data(), got.f32(), expect.size() * sizeof(float))) << cols;
    EXPECT_EQ(0, std::memcmp(expect_mask.data(), mask.f32(), expect.size() * sizeof(float))) << cols;
  }
  for (int64_t cols : {256, 20}) {
    const Tensor mask = ops::DropoutMask(400, cols, 0.3f, 4);
    int64_t kept = 0;
    for (int64_t i = 0; i < mask.numel(); ++i) kept += mask.f32()[i] != 0.0f;
    // 3.5 and 4.4 standard deviations of the kept fraction of 102,400 and 8,000 entries
    EXPECT_NEAR(static_cast<double>(kept) / mask.numel(), 0.7, cols == 256 ? 0.005 : 0.0225) << cols;
  }
}

TEST(Autograd, AccumulatesAndNoGrad) {
  Var w = Var::Parameter(Tensor::Full({2}, 3.0f));
  ag::Sum(ag::Scale(w, 2.0f)).Backward();
  ag::Sum(ag::Scale(w, 2.0f)).Backward();
  EXPECT_EQ(w.grad().ToVector<float>(), (std::vector<float>{4, 4}));
  w.ZeroGrad();
  {
    ag::NoGradGuard guard;
    Var y = ag::Scale(w, 2.0f);
    EXPECT_FALSE(y.requires_grad());
  }
  // Reused input: d/dw sum(w * w) = 2w.
  ag::Sum(ag::Mul(w, w)).Backward();
  EXPECT_EQ(w.grad().ToVector<float>(), (std::vector<float>{6, 6}));
}

TEST(Autograd, ReleasesEachGradientOnceItsClosureHasRun) {
  // probe -> c = 3 probe -> sum: when probe's closure runs, c's has run and c's gradient is gone.
  Var a = Var::Parameter(RandomTensor({4, 3}, 74));
  std::shared_ptr<ag::Node> c_node;
  bool c_grad_alive = true;
  Var probe = ag::MakeResult(ag::Scale(a, 2.0f).value(), "Probe", {a},
                             [a_ref = ag::GradRef(a), &c_node, &c_grad_alive](const Tensor& g) {
                               c_grad_alive = c_node->grad.defined();
                               ag::AccumulateGrad(a_ref, ops::Scale(g, 2.0f), "Probe");
                             });
  Var c = ag::Scale(probe, 3.0f);
  c_node = c.node();
  ag::Sum(c).Backward();
  EXPECT_FALSE(c_grad_alive);
  EXPECT_FALSE(c_node->grad.defined());
  for (float v : a.grad().ToVector<float>()) EXPECT_FLOAT_EQ(v, 6.0f);
}

TEST(Autograd, FreesIntermediatesNoBackwardNeeds) {
  // relu(x w + b) * 2: the product and the biased sum are dropped by the forward code and read by
  // no backward, so their values are released (relu's backward holds its own output tensor).
  Tensor xt = RandomTensor({4, 3}, 71);
  Var x(xt);
  Var w = Var::Parameter(RandomTensor({3, 5}, 72));
  Var b = Var::Parameter(RandomTensor({5}, 73));
  Var y = ag::Scale(ag::Relu(ag::AddBias(ag::MatMul(x, w), b)), 2.0f);
  const auto relu = y.node()->inputs[0];
  const auto biased = relu->inputs[0];
  const auto product = biased->inputs[0];
  EXPECT_FALSE(biased->value.defined());
  EXPECT_FALSE(product->value.defined());
  EXPECT_EQ(ShapeToString(product->shape), "[4, 5]");
  // A handle keeps a value alive; dropping the last one releases it.
  Var z = ag::Relu(ag::Scale(w, 3.0f));
  Var kept = ag::Scale(w, 3.0f);
  Var sum = ag::Add(kept, z);
  EXPECT_TRUE(sum.node()->inputs[0]->value.defined());
  kept = Var();
  EXPECT_FALSE(sum.node()->inputs[0]->value.defined());
  // Gradients are unchanged: d/dw sum(2 relu(x w + b)) = x^T (2 [x w + b > 0]).
  ag::Sum(y).Backward();
  Tensor pre = ops::Add(ops::Matmul(xt, w.value()), b.value());
  Tensor mask = ops::Apply(ops::UnaryOp::kRelu, pre);
  for (int64_t i = 0; i < mask.numel(); ++i) mask.f32()[i] = mask.f32()[i] > 0 ? 2.0f : 0.0f;
  const std::vector<float> expect = ops::Matmul(xt, mask, true, false).ToVector<float>();
  const std::vector<float> got = w.grad().ToVector<float>();
  ASSERT_EQ(got.size(), expect.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expect[i], 1e-5) << i;
}

TEST(AutogradDeathTest, ShapeMismatchNamesOpAndShapes) {
  Var a(Tensor::Zeros({2, 3})), b(Tensor::Zeros({4, 5}));
  EXPECT_DEATH(ag::MatMul(a, b), "Matmul: inner dimensions differ: \\[2, 3\\] x \\[4, 5\\]");
  EXPECT_DEATH(ag::Add(a, b), "Add: shape mismatch \\[2, 3\\] vs \\[4, 5\\]");
}

}  // namespace
}  // namespace fg
