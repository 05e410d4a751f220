// Kernel bodies of the complex-number ops (ops/instances.h), shared by the CPU kernels and their
// CUDA twins (ops/cuda/instance_kernels.cu). Complex numbers are interleaved (re, im) float pairs;
// `n2` counts floats (twice the complex numbers). Pure functions: thread-safe.
//
//   ComplexMulRow(x + i * n2, r, n2, y + i * n2);   // y = x ∘ r
#pragma once

#include <cstdint>

#include "flexgraph/base/hd.h"

namespace fg::ops::shared {

// y = x ∘ r.
FG_HD void ComplexMulRow(const float* x, const float* r, int64_t n2, float* y) {
  for (int64_t j = 0; j < n2; j += 2) {
    const float a = x[j], b = x[j + 1];
    const float c = r[j], s = r[j + 1];
    y[j] = a * c - b * s;
    y[j + 1] = a * s + b * c;
  }
}

// y = g ∘ conj(r).
FG_HD void ComplexMulConjRow(const float* g, const float* r, int64_t n2, float* y) {
  for (int64_t j = 0; j < n2; j += 2) {
    const float gr = g[j], gi = g[j + 1];
    const float c = r[j], s = r[j + 1];
    y[j] = gr * c + gi * s;
    y[j + 1] = gi * c - gr * s;
  }
}

// acc += g ∘ conj(x), each product rounded to float, then accumulated in double.
FG_HD void AccumulateConjProduct(const float* g, const float* x, int64_t n2, double* acc) {
  for (int64_t j = 0; j < n2; j += 2) {
    const float gr = g[j], gi = g[j + 1];
    const float a = x[j], b = x[j + 1];
    acc[j] += gr * a + gi * b;
    acc[j + 1] += gi * a - gr * b;
  }
}

// out += x ∘ r.
FG_HD void AddComplexMulRow(const float* x, const float* r, int64_t n2, float* out) {
  for (int64_t j = 0; j < n2; j += 2) {
    out[j] += x[j] * r[j] - x[j + 1] * r[j + 1];
    out[j + 1] += x[j] * r[j + 1] + x[j + 1] * r[j];
  }
}

// out += scale * (g ∘ conj(r)).
FG_HD void AddScaledConjRow(const float* g, const float* r, int64_t n2, float scale, float* out) {
  for (int64_t j = 0; j < n2; j += 2) {
    out[j] += scale * (g[j] * r[j] + g[j + 1] * r[j + 1]);
    out[j + 1] += scale * (g[j + 1] * r[j] - g[j] * r[j + 1]);
  }
}

}  // namespace fg::ops::shared
