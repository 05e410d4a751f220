#include "flexgraph/nn/layer_norm.h"

#include <cmath>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"

namespace fg {
namespace ag {

Var LayerNormRows(const Var& x, const Var& gain, const Var& bias, float eps) {
  const Tensor& xv = x.value();
  FG_CHECK(xv.device() == Device::kCpu) << "LayerNormRows: CPU only";
  FG_CHECK(xv.rank() == 2 && gain.value().numel() == xv.dim(1) && bias.value().numel() == xv.dim(1))
      << "LayerNormRows: " << xv.ShapeString() << " with gain " << gain.value().ShapeString();
  const int64_t n = xv.dim(0), d = xv.dim(1);
  Tensor xhat = Tensor::Empty({n, d}), y = Tensor::Empty({n, d}), rstd = Tensor::Empty({n});
  const float* g = gain.value().f32();
  const float* b = bias.value().f32();
  ParallelFor(0, n, [&](int64_t r) {
    const float* xr = xv.f32() + r * d;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < d; ++j) mean += xr[j];
    mean /= d;
    for (int64_t j = 0; j < d; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= d;
    const float rs = static_cast<float>(1.0 / std::sqrt(var + eps));
    rstd.f32()[r] = rs;
    for (int64_t j = 0; j < d; ++j) {
      const float h = static_cast<float>(xr[j] - mean) * rs;
      xhat.f32()[r * d + j] = h;
      y.f32()[r * d + j] = h * g[j] + b[j];
    }
  });
  return MakeResult(y, "LayerNormRows", {x, gain, bias},
                    [x = GradRef(x), gain = GradRef(gain), bias = GradRef(bias), gv = gain.value(),
                     xhat, rstd, n, d](const Tensor& gy) {
    if (x.requires_grad()) {
      Tensor gx = Tensor::Empty({n, d});
      ParallelFor(0, n, [&](int64_t r) {
        const float* go = gy.f32() + r * d;
        const float* h = xhat.f32() + r * d;
        double s1 = 0, s2 = 0;  // mean of gy*gain, and of gy*gain*xhat
        for (int64_t j = 0; j < d; ++j) {
          const double t = go[j] * gv.f32()[j];
          s1 += t;
          s2 += t * h[j];
        }
        s1 /= d;
        s2 /= d;
        for (int64_t j = 0; j < d; ++j) {
          gx.f32()[r * d + j] =
              static_cast<float>(rstd.f32()[r] * (go[j] * gv.f32()[j] - s1 - h[j] * s2));
        }
      });
      AccumulateGrad(x, gx, "LayerNormRows");
    }
    if (gain.requires_grad() || bias.requires_grad()) {
      Tensor gg = Tensor::Zeros({d}), gb = Tensor::Zeros({d});
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t j = 0; j < d; ++j) {
          gg.f32()[j] += gy.f32()[r * d + j] * xhat.f32()[r * d + j];
          gb.f32()[j] += gy.f32()[r * d + j];
        }
      }
      if (gain.requires_grad()) AccumulateGrad(gain, gg.Reshape(gain.shape()), "LayerNormRows");
      if (bias.requires_grad()) AccumulateGrad(bias, gb.Reshape(bias.shape()), "LayerNormRows");
    }
  });
}

Var Silu(const Var& x) { return Mul(x, Sigmoid(x)); }

}  // namespace ag

namespace nn {

LayerNorm::LayerNorm(int64_t dim) {
  gain_ = AddParameter("weight", Tensor::Full({dim}, 1.0f));
  bias_ = AddParameter("bias", Tensor::Zeros({dim}));
}

}  // namespace nn
}  // namespace fg
