// Helpers of the grid product tests: random sparse and dense operands, a worker's block of a global
// tensor, and the relative error of a result.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "flexgraph/tensor/csr.h"
#include "flexgraph/tensor/tensor.h"
#include "runtime/grid/blocks.h"

namespace fg::grid::testing {

// n vertices, about `degree` random in-neighbours each (some rows empty), weights in [0.5, 1.5).
inline Csr RandomMatrix(int64_t n, int degree, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> offsets = {0};
  std::vector<int32_t> cols;
  std::vector<float> vals;
  for (int64_t v = 0; v < n; ++v) {
    const int d = static_cast<int>(rng() % (2 * degree + 1));
    for (int e = 0; e < d; ++e) {
      cols.push_back(static_cast<int32_t>(rng() % n));
      vals.push_back(0.5f + static_cast<float>(rng() % 1000) / 1000.0f);
    }
    offsets.push_back(static_cast<int64_t>(cols.size()));
  }
  return Csr::FromVectors(n, n, offsets, cols, vals);
}

inline Tensor RandomDense(int64_t rows, int64_t w, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t = Tensor::Empty({rows, w});
  for (int64_t x = 0; x < rows * w; ++x) t.f32()[x] = static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
  return t;
}

// Worker (i, j)'s block of a global [n, w] tensor: rows R_i (in permuted order), columns block j.
inline Tensor BlockOf(const Tensor& global, const VertexBlocks& b, int i, int pc, int j) {
  const int64_t w = global.row_width(), lo = ColumnLo(w, pc, j), cols = ColumnLo(w, pc, j + 1) - lo;
  Tensor t = Tensor::Empty({b.Size(i), cols});
  for (int64_t r = 0; r < b.Size(i); ++r) {
    for (int64_t c = 0; c < cols; ++c) t.f32()[r * cols + c] = global.f32()[b.order[b.Lo(i) + r] * w + lo + c];
  }
  return t;
}

// Largest |got - want| over the largest |want|.
inline double RelativeError(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  double diff = 0, scale = 1e-30;
  for (int64_t x = 0; x < want.numel(); ++x) {
    diff = std::max(diff, static_cast<double>(std::fabs(got.f32()[x] - want.f32()[x])));
    scale = std::max(scale, static_cast<double>(std::fabs(want.f32()[x])));
  }
  return diff / scale;
}

}  // namespace fg::grid::testing
