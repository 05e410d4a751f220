#include "flexgraph/nn/layer_norm.h"

#include <algorithm>
#include <bit>
#include <cstdint>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/ops/norm_ops.h"

namespace fg {
namespace ag {
namespace {

// e^a for a in [-87.4, 0] (Cody-Waite reduction to 2^k e^r, |r| <= ln2 / 2, and Cephes'
// degree-6 polynomial for e^r).
inline float ExpNonPositive(float a) {
  const float k = (a * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  const float r = a - k * 0.693359375f + k * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return p * std::bit_cast<float>(static_cast<uint32_t>(static_cast<int32_t>(k) + 127) << 23);
}

// 1 / (1 + e^-x) within 2e-7 relative, from e^-|x| (|x| capped at 87) and a select on the sign,
// in integer operations only so that loops over it vectorise (a float compare would not).
inline float SigmoidApprox(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t magnitude = std::min(bits & 0x7fffffffu, 0x42ae0000u);  // 87.0f
  const float e = ExpNonPositive(-std::bit_cast<float>(magnitude));
  const float inv = 1.0f / (1.0f + e);
  const uint32_t negative = static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(inv) & ~negative) |
                              (std::bit_cast<uint32_t>(e * inv) & negative));
}

// Elements per parallel chunk of SiLU.
constexpr int64_t kSiluChunk = 4096;

// s = sigmoid(x), y = x s over [0, n).
void SiluForward(const float* __restrict x, float* __restrict s, float* __restrict y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    s[i] = SigmoidApprox(x[i]);
    y[i] = x[i] * s[i];
  }
}

void SiluBackward(const float* __restrict x, const float* __restrict s, const float* __restrict gy,
                  float* __restrict gx, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) gx[i] = gy[i] * s[i] * (1.0f + x[i] * (1.0f - s[i]));
}

// LayerNormRows' forward, checked (gain and bias on x's device).
ops::LayerNormed LayerNormForward(const Var& x, const Var& gain, const Var& bias, float eps) {
  return ops::LayerNormRows(x.value(), gain.value(), bias.value(), eps);
}

// LayerNormRows' backward from gy, the output's gradient.
void LayerNormBackward(const GradRef& x, const GradRef& gain, const GradRef& bias, const Tensor& gv,
                       const ops::LayerNormed& f, const Tensor& gy) {
  Tensor gx, gg, gb;
  ops::LayerNormRowsBackward(gy, gv, f, x.requires_grad() ? &gx : nullptr, gain.requires_grad() ? &gg : nullptr,
                             bias.requires_grad() ? &gb : nullptr);
  if (x.requires_grad()) AccumulateGrad(x, gx, "LayerNormRows");
  if (gain.requires_grad()) AccumulateGrad(gain, gg.Reshape(gain.shape()), "LayerNormRows");
  if (bias.requires_grad()) AccumulateGrad(bias, gb.Reshape(bias.shape()), "LayerNormRows");
}

}  // namespace

Var LayerNormRows(const Var& x, const Var& gain, const Var& bias, float eps) {
  ops::LayerNormed f = LayerNormForward(x, gain, bias, eps);
  Tensor y = f.y;
  f.y = Tensor();  // the backward reads xhat and rstd only
  return MakeResult(y, "LayerNormRows", {x, gain, bias},
                    [x = GradRef(x), gain = GradRef(gain), bias = GradRef(bias), gv = gain.value(),
                     f = std::move(f)](const Tensor& gy) { LayerNormBackward(x, gain, bias, gv, f, gy); });
}

Var LayerNormSilu(const Var& x, const Var& gain, const Var& bias, float eps) {
  if (x.value().device() != Device::kCpu) return Silu(LayerNormRows(x, gain, bias, eps));
  ops::LayerNormed f = LayerNormForward(x, gain, bias, eps);
  const int64_t n = f.xhat.dim(0), d = f.xhat.dim(1);
  Tensor out = Tensor::Empty({n, d}), sig = Tensor::Empty({n, d});
  const float* yp = f.y.f32();
  float* op = out.f32();
  float* sp = sig.f32();
  ParallelFor(0, (n * d + kSiluChunk - 1) / kSiluChunk, [&](int64_t c) {
    const int64_t i = c * kSiluChunk;
    SiluForward(yp + i, sp + i, op + i, std::min(kSiluChunk, n * d - i));
  });
  // Kept: xhat, rstd and the sigmoid; the normalised output y = xhat gain + bias is recomputed.
  f.y = Tensor();
  return MakeResult(out, "LayerNormSilu", {x, gain, bias},
                    [x = GradRef(x), gain = GradRef(gain), bias = GradRef(bias), gv = gain.value(),
                     bv = bias.value(), f = std::move(f), sig, n, d](const Tensor& gout) {
    Tensor gy = Tensor::Empty({n, d});
    const float* h = f.xhat.f32();
    const float* g = gv.f32();
    const float* b = bv.f32();
    const float* sp = sig.f32();
    const float* go = gout.f32();
    float* out = gy.f32();
    ParallelForRowChunks(n, d, [&](int64_t r) {
      float y[512];
      for (int64_t j0 = 0; j0 < d; j0 += 512) {
        const int64_t w = std::min<int64_t>(512, d - j0), k = r * d + j0;
        for (int64_t j = 0; j < w; ++j) y[j] = h[k + j] * g[j0 + j] + b[j0 + j];
        SiluBackward(y, sp + k, go + k, out + k, w);
      }
    });
    LayerNormBackward(x, gain, bias, gv, f, gy);
  });
}

Var Silu(const Var& x) {
  const Tensor& xv = x.value();
  if (xv.device() != Device::kCpu) return Mul(x, Sigmoid(x));
  const int64_t n = xv.numel();
  Tensor y = Tensor::Empty(xv.shape()), sig = Tensor::Empty(xv.shape());
  const float* xp = xv.f32();
  float* yp = y.f32();
  float* sp = sig.f32();
  ParallelFor(0, (n + kSiluChunk - 1) / kSiluChunk, [&](int64_t c) {
    const int64_t i = c * kSiluChunk;
    SiluForward(xp + i, sp + i, yp + i, std::min(kSiluChunk, n - i));
  });
  return MakeResult(y, "Silu", {x}, [x = GradRef(x), xv, sig, n](const Tensor& gy) {
    if (!x.requires_grad()) return;
    Tensor gx = Tensor::Empty(xv.shape());
    const float* xp = xv.f32();
    const float* sp = sig.f32();
    const float* go = gy.f32();
    float* out = gx.f32();
    // d/dx x s(x) = s (1 + x (1 - s)).
    ParallelFor(0, (n + kSiluChunk - 1) / kSiluChunk, [&](int64_t c) {
      const int64_t i = c * kSiluChunk;
      SiluBackward(xp + i, sp + i, go + i, out + i, std::min(kSiluChunk, n - i));
    });
    AccumulateGrad(x, gx, "Silu");
  });
}

}  // namespace ag

namespace nn {

LayerNorm::LayerNorm(int64_t dim) {
  gain_ = AddParameter("weight", Tensor::Full({dim}, 1.0f));
  bias_ = AddParameter("bias", Tensor::Zeros({dim}));
}

}  // namespace nn
}  // namespace fg
