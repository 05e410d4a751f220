// Kernel bodies of the elementwise ops, shared by the CPU kernels (ops/cpu/dense.cc) and the CUDA
// kernels (ops/cuda/*.cu). Each function computes one output element (or one block of a few) from
// plain values, so the CPU loops and the one-thread-per-element CUDA kernels run identical code and
// the CPU tests exercise the device logic. Pure functions: thread-safe.
//
//   y[i] = UnaryValue<UnaryOp::kElu>(x[i], alpha);
#pragma once

#include <math.h>

#include <cstdint>

#include "flexgraph/base/hd.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/ops/kernels.h"

namespace fg::ops::shared {

// f(x) of the activation `Op` (alpha: negative slope of leaky relu, scale of elu).
template <UnaryOp Op>
FG_HD float UnaryValue(float x, float alpha) {
  if constexpr (Op == UnaryOp::kRelu) {
    return x > 0.0f ? x : 0.0f;
  } else if constexpr (Op == UnaryOp::kLeakyRelu) {
    return x > 0.0f ? x : alpha * x;
  } else if constexpr (Op == UnaryOp::kElu) {
    return x > 0.0f ? x : alpha * expm1f(x);
  } else if constexpr (Op == UnaryOp::kTanh) {
    return tanhf(x);
  } else if constexpr (Op == UnaryOp::kSigmoid) {
    return 1.0f / (1.0f + expf(-x));
  } else {
    return expf(x);
  }
}

// gx = gy * f'(x), written with the input x and the output y = f(x).
template <UnaryOp Op>
FG_HD float UnaryGrad(float x, float y, float gy, float alpha) {
  if constexpr (Op == UnaryOp::kRelu) {
    return x > 0.0f ? gy : 0.0f;
  } else if constexpr (Op == UnaryOp::kLeakyRelu) {
    return x > 0.0f ? gy : alpha * gy;
  } else if constexpr (Op == UnaryOp::kElu) {
    return x > 0.0f ? gy : gy * (y + alpha);
  } else if constexpr (Op == UnaryOp::kTanh) {
    return gy * (1.0f - y * y);
  } else if constexpr (Op == UnaryOp::kSigmoid) {
    return gy * y * (1.0f - y);
  } else {
    return gy * y;
  }
}

// Calls fn.template operator()<Op>() with the compile-time op matching `op`, so per-element loops
// and kernels are instantiated per activation (host code; used by both backends).
template <typename Fn>
void DispatchUnaryOp(UnaryOp op, Fn&& fn) {
  switch (op) {
    case UnaryOp::kRelu:
      return fn.template operator()<UnaryOp::kRelu>();
    case UnaryOp::kLeakyRelu:
      return fn.template operator()<UnaryOp::kLeakyRelu>();
    case UnaryOp::kElu:
      return fn.template operator()<UnaryOp::kElu>();
    case UnaryOp::kTanh:
      return fn.template operator()<UnaryOp::kTanh>();
    case UnaryOp::kSigmoid:
      return fn.template operator()<UnaryOp::kSigmoid>();
    case UnaryOp::kExp:
      return fn.template operator()<UnaryOp::kExp>();
  }
}

// Element i of a + alpha * b, with b broadcast with period `b_period` when > 0.
// Index: int64_t, or uint32_t on the GPU below 2^31 elements.
template <typename Index>
FG_HD float AddScaledValue(const float* a, const float* b, float alpha, Index i, Index b_period) {
  return a[i] + alpha * b[b_period > 0 ? i % b_period : i];
}

// Element i of ScaleRows: rows of `width` floats, `heads` equal slices, one scale per (row, head).
template <typename Index>
FG_HD float ScaleRowsValue(const float* x, const float* s, Index width, Index heads, Index i) {
  const Index r = i / width;
  const Index h = (i - r * width) / (width / heads);
  return s[static_cast<int64_t>(r) * heads + h] * x[i];
}

// Column j of the row sums of x [rows, cols], rows added in order (deterministic).
FG_HD float SumColumn(const float* x, int64_t rows, int64_t cols, int64_t j) {
  float s = 0.0f;
  for (int64_t i = 0; i < rows; ++i) s += x[i * cols + j];
  return s;
}

// Element i of a column-block copy: y[r, y_at + c] = x[r, x_at + c] for c < width, i = r * width + c.
FG_HD void CopyColumnsElement(const float* x, int64_t x_width, int64_t x_at, float* y,
                              int64_t y_width, int64_t y_at, int64_t width, int64_t i) {
  const int64_t r = i / width, c = i % width;
  y[r * y_width + y_at + c] = x[r * x_width + x_at + c];
}

// Dropout masks draw 16 bits per entry: entry j of the row with global id `row_id` takes half
// j % 2 of word (j % 8) / 2 of the Philox block keyed by (seed; j / 8, row_id), and is kept iff
// those bits are >= DropoutThreshold(p) (p rounded up to a multiple of 2^-16; exact for p = 0.5).
// The mask depends on (seed, row_id, column) only.
inline constexpr int kDropoutBlockCols = 8;
FG_HD uint32_t DropoutThreshold(float p) {
  return static_cast<uint32_t>(ceilf(p * 65536.0f));
}
FG_HD uint32_t DropoutBits(const Philox4& block, int64_t j) {
  return (block.v[(j % 8) / 2] >> (16 * (j % 2))) & 0xFFFFu;
}

// Dropout entries j0 .. j0+7 (j0 a multiple of 8, clipped to cols) of the row with global id
// `row_id`: the mask value m is 1 / (1 - p) for kept entries and 0 otherwise, and
// y_row[j] = x_row[j] * m (m itself when x_row is null).
FG_HD void DropoutBlock(uint64_t seed, uint64_t row_id, int64_t j0, int64_t cols, float p,
                        float keep_scale, const float* x_row, float* y_row) {
  const Philox4 block = PhiloxBlock(seed, static_cast<uint64_t>(j0 / kDropoutBlockCols), row_id);
  const uint32_t threshold = DropoutThreshold(p);
  // Constant word indices once unrolled (no local memory on the GPU).
  const uint32_t bits[kDropoutBlockCols] = {block.v[0] & 0xFFFFu, block.v[0] >> 16, block.v[1] & 0xFFFFu,
                                            block.v[1] >> 16,     block.v[2] & 0xFFFFu, block.v[2] >> 16,
                                            block.v[3] & 0xFFFFu, block.v[3] >> 16};
  const int64_t n = cols - j0 < kDropoutBlockCols ? cols - j0 : kDropoutBlockCols;
  for (int64_t t = 0; t < n; ++t) {
    const float m = bits[t] >= threshold ? keep_scale : 0.0f;
    y_row[j0 + t] = x_row != nullptr ? x_row[j0 + t] * m : m;
  }
}

// The GPU's dropout runs a warp per group of 32 blocks (256 columns) of a row: lane L draws block
// 32 g + L and keeps its 8 entries' keep bits (bit t: entry t kept); in store round k (0..7) lane L
// writes column 256 g + 32 k + L, whose bit it reads from lane DropoutRoundOwner(k, L). Loads and
// stores are then contiguous across the warp.
inline constexpr int kDropoutGroupCols = 32 * kDropoutBlockCols;
FG_HD uint32_t DropoutKeepBits(uint64_t seed, uint64_t row_id, int64_t block, uint32_t threshold) {
  const Philox4 b = PhiloxBlock(seed, static_cast<uint64_t>(block), row_id);
  uint32_t bits = 0;
  for (int w = 0; w < 4; ++w) {
    bits |= static_cast<uint32_t>((b.v[w] & 0xFFFFu) >= threshold) << (2 * w);
    bits |= static_cast<uint32_t>((b.v[w] >> 16) >= threshold) << (2 * w + 1);
  }
  return bits;
}
FG_HD int DropoutRoundOwner(int round, int lane) { return 4 * round + (lane >> 3); }
FG_HD int64_t DropoutRoundColumn(int64_t group, int round, int lane) {
  return group * kDropoutGroupCols + 32 * round + lane;
}
// The value lane `lane` writes from its owner's keep bits: x * keep_scale or 0 (the mask itself
// when x_row is null).
FG_HD float DropoutRoundValue(uint32_t owner_bits, int lane, float keep_scale, const float* x_row,
                              int64_t column) {
  const float m = (owner_bits >> (lane & 7)) & 1u ? keep_scale : 0.0f;
  return x_row != nullptr ? x_row[column] * m : m;
}

// Binary cross-entropy of logit x against target t, in the form that never overflows, and its
// derivative in x.
FG_HD float BceTerm(float x, float t) { return fmaxf(x, 0.0f) - x * t + log1pf(expf(-fabsf(x))); }
FG_HD float BceGrad(float x, float t) { return 1.0f / (1.0f + expf(-x)) - t; }

// Element j of an optimizer update (nn::Optimizer's rules; the CPU and CUDA steps run this).
FG_HD void OptimizerUpdate(const OptimizerStepArgs& o, float* w, const float* g, float* m, float* v,
                           int64_t j) {
  float gj = g != nullptr ? g[j] : 0.0f;
  if (o.kind == 0) {  // SGD with optional momentum
    gj += o.weight_decay * w[j];
    m[j] = o.momentum * m[j] + gj;
    w[j] -= o.lr * (o.momentum > 0.0f ? m[j] : gj);
    return;
  }
  if (o.kind == 1) gj += o.weight_decay * w[j];  // Adam: L2 in the gradient
  m[j] = o.beta1 * m[j] + (1.0f - o.beta1) * gj;
  v[j] = o.beta2 * v[j] + (1.0f - o.beta2) * gj * gj;
  const float mhat = m[j] / o.bc1;
  const float denom = sqrtf(v[j] / o.bc2) + o.eps;
  if (o.kind == 2) w[j] -= o.lr * o.weight_decay * w[j];  // AdamW: decoupled decay
  w[j] -= o.lr * mhat / denom;
}

}  // namespace fg::ops::shared
