#include "flexgraph/nn/layer_norm.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <vector>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"

namespace fg {
namespace ag {
namespace {

// Sums in 8 lanes (vectorised; the order, and so the result, depends only on d).
inline float Sum8(const float* x, int64_t d) {
  float lane[8] = {};
  int64_t j = 0;
  for (; j + 8 <= d; j += 8) {
    for (int k = 0; k < 8; ++k) lane[k] += x[j + k];
  }
  float s = 0;
  for (; j < d; ++j) s += x[j];
  for (int k = 0; k < 8; ++k) s += lane[k];
  return s;
}

inline float SquaredDeviation8(const float* x, float mean, int64_t d) {
  float lane[8] = {};
  int64_t j = 0;
  for (; j + 8 <= d; j += 8) {
    for (int k = 0; k < 8; ++k) lane[k] += (x[j + k] - mean) * (x[j + k] - mean);
  }
  float s = 0;
  for (; j < d; ++j) s += (x[j] - mean) * (x[j] - mean);
  for (int k = 0; k < 8; ++k) s += lane[k];
  return s;
}

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

// Calls f(r) for rows [0, n) of width d in parallel chunks of about 16K elements (a small
// matrix runs on the calling thread: a parallel region would cost more than its rows).
template <typename F>
void ForRowChunks(int64_t n, int64_t d, F&& f) {
  const int64_t rows = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(d, 1));
  ParallelFor(0, (n + rows - 1) / rows, [&](int64_t c) {
    for (int64_t r = c * rows; r < std::min(n, (c + 1) * rows); ++r) f(r);
  });
}

// Row blocks of the parameter gradients' partial sums: a function of n only, so that the summed
// gradients do not depend on the thread count.
int ParameterBlocks(int64_t n) { return static_cast<int>(std::clamp<int64_t>(n / 512, 1, 16)); }

// The normalised rows, their inverse deviations and the output of LayerNormRows.
struct LayerNormed {
  Tensor xhat, rstd, y;
};

LayerNormed LayerNormForward(const Var& x, const Var& gain, const Var& bias, float eps) {
  const Tensor& xv = x.value();
  FG_CHECK(xv.device() == Device::kCpu) << "LayerNormRows: CPU only";
  FG_CHECK(xv.rank() == 2 && gain.value().numel() == xv.dim(1) && bias.value().numel() == xv.dim(1))
      << "LayerNormRows: " << xv.ShapeString() << " with gain " << gain.value().ShapeString();
  const int64_t n = xv.dim(0), d = xv.dim(1);
  Tensor xhat = Tensor::Empty({n, d}), y = Tensor::Empty({n, d}), rstd = Tensor::Empty({n});
  const float* g = gain.value().f32();
  const float* b = bias.value().f32();
  const float* xp = xv.f32();
  float* hp = xhat.f32();
  float* yp = y.f32();
  float* rp = rstd.f32();
  ForRowChunks(n, d, [&](int64_t r) {
    const float* xr = xp + r * d;
    const float mean = Sum8(xr, d) / d;
    const float rs = 1.0f / std::sqrt(SquaredDeviation8(xr, mean, d) / d + eps);
    rp[r] = rs;
    float* hr = hp + r * d;
    float* yr = yp + r * d;
    for (int64_t j = 0; j < d; ++j) {
      hr[j] = (xr[j] - mean) * rs;
      yr[j] = hr[j] * g[j] + b[j];
    }
  });
  return {xhat, rstd, y};
}

// LayerNormRows' backward from gy, the output's gradient.
void LayerNormBackward(const GradRef& x, const GradRef& gain, const GradRef& bias, const Tensor& gv,
                       const Tensor& xhat, const Tensor& rstd, int64_t n, int64_t d,
                       const Tensor& gy) {
  const float* go = gy.f32();
  const float* h = xhat.f32();
  const float* gp = gv.f32();
  if (x.requires_grad()) {
    Tensor gx = Tensor::Empty({n, d});
    float* gxp = gx.f32();
    const float* rp = rstd.f32();
    ForRowChunks(n, d, [&](int64_t r) {
      const float* gor = go + r * d;
      const float* hr = h + r * d;
      float* out = gxp + r * d;
      // out = rstd (t - mean(t) - xhat mean(t xhat)), t = gy * gain; t kept in `out` meanwhile.
      for (int64_t j = 0; j < d; ++j) out[j] = gor[j] * gp[j];
      float lane[8] = {};
      int64_t j = 0;
      for (; j + 8 <= d; j += 8) {
        for (int k = 0; k < 8; ++k) lane[k] += out[j + k] * hr[j + k];
      }
      float s2 = 0;
      for (; j < d; ++j) s2 += out[j] * hr[j];
      for (int k = 0; k < 8; ++k) s2 += lane[k];
      const float s1 = Sum8(out, d) / d;
      s2 /= d;
      const float rs = rp[r];
      for (int64_t j2 = 0; j2 < d; ++j2) out[j2] = rs * (out[j2] - s1 - hr[j2] * s2);
    });
    AccumulateGrad(x, gx, "LayerNormRows");
  }
  if (gain.requires_grad() || bias.requires_grad()) {
    const int blocks = ParameterBlocks(n);
    std::vector<float> partial(static_cast<size_t>(blocks) * 2 * d, 0.0f);
    ParallelBlocks(n, blocks, [&](int block, int64_t begin, int64_t end) {
      float* gg = partial.data() + static_cast<size_t>(block) * 2 * d;
      float* gb = gg + d;
      for (int64_t r = begin; r < end; ++r) {
        const float* gor = go + r * d;
        const float* hr = h + r * d;
        for (int64_t j = 0; j < d; ++j) {
          gg[j] += gor[j] * hr[j];
          gb[j] += gor[j];
        }
      }
    });
    Tensor gg = Tensor::Zeros({d}), gb = Tensor::Zeros({d});
    for (int block = 0; block < blocks; ++block) {
      const float* p = partial.data() + static_cast<size_t>(block) * 2 * d;
      for (int64_t j = 0; j < d; ++j) {
        gg.f32()[j] += p[j];
        gb.f32()[j] += p[d + j];
      }
    }
    if (gain.requires_grad()) AccumulateGrad(gain, gg.Reshape(gain.shape()), "LayerNormRows");
    if (bias.requires_grad()) AccumulateGrad(bias, gb.Reshape(bias.shape()), "LayerNormRows");
  }
}

}  // namespace

Var LayerNormRows(const Var& x, const Var& gain, const Var& bias, float eps) {
  LayerNormed f = LayerNormForward(x, gain, bias, eps);
  const int64_t n = f.y.dim(0), d = f.y.dim(1);
  return MakeResult(f.y, "LayerNormRows", {x, gain, bias},
                    [x = GradRef(x), gain = GradRef(gain), bias = GradRef(bias), gv = gain.value(),
                     xhat = f.xhat, rstd = f.rstd, n, d](const Tensor& gy) {
    LayerNormBackward(x, gain, bias, gv, xhat, rstd, n, d, gy);
  });
}

Var LayerNormSilu(const Var& x, const Var& gain, const Var& bias, float eps) {
  LayerNormed f = LayerNormForward(x, gain, bias, eps);
  const int64_t n = f.y.dim(0), d = f.y.dim(1);
  Tensor out = Tensor::Empty({n, d}), sig = Tensor::Empty({n, d});
  const float* yp = f.y.f32();
  float* op = out.f32();
  float* sp = sig.f32();
  ParallelFor(0, (n * d + kSiluChunk - 1) / kSiluChunk, [&](int64_t c) {
    const int64_t i = c * kSiluChunk;
    SiluForward(yp + i, sp + i, op + i, std::min(kSiluChunk, n * d - i));
  });
  // Kept: xhat, rstd and the sigmoid; the normalised output y = xhat gain + bias is recomputed.
  return MakeResult(out, "LayerNormSilu", {x, gain, bias},
                    [x = GradRef(x), gain = GradRef(gain), bias = GradRef(bias), gv = gain.value(),
                     bv = bias.value(), xhat = f.xhat, rstd = f.rstd, sig, n, d](const Tensor& gout) {
    Tensor gy = Tensor::Empty({n, d});
    const float* h = xhat.f32();
    const float* g = gv.f32();
    const float* b = bv.f32();
    const float* sp = sig.f32();
    const float* go = gout.f32();
    float* out = gy.f32();
    ForRowChunks(n, d, [&](int64_t r) {
      float y[512];
      for (int64_t j0 = 0; j0 < d; j0 += 512) {
        const int64_t w = std::min<int64_t>(512, d - j0), k = r * d + j0;
        for (int64_t j = 0; j < w; ++j) y[j] = h[k + j] * g[j0 + j] + b[j0 + j];
        SiluBackward(y, sp + k, go + k, out + k, w);
      }
    });
    LayerNormBackward(x, gain, bias, gv, xhat, rstd, n, d, gy);
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
