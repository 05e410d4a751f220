// ag::Checkpoint: gradients against finite differences, the same losses and gradients as the
// computation without it (inputs, parameters read inside, several outputs, unused and identity
// outputs), and the intermediates not kept between the forward and the backward pass.
#include <gtest/gtest.h>

#include "flexgraph/autograd/checkpoint.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/nn/layer_norm.h"
#include "flexgraph/nn/module.h"
#include "tests/core/gradcheck.h"

namespace fg {
namespace {

using ag::Var;
using testing::ExpectGradientsMatch;
using testing::RandomTensor;

// A piece with two inputs and two outputs, reading parameters: (LN(SiLU(a W) + b), a + b).
struct Piece {
  nn::Linear linear{4, 4, true, nn::Init::kGlorot, 3};
  nn::LayerNorm norm{4};
  std::vector<Var> operator()(const std::vector<Var>& in) const {
    Var y = norm.Forward(ag::Add(ag::Silu(linear.Forward(in[0])), in[1]));
    return {y, ag::Add(in[0], in[1])};
  }
  std::vector<Var> Params() const {
    return {linear.weight(), linear.bias()};
  }
};

TEST(CheckpointTest, GradientsMatchFiniteDifferences) {
  Piece piece;
  ExpectGradientsMatch(
      [&](const std::vector<Var>& v) {
        std::vector<Var> out = ag::Checkpoint(piece, {v[0], v[1]});
        return ag::Add(ag::Mul(out[0], out[0]), ag::Silu(out[1]));
      },
      {RandomTensor({5, 4}, 1), RandomTensor({5, 4}, 2)});
}

// Loss and every gradient (inputs, parameters) of `piece` run twice in a row (x -> piece ->
// piece), with or without checkpoints.
struct Result {
  float loss;
  std::vector<Tensor> grads;
};
Result RunTwice(const Piece& piece, bool checkpoint, bool input_grad) {
  Var a(RandomTensor({6, 4}, 11), input_grad), b(RandomTensor({6, 4}, 12), input_grad);
  std::vector<Var> h = {a, b};
  for (int k = 0; k < 2; ++k) h = checkpoint ? ag::Checkpoint(piece, h) : piece(h);
  Var loss = ag::Sum(ag::Mul(h[0], ag::Silu(h[1])));
  loss.Backward();
  Result r{loss.value().Item(), {}};
  for (const Var& p : piece.Params()) {
    r.grads.push_back(p.grad().Clone());
    p.ZeroGrad();
  }
  if (input_grad) {
    r.grads.push_back(a.grad().Clone());
    r.grads.push_back(b.grad().Clone());
  }
  return r;
}

void ExpectSame(const Result& x, const Result& y) {
  EXPECT_EQ(x.loss, y.loss);
  ASSERT_EQ(x.grads.size(), y.grads.size());
  for (size_t i = 0; i < x.grads.size(); ++i) {
    ASSERT_EQ(x.grads[i].numel(), y.grads[i].numel());
    for (int64_t j = 0; j < x.grads[i].numel(); ++j) {
      EXPECT_NEAR(x.grads[i].f32()[j], y.grads[i].f32()[j], 1e-6) << "gradient " << i << " [" << j << "]";
    }
  }
}

TEST(CheckpointTest, SameLossAndGradientsAsWithout) {
  Piece piece;
  ExpectSame(RunTwice(piece, false, true), RunTwice(piece, true, true));
  // Inputs that need no gradient: the parameters read inside still get theirs.
  ExpectSame(RunTwice(piece, false, false), RunTwice(piece, true, false));
}

TEST(CheckpointTest, UnusedIdentityAndUndefinedOutputs) {
  nn::Linear linear(3, 3, false, nn::Init::kGlorot, 5);
  Var x = Var::Parameter(RandomTensor({4, 3}, 21));
  auto fn = [&](const std::vector<Var>& in) {
    return std::vector<Var>{linear.Forward(in[0]), in[0], Var(), linear.Forward(in[0])};
  };
  std::vector<Var> out = ag::Checkpoint(fn, {x, Var()});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_FALSE(out[2].defined());
  // Output 3 unused; output 1 is the input itself.
  ag::Sum(ag::Add(out[0], out[1])).Backward();
  const Tensor gx = x.grad().Clone(), gw = linear.weight().grad().Clone();
  x.ZeroGrad();
  linear.weight().ZeroGrad();
  ag::Sum(ag::Add(linear.Forward(x), x)).Backward();
  for (int64_t i = 0; i < gx.numel(); ++i) EXPECT_EQ(gx.f32()[i], x.grad().f32()[i]);
  for (int64_t i = 0; i < gw.numel(); ++i) EXPECT_EQ(gw.f32()[i], linear.weight().grad().f32()[i]);
}

TEST(CheckpointTest, KeepsNoIntermediatesUntilTheBackwardPass) {
  // Eight wide layers on 2048 rows: recorded, each keeps its [2048, 256] activations (2 MiB) for
  // the backward pass; checkpointed, only the output between the passes.
  nn::Linear up(16, 256, true, nn::Init::kGlorot, 7), down(256, 16, true, nn::Init::kGlorot, 8);
  auto fn = [&](const std::vector<Var>& in) {
    Var h = ag::Silu(up.Forward(in[0]));
    for (int k = 0; k < 8; ++k) h = ag::Silu(ag::Add(h, h));
    return std::vector<Var>{down.Forward(h)};
  };
  Var x = Var::Parameter(RandomTensor({2048, 16}, 31));
  auto held = [&](bool checkpoint) {
    const size_t before = GetCpuAllocatorStats().bytes_in_use;
    std::vector<Var> out = checkpoint ? ag::Checkpoint(fn, {x}) : fn({x});
    const size_t after = GetCpuAllocatorStats().bytes_in_use;
    ag::Sum(out[0]).Backward();
    return after - before;
  };
  const size_t recorded = held(false), checkpointed = held(true);
  std::printf("held between the passes: %zu bytes recorded, %zu checkpointed\n", recorded,
              checkpointed);
  EXPECT_GT(recorded, size_t{16} << 20);
  EXPECT_LT(checkpointed, size_t{1} << 20);
  EXPECT_TRUE(x.grad().defined());
}

}  // namespace
}  // namespace fg
