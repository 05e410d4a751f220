// CPU kernels for dense ops: OpenBLAS GEMM (called outside OpenMP regions) and OpenMP elementwise
// loops. Every output element is written by one thread, so results do not depend on thread count.
#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/ops/kernels.h"

namespace fg::ops::cpu {
namespace {
constexpr int64_t kGrain = 1 << 14;

template <typename F>
void Elementwise(int64_t n, F&& f) {
  if (n < kGrain) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  const int64_t chunks = (n + kGrain - 1) / kGrain;
  ParallelFor(0, chunks, [&](int64_t c) {
    const int64_t hi = std::min(n, (c + 1) * kGrain);
#pragma omp simd
    for (int64_t i = c * kGrain; i < hi; ++i) f(i);
  });
}
}  // namespace

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c, int64_t batch) {
  if (m == 0 || n == 0) return;
  for (int64_t i = 0; i < batch; ++i) {
    const float* ai = a + i * m * k;
    const float* bi = b + i * k * n;
    float* ci = c + i * m * n;
    if (k == 0) {
      for (int64_t j = 0; j < m * n; ++j) ci[j] = beta == 0.0f ? 0.0f : beta * ci[j];
      continue;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, ai, trans_a ? m : k, bi,
                trans_b ? k : n, beta, ci, n);
  }
}

void Unary(UnaryOp op, float alpha, const float* x, float* y, int64_t n) {
  switch (op) {
    case UnaryOp::kRelu:
      Elementwise(n, [&](int64_t i) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; });
      break;
    case UnaryOp::kLeakyRelu:
      Elementwise(n, [&](int64_t i) { y[i] = x[i] > 0.0f ? x[i] : alpha * x[i]; });
      break;
    case UnaryOp::kElu:
      Elementwise(n, [&](int64_t i) { y[i] = x[i] > 0.0f ? x[i] : alpha * std::expm1(x[i]); });
      break;
    case UnaryOp::kTanh:
      Elementwise(n, [&](int64_t i) { y[i] = std::tanh(x[i]); });
      break;
    case UnaryOp::kSigmoid:
      Elementwise(n, [&](int64_t i) { y[i] = 1.0f / (1.0f + std::exp(-x[i])); });
      break;
    case UnaryOp::kExp:
      Elementwise(n, [&](int64_t i) { y[i] = std::exp(x[i]); });
      break;
  }
}

void UnaryBackward(UnaryOp op, float alpha, const float* x, const float* y, const float* gy,
                   float* gx, int64_t n) {
  switch (op) {
    case UnaryOp::kRelu:
      Elementwise(n, [&](int64_t i) { gx[i] = x[i] > 0.0f ? gy[i] : 0.0f; });
      break;
    case UnaryOp::kLeakyRelu:
      Elementwise(n, [&](int64_t i) { gx[i] = x[i] > 0.0f ? gy[i] : alpha * gy[i]; });
      break;
    case UnaryOp::kElu:
      Elementwise(n, [&](int64_t i) { gx[i] = x[i] > 0.0f ? gy[i] : gy[i] * (y[i] + alpha); });
      break;
    case UnaryOp::kTanh:
      Elementwise(n, [&](int64_t i) { gx[i] = gy[i] * (1.0f - y[i] * y[i]); });
      break;
    case UnaryOp::kSigmoid:
      Elementwise(n, [&](int64_t i) { gx[i] = gy[i] * y[i] * (1.0f - y[i]); });
      break;
    case UnaryOp::kExp:
      Elementwise(n, [&](int64_t i) { gx[i] = gy[i] * y[i]; });
      break;
  }
}

void AddScaled(const float* a, const float* b, float alpha, float* y, int64_t n,
               int64_t b_period) {
  if (b_period > 0) {
    Elementwise(n, [&](int64_t i) { y[i] = a[i] + alpha * b[i % b_period]; });
  } else {
    Elementwise(n, [&](int64_t i) { y[i] = a[i] + alpha * b[i]; });
  }
}

void MulElem(const float* a, const float* b, float* y, int64_t n) {
  Elementwise(n, [&](int64_t i) { y[i] = a[i] * b[i]; });
}

void Scale(const float* x, float s, float* y, int64_t n) {
  Elementwise(n, [&](int64_t i) { y[i] = s * x[i]; });
}

void SumRows(const float* x, int64_t rows, int64_t cols, float* y) {
  // Column blocks per thread; rows summed in order (deterministic).
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(cols / 16, NumThreads() * 4));
  ParallelFor(0, blocks, [&](int64_t bidx) {
    const int64_t lo = cols * bidx / blocks, hi = cols * (bidx + 1) / blocks;
    for (int64_t j = lo; j < hi; ++j) y[j] = 0.0f;
    for (int64_t i = 0; i < rows; ++i) {
      const float* xr = x + i * cols;
#pragma omp simd
      for (int64_t j = lo; j < hi; ++j) y[j] += xr[j];
    }
  });
}

void ScaleRows(const float* x, const float* s, int64_t rows, int64_t width, int64_t heads,
               float* y) {
  const int64_t hw = width / heads;
  ParallelFor(0, rows, [&](int64_t r) {
    for (int64_t h = 0; h < heads; ++h) {
      const float f = s[r * heads + h];
      const float* xr = x + r * width + h * hw;
      float* yr = y + r * width + h * hw;
#pragma omp simd
      for (int64_t j = 0; j < hw; ++j) yr[j] = f * xr[j];
    }
  });
}

void LogSoftmaxRows(const float* x, int64_t rows, int64_t cols, float* y) {
  ParallelFor(0, rows, [&](int64_t i) {
    const float* xr = x + i * cols;
    float* yr = y + i * cols;
    float mx = -INFINITY;
    for (int64_t j = 0; j < cols; ++j) mx = std::max(mx, xr[j]);
    double s = 0.0;
    for (int64_t j = 0; j < cols; ++j) s += std::exp(static_cast<double>(xr[j] - mx));
    const float lse = mx + static_cast<float>(std::log(s));
    for (int64_t j = 0; j < cols; ++j) yr[j] = xr[j] - lse;
  });
}

void LogSoftmaxRowsBackward(const float* y, const float* gy, int64_t rows, int64_t cols,
                            float* gx) {
  ParallelFor(0, rows, [&](int64_t i) {
    const float* yr = y + i * cols;
    const float* gr = gy + i * cols;
    float* out = gx + i * cols;
    double s = 0.0;
    for (int64_t j = 0; j < cols; ++j) s += gr[j];
    for (int64_t j = 0; j < cols; ++j) out[j] = gr[j] - std::exp(yr[j]) * static_cast<float>(s);
  });
}

void RowL2Normalize(const float* x, int64_t rows, int64_t cols, float eps, float* y,
                    float* norms) {
  ParallelFor(0, rows, [&](int64_t i) {
    const float* xr = x + i * cols;
    double s = 0.0;
    for (int64_t j = 0; j < cols; ++j) s += static_cast<double>(xr[j]) * xr[j];
    const float nrm = std::max(static_cast<float>(std::sqrt(s)), eps);
    norms[i] = nrm;
    for (int64_t j = 0; j < cols; ++j) y[i * cols + j] = xr[j] / nrm;
  });
}

void RowL2NormalizeBackward(const float* y, const float* norms, const float* gy, int64_t rows,
                            int64_t cols, float eps, float* gx) {
  ParallelFor(0, rows, [&](int64_t i) {
    const float* yr = y + i * cols;
    const float* gr = gy + i * cols;
    const float nrm = norms[i];
    // When the norm was clamped to eps the map is linear: y = x / eps.
    const bool clamped = nrm <= eps;
    double dot = 0.0;
    if (!clamped) {
      for (int64_t j = 0; j < cols; ++j) dot += static_cast<double>(yr[j]) * gr[j];
    }
    for (int64_t j = 0; j < cols; ++j) {
      gx[i * cols + j] = (gr[j] - static_cast<float>(dot) * yr[j]) / nrm;
    }
  });
}

void DropoutMask(uint64_t seed, const int64_t* row_ids, int64_t rows, int64_t cols, float p,
                 float* mask) {
  const float keep_scale = 1.0f / (1.0f - p);
  ParallelFor(0, rows, [&](int64_t r) {
    const uint64_t id = row_ids ? static_cast<uint64_t>(row_ids[r]) : static_cast<uint64_t>(r);
    float* m = mask + r * cols;
    for (int64_t j = 0; j < cols; j += 4) {
      const Philox4 block = PhiloxBlock(seed, static_cast<uint64_t>(j / 4), id);
      for (int t = 0; t < 4 && j + t < cols; ++t) {
        m[j + t] = U32ToUniform(block.v[t]) >= p ? keep_scale : 0.0f;
      }
    }
  });
}

}  // namespace fg::ops::cpu
