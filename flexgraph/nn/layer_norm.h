// Layer normalisation (Ba et al. 2016) over the last dimension of [n, d] rows, with a learned gain
// and bias, and SiLU (x sigmoid(x)): the building blocks of the Interaction Network's MLPs.
// Thread-compatible.
//
//   nn::LayerNorm norm(128);
//   ag::Var y = ag::Silu(norm.Forward(x));
#pragma once

#include "flexgraph/autograd/var.h"
#include "flexgraph/nn/module.h"

namespace fg {
namespace ag {
// y[r] = (x[r] - mean_r) / sqrt(var_r + eps) * gain + bias; gain and bias [d] (ops/norm_ops.h).
Var LayerNormRows(const Var& x, const Var& gain, const Var& bias, float eps = 1e-5f);
// x * sigmoid(x).
Var Silu(const Var& x);
// Silu(LayerNormRows(x, gain, bias)) keeping one [n, d] tensor fewer for the backward pass (the
// normalised rows and the sigmoid; the normalised output is recomputed from them). On a GPU,
// Silu(LayerNormRows(...)).
Var LayerNormSilu(const Var& x, const Var& gain, const Var& bias, float eps = 1e-5f);
}  // namespace ag

namespace nn {
class LayerNorm : public Module {
 public:
  LayerNorm() = default;
  explicit LayerNorm(int64_t dim);  // gain 1, bias 0
  ag::Var Forward(const ag::Var& x) const { return ag::LayerNormRows(x, gain_, bias_); }
  // Silu(Forward(x)) (ag::LayerNormSilu).
  ag::Var ForwardSilu(const ag::Var& x) const { return ag::LayerNormSilu(x, gain_, bias_); }

 private:
  ag::Var gain_, bias_;
};
}  // namespace nn
}  // namespace fg
