// Normalisation ops: layer normalisation over the last dimension of [n, d] rows (Ba et al. 2016),
// with a gain and a bias [d]. The forward keeps what the backward reads (the normalised rows and
// each row's inverse deviation). Shape errors abort naming the op. Thread-safe.
//
//   ops::LayerNormed f = ops::LayerNormRows(x, gain, bias, 1e-5f);      // f.y [n, d]
//   ops::LayerNormRowsBackward(gy, gain, f, &gx, &ggain, &gbias);
//
// Devices: CPU (ops/cpu/norm.cc) and CUDA (ops/cuda/norm_kernels.cu); every operand on one device.
#pragma once

#include "flexgraph/tensor/tensor.h"

namespace fg::ops {

struct LayerNormed {
  Tensor y;     // [n, d]: xhat * gain + bias
  Tensor xhat;  // [n, d]: (x - mean) * rstd per row
  Tensor rstd;  // [n]: 1 / sqrt(biased variance + eps)
};

LayerNormed LayerNormRows(const Tensor& x, const Tensor& gain, const Tensor& bias, float eps);

// The gradients from gy = dL/dy; a null output is not computed.
void LayerNormRowsBackward(const Tensor& gy, const Tensor& gain, const LayerNormed& forward, Tensor* gx,
                           Tensor* ggain, Tensor* gbias);

}  // namespace fg::ops
