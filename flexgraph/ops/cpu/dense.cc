// CPU kernels for dense ops: OpenBLAS GEMM (called outside OpenMP regions) and OpenMP elementwise
// loops. Every output element is written by one thread, so results do not depend on thread count.
#include <cblas.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/rng_avx2.h"
#include "flexgraph/ops/kernels.h"
#include "flexgraph/ops/shared/elementwise.h"
#include "flexgraph/ops/shared/rows.h"

namespace fg::ops::cpu {
namespace {
constexpr int64_t kGrain = 1 << 14;
// C is computed in at most kMaxGemmBlocks blocks of whole kGemmUnit rows (or columns): each call
// packs the other operand again, so blocks are no smaller than they need to be.
constexpr int64_t kGemmUnit = 256, kMaxGemmBlocks = 64;
// A product whose k is at least kSplitKRatio times its larger side of C (a weight gradient
// X^T dY over many rows) is summed over at most kMaxKSlices slices of at least kKSliceUnit, their
// partial products together at most kMaxSliceFloats.
constexpr int64_t kSplitKRatio = 8, kKSliceUnit = 1024, kMaxKSlices = 16, kMaxSliceFloats = int64_t{1} << 24;

// The slices of k for C[m, n] = op(A) op(B) (0 or 1: no split). Shape only.
int64_t KSlices(int64_t m, int64_t n, int64_t k) {
  if (k < kSplitKRatio * std::max(m, n)) return 0;
  return std::min({k / kKSliceUnit, kMaxKSlices, kMaxSliceFloats / (m * n)});
}

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

// Calls f(r) for every row of a [rows, cols] matrix, in parallel chunks of about kGrain elements.
template <typename F>
void ForRows(int64_t rows, int64_t cols, F&& f) {
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(cols, 1));
  ParallelFor(0, (rows + grain - 1) / grain, [&](int64_t c) {
    for (int64_t r = c * grain; r < std::min(rows, (c + 1) * grain); ++r) f(r);
  });
}

// C = alpha op(A) op(B) + beta C for one matrix, then epilogue(lo, hi) on each block of C right
// after it is computed, while it is in cache: rows [lo, hi) when blocks are row blocks
// (by_rows), else columns [lo, hi).
template <typename Epilogue>
void GemmBlocks(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, const float* b, float beta, float* c, Epilogue&& epilogue) {
  if (k == 0) {
    for (int64_t j = 0; j < m * n; ++j) c[j] = beta == 0.0f ? 0.0f : beta * c[j];
    epilogue(true, int64_t{0}, m);
    return;
  }
  // FlexGraph's threads each compute blocks of C with single-threaded OpenBLAS (whose own
  // threads would otherwise spin between calls, taking cores from the OpenMP loops): blocks of
  // rows, or of columns when C is short and wide. The blocks depend on the shape only, never on
  // the thread count: OpenBLAS's sums depend on a call's shape (small-matrix kernels, tiles),
  // so the same calls give the same bits on any machine.
  const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;
  const bool by_rows = m >= n;
  const int64_t extent = by_rows ? m : n;
  const int64_t units = (extent + kGemmUnit - 1) / kGemmUnit;
  const int64_t blocks = std::min(units, kMaxGemmBlocks);
  auto start = [&](int64_t blk) { return std::min(extent, blk * units / blocks * kGemmUnit); };
  auto gemm = [&](int64_t lo, int64_t hi) {
    const float* ab = by_rows ? (trans_a ? a + lo : a + lo * k) : a;
    const float* bb = by_rows ? b : (trans_b ? b + lo * k : b + lo);
    float* cb = by_rows ? c + lo * n : c + lo;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, by_rows ? hi - lo : m, by_rows ? n : hi - lo,
                k, alpha, ab, lda, bb, ldb, beta, cb, n);
    epilogue(by_rows, lo, hi);
  };
  if (NumThreads() == 1) {
    for (int64_t blk = 0; blk < blocks; ++blk) gemm(start(blk), start(blk + 1));
  } else {
    ParallelFor(0, blocks, [&](int64_t blk) { gemm(start(blk), start(blk + 1)); });
  }
}

// C = alpha op(A) op(B) + beta C as the sum of slices of k: each slice's product (single-threaded
// OpenBLAS, one slice per task) into its own buffer, then the slices added in order. Splitting C
// instead would pack the long operands once per block of C. Slices depend on the shape only.
void GemmSplitK(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, const float* b, float beta, float* c) {
  const int64_t slices = KSlices(m, n, k);
  const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n, mn = m * n;
  thread_local std::vector<float> partial;
  if (partial.size() < static_cast<size_t>(slices * mn)) partial.resize(slices * mn);
  float* part = partial.data();
  ParallelFor(0, slices, [&](int64_t s) {
    const int64_t lo = k * s / slices, hi = k * (s + 1) / slices;
    const float* as = trans_a ? a + lo * lda : a + lo;
    const float* bs = trans_b ? b + lo : b + lo * ldb;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, hi - lo, alpha, as, lda, bs, ldb, 0.0f,
                part + s * mn, n);
  });
  Elementwise(mn, [&](int64_t i) {
    float sum = part[i];
    for (int64_t s = 1; s < slices; ++s) sum += part[s * mn + i];
    c[i] = beta == 0.0f ? sum : sum + beta * c[i];
  });
}

#if defined(__AVX2__) && defined(__FMA__)
// Products of at most 8 outputs (a classifier, X W) or a depth of at most 16 (its input gradient,
// dY W^T) run in kernels of their own: OpenBLAS runs them at a fraction of the memory rate (it packs
// and blocks for wide operands). Each output element is one thread's, summed in an order fixed by
// the shape.
constexpr int64_t kNarrow = 16, kNarrowRows = 64;

// op(B) [k, n] as rows.
std::vector<float> PackRows(bool trans_b, int64_t n, int64_t k, const float* b) {
  std::vector<float> p(static_cast<size_t>(k * n));
  for (int64_t t = 0; t < k; ++t) {
    for (int64_t j = 0; j < n; ++j) p[t * n + j] = trans_b ? b[j * k + t] : b[t * n + j];
  }
  return p;
}

// C = alpha A op(B) + beta C, k <= kNarrow: each row's outputs 32 at a time in registers.
void GemmNarrowDepth(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                     const float* b, float beta, float* c) {
  const std::vector<float> bp = PackRows(trans_b, n, k, b);
  ParallelFor(0, (m + kNarrowRows - 1) / kNarrowRows, [&](int64_t blk) {
    for (int64_t i = blk * kNarrowRows; i < std::min(m, (blk + 1) * kNarrowRows); ++i) {
      const float* ar = a + i * k;
      float* cr = c + i * n;
      int64_t j0 = 0;
      for (; j0 + 32 <= n; j0 += 32) {
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int64_t t = 0; t < k; ++t) {
          const __m256 av = _mm256_broadcast_ss(ar + t);
          const float* bt = bp.data() + t * n + j0;
#pragma GCC unroll 4
          for (int q = 0; q < 4; ++q) acc[q] = _mm256_fmadd_ps(av, _mm256_loadu_ps(bt + 8 * q), acc[q]);
        }
        const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
        for (int q = 0; q < 4; ++q) {
          float* out = cr + j0 + 8 * q;
          const __m256 y = _mm256_mul_ps(va, acc[q]);
          _mm256_storeu_ps(out, beta == 0.0f ? y : _mm256_fmadd_ps(vb, _mm256_loadu_ps(out), y));
        }
      }
      for (int64_t j = j0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t t = 0; t < k; ++t) acc += ar[t] * bp[t * n + j];
        cr[j] = beta == 0.0f ? alpha * acc : alpha * acc + beta * cr[j];
      }
    }
  });
}

// C = alpha A op(B) + beta C, n <= 8: each output is a row of A dotted with a column of op(B),
// eight of k's entries per vector, the row's eight sums reduced together at the end.
void GemmNarrowOut(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   const float* b, float beta, float* c) {
  const int64_t kv = k / 8 * 8;
  std::vector<float> bt(static_cast<size_t>(8 * k), 0.0f);  // op(B)^T [8, k], zero rows beyond n
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t t = 0; t < k; ++t) bt[j * k + t] = trans_b ? b[j * k + t] : b[t * n + j];
  }
  ParallelFor(0, (m + kNarrowRows - 1) / kNarrowRows, [&](int64_t blk) {
    for (int64_t i = blk * kNarrowRows; i < std::min(m, (blk + 1) * kNarrowRows); ++i) {
      const float* ar = a + i * k;
      __m256 acc[8];
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_ps();
      for (int64_t t = 0; t < kv; t += 8) {
        const __m256 av = _mm256_loadu_ps(ar + t);
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(av, _mm256_loadu_ps(bt.data() + j * k + t), acc[j]);
      }
      // Lane sums: s[j] = sum of acc[j]'s lanes, as one vector.
      const __m256 h01 = _mm256_hadd_ps(acc[0], acc[1]), h23 = _mm256_hadd_ps(acc[2], acc[3]);
      const __m256 h45 = _mm256_hadd_ps(acc[4], acc[5]), h67 = _mm256_hadd_ps(acc[6], acc[7]);
      const __m256 q0 = _mm256_hadd_ps(h01, h23), q1 = _mm256_hadd_ps(h45, h67);
      const __m256 lo = _mm256_permute2f128_ps(q0, q1, 0x20), hi = _mm256_permute2f128_ps(q0, q1, 0x31);
      alignas(32) float sum[8];
      _mm256_store_ps(sum, _mm256_add_ps(lo, hi));
      float* cr = c + i * n;
      for (int64_t j = 0; j < n; ++j) {
        float v = sum[j];
        for (int64_t t = kv; t < k; ++t) v += ar[t] * bt[j * k + t];
        cr[j] = beta == 0.0f ? alpha * v : alpha * v + beta * cr[j];
      }
    }
  });
}

// Runs C = alpha op(A) op(B) + beta C in a narrow kernel when one fits; false otherwise.
bool GemmNarrow(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                const float* b, float beta, float* c) {
  if (trans_a || m < kNarrowRows) return false;
  if (n <= 8 && k >= 64) {
    GemmNarrowOut(trans_b, m, n, k, alpha, a, b, beta, c);
  } else if (k <= kNarrow && n > kNarrow) {
    GemmNarrowDepth(trans_b, m, n, k, alpha, a, b, beta, c);
  } else {
    return false;
  }
  return true;
}
#else
bool GemmNarrow(bool, bool, int64_t, int64_t, int64_t, float, const float*, const float*, float, float*) {
  return false;
}
#endif
}  // namespace

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c, int64_t batch) {
  if (m == 0 || n == 0) return;
  if (k > 0 && GemmNarrow(trans_a, trans_b, m, n, k, alpha, a, b, beta, c)) {
    for (int64_t i = 1; i < batch; ++i) {
      GemmNarrow(trans_a, trans_b, m, n, k, alpha, a + i * m * k, b + i * k * n, beta, c + i * m * n);
    }
    return;
  }
  if (KSlices(m, n, k) >= 2) {
    for (int64_t i = 0; i < batch; ++i) {
      GemmSplitK(trans_a, trans_b, m, n, k, alpha, a + i * m * k, b + i * k * n, beta, c + i * m * n);
    }
    return;
  }
  for (int64_t i = 0; i < batch; ++i) {
    GemmBlocks(trans_a, trans_b, m, n, k, alpha, a + i * m * k, b + i * k * n, beta, c + i * m * n,
               [](bool, int64_t, int64_t) {});
  }
}

void MatmulBiasRelu(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                    const float* bias, float* c) {
  if (m == 0 || n == 0) return;
  GemmBlocks(false, false, m, n, k, 1.0f, a, b, 0.0f, c, [&](bool rows, int64_t lo, int64_t hi) {
    const int64_t r0 = rows ? lo : 0, r1 = rows ? hi : m, c0 = rows ? 0 : lo, c1 = rows ? n : hi;
    for (int64_t r = r0; r < r1; ++r) {
      float* cr = c + r * n;
#pragma omp simd
      for (int64_t j = c0; j < c1; ++j) {
        cr[j] = shared::UnaryValue<UnaryOp::kRelu>(cr[j] + bias[j], 0.0f);
      }
    }
  });
}

// The activation bodies are the ones the CUDA kernels run (ops/shared/elementwise.h), instantiated
// per op so each loop stays a branch-free, vectorisable lambda.
void Unary(UnaryOp op, float alpha, const float* x, float* y, int64_t n) {
  shared::DispatchUnaryOp(op, [&]<UnaryOp Op>() {
    Elementwise(n, [&](int64_t i) { y[i] = shared::UnaryValue<Op>(x[i], alpha); });
  });
}

void UnaryBackward(UnaryOp op, float alpha, const float* x, const float* y, const float* gy,
                   float* gx, int64_t n) {
  shared::DispatchUnaryOp(op, [&]<UnaryOp Op>() {
    Elementwise(n, [&](int64_t i) { gx[i] = shared::UnaryGrad<Op>(x[i], y[i], gy[i], alpha); });
  });
}

void AddScaled(const float* a, const float* b, float alpha, float* y, int64_t n,
               int64_t b_period) {
  if (b_period > 0) {  // b repeats along rows of b_period: no division per element
    ForRows(n / b_period, b_period, [&](int64_t r) {
      const float* ar = a + r * b_period;
      float* yr = y + r * b_period;
#pragma omp simd
      for (int64_t j = 0; j < b_period; ++j) yr[j] = ar[j] + alpha * b[j];
    });
  } else {
    Elementwise(n, [&](int64_t i) { y[i] = a[i] + alpha * b[i]; });
  }
}

void BiasRelu(const float* x, const float* b, int64_t rows, int64_t cols, float* y) {
  if (rows == 0 || cols == 0) return;
  ForRows(rows, cols, [&](int64_t r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) {
      yr[j] = shared::UnaryValue<UnaryOp::kRelu>(xr[j] + b[j], 0.0f);
    }
  });
}

void BiasReluBackward(const float* y, const float* gy, int64_t rows, int64_t cols, float* gx,
                      float* gb) {
  if (cols == 0) return;
  // Column sums per fixed block of rows, then over the blocks in order: gb does not depend on the
  // thread count.
  constexpr int64_t kBlockRows = 256;
  const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
  std::vector<float> partial(blocks * cols, 0.0f);
  ParallelFor(0, blocks, [&](int64_t blk) {
    float* p = partial.data() + blk * cols;
    for (int64_t r = blk * kBlockRows; r < std::min(rows, (blk + 1) * kBlockRows); ++r) {
      const float* yr = y + r * cols;
      const float* gr = gy + r * cols;
      float* out = gx + r * cols;
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) {
        out[j] = shared::UnaryGrad<UnaryOp::kRelu>(yr[j], yr[j], gr[j], 0.0f);
        p[j] += out[j];
      }
    }
  });
  ParallelFor(0, cols, [&](int64_t j) {
    float sum = 0.0f;
    for (int64_t blk = 0; blk < blocks; ++blk) sum += partial[blk * cols + j];
    gb[j] = sum;
  });
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
  ParallelFor(0, rows, [&](int64_t i) { shared::LogSoftmaxRow(x + i * cols, cols, y + i * cols); });
}

void LogSoftmaxRowsBackward(const float* y, const float* gy, int64_t rows, int64_t cols,
                            float* gx) {
  ParallelFor(0, rows, [&](int64_t i) {
    shared::LogSoftmaxRowBackward(y + i * cols, gy + i * cols, cols, gx + i * cols);
  });
}

void RowL2Normalize(const float* x, int64_t rows, int64_t cols, float eps, float* y,
                    float* norms) {
  ParallelFor(0, rows, [&](int64_t i) {
    norms[i] = shared::RowL2NormalizeRow(x + i * cols, cols, eps, y + i * cols);
  });
}

void RowL2NormalizeBackward(const float* y, const float* norms, const float* gy, int64_t rows,
                            int64_t cols, float eps, float* gx) {
  ParallelFor(0, rows, [&](int64_t i) {
    shared::RowL2NormalizeRowBackward(y + i * cols, norms[i], gy + i * cols, cols, eps,
                                      gx + i * cols);
  });
}

namespace {
#if defined(__AVX2__)
// Dropout of the 64 H columns j0 .. j0 + 64 H - 1 (j0 a multiple of 8) of row `id`: 8 H Philox
// blocks with counters (j0 / 8 + b, id) (base/rng_avx2.h), then block b's four words read as
// 16-bit halves are the bits of columns j0 + 8 b .. j0 + 8 b + 7 (shared::DropoutBits).
template <int H>
void DropoutStretch(uint64_t seed, uint64_t id, int64_t j0, __m256i below, __m256 keep,
                    const float* src, float* dst) {
  __m256i w[4][H];
  PhiloxVectors<H>(seed, static_cast<uint64_t>(j0 / shared::kDropoutBlockCols), id, w);
  for (int h = 0; h < H; ++h) {
    __m256i u[4];
    BlockWords<H>(w, h, u);
    for (int k = 0; k < 8; ++k) {
      const __m128i words = k < 4 ? _mm256_castsi256_si128(u[k]) : _mm256_extracti128_si256(u[k - 4], 1);
      const __m256i bits = _mm256_cvtepu16_epi32(words);
      const __m256 m = _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(bits, below)), keep);
      const int64_t c = 64 * h + 8 * k;
      _mm256_storeu_ps(dst + c, src != nullptr ? _mm256_mul_ps(_mm256_loadu_ps(src + c), m) : m);
    }
  }
}

// The blocks of rows' last columns (those past the rows' 64-column stretches), drawn 32 at a time
// across rows: block (row, b) covers columns 8 b .. 8 b + 7 of its row, clipped to cols.
class DropoutTails {
 public:
  DropoutTails(uint64_t seed, int64_t cols, __m256i below, __m256 keep)
      : seed_(seed), cols_(cols), below_(below), keep_(keep) {}
  void Add(uint64_t id, int64_t b, const float* src, float* dst) {
    lo_[n_] = static_cast<uint64_t>(b);
    hi_[n_] = id;
    at_[n_] = {src, dst, b * shared::kDropoutBlockCols};
    if (++n_ == kLanes) Flush();
  }
  void Flush() {
    if (n_ == 0) return;
    for (int l = n_; l < kLanes; ++l) lo_[l] = hi_[l] = 0;  // whole vectors of lanes
    uint32_t words[4 * kLanes];
    PhiloxBlocks(seed_, lo_, hi_, kLanes, words);
    for (int l = 0; l < n_; ++l) {
      // Entry t's bits: half t % 2 of word t / 2 (shared::DropoutBits).
      const __m256i bits =
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(words + 4 * l)));
      const __m256 m = _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(bits, below_)), keep_);
      const auto [src, dst, j0] = at_[l];
      const int64_t n = std::min<int64_t>(shared::kDropoutBlockCols, cols_ - j0);
      if (n == shared::kDropoutBlockCols) {
        _mm256_storeu_ps(dst + j0, src != nullptr ? _mm256_mul_ps(_mm256_loadu_ps(src + j0), m) : m);
        continue;
      }
      alignas(32) float mask[8];
      _mm256_store_ps(mask, m);
      for (int64_t t = 0; t < n; ++t) dst[j0 + t] = src != nullptr ? src[j0 + t] * mask[t] : mask[t];
    }
    n_ = 0;
  }

 private:
  static constexpr int kLanes = 32;
  struct Place {
    const float* src;
    float* dst;
    int64_t j0;
  };
  uint64_t seed_;
  int64_t cols_;
  __m256i below_;
  __m256 keep_;
  int n_ = 0;
  uint64_t lo_[kLanes], hi_[kLanes];
  Place at_[kLanes];
};
#endif

}  // namespace

void Dropout(uint64_t seed, const int64_t* row_ids, int64_t rows, int64_t cols, float p,
             const float* x, float* y) {
  static_assert(std::endian::native == std::endian::little, "mask bits are read as halves of words");
  const float keep = 1.0f / (1.0f - p);
  // Rows per task (up to 16, fewer where rows are few): their last blocks are drawn together.
  const int64_t per_task = std::clamp<int64_t>(rows / (8 * NumThreads()), 1, 16);
  ParallelFor(0, (rows + per_task - 1) / per_task, [&](int64_t c) {
#if defined(__AVX2__)
    // Thresholds are at most 2^16 and bits below it: the signed compare is exact.
    const __m256i below = _mm256_set1_epi32(static_cast<int>(shared::DropoutThreshold(p)) - 1);
    const __m256 keep_v = _mm256_set1_ps(keep);
    DropoutTails tails(seed, cols, below, keep_v);
#endif
    for (int64_t r = c * per_task; r < std::min(rows, (c + 1) * per_task); ++r) {
      const uint64_t id = row_ids ? static_cast<uint64_t>(row_ids[r]) : static_cast<uint64_t>(r);
      const float* xr = x != nullptr ? x + r * cols : nullptr;
      float* yr = y + r * cols;
      int64_t j = 0;
#if defined(__AVX2__)
      for (; j + 256 <= cols; j += 256) {
        DropoutStretch<4>(seed, id, j, below, keep_v, xr != nullptr ? xr + j : nullptr, yr + j);
      }
      if (j + 128 <= cols) {
        DropoutStretch<2>(seed, id, j, below, keep_v, xr != nullptr ? xr + j : nullptr, yr + j);
        j += 128;
      }
      if (j + 64 <= cols) {
        DropoutStretch<1>(seed, id, j, below, keep_v, xr != nullptr ? xr + j : nullptr, yr + j);
        j += 64;
      }
      for (; j < cols; j += shared::kDropoutBlockCols) tails.Add(id, j / shared::kDropoutBlockCols, xr, yr);
#endif
      for (; j < cols; j += shared::kDropoutBlockCols) shared::DropoutBlock(seed, id, j, cols, p, keep, xr, yr);
    }
#if defined(__AVX2__)
    tails.Flush();
#endif
  });
}

// The CPU SpMM (ops/cpu/sparse.cc) needs neither the dense operand's row count nor nnz.
void SpmmCsr(const int64_t* off, const int32_t* col, const float* w, int64_t w_heads, int64_t rows,
             int64_t /*x_rows*/, int64_t /*nnz*/, const float* x, int64_t width, int mean,
             float* out) {
  Spmm(off, col, w, w_heads, rows, x, width, mean, out);
}

void CopyColumns(const float* x, int64_t x_width, int64_t x_at, int64_t rows, int64_t width,
                 float* y, int64_t y_width, int64_t y_at) {
  if (width == 0) return;
  ParallelFor(0, (rows + 255) / 256, [&](int64_t c) {
    const int64_t hi = std::min(rows, (c + 1) * 256);
    for (int64_t r = c * 256; r < hi; ++r) {
      std::memcpy(y + r * y_width + y_at, x + r * x_width + x_at, width * sizeof(float));
    }
  });
}

void OptimizerStep(const OptimizerStepArgs& o, float* w, const float* g, float* m, float* v,
                   int64_t n) {
  ParallelFor(0, (n + 4095) / 4096, [&](int64_t c) {
    const int64_t hi = std::min<int64_t>(n, (c + 1) * 4096);
    for (int64_t j = c * 4096; j < hi; ++j) shared::OptimizerUpdate(o, w, g, m, v, j);
  });
}

void NllLoss(const float* lp, int64_t classes, const int64_t* labels, const int32_t* rows,
             int64_t m, float* out) {
  double total = 0.0;
  for (int64_t k = 0; k < m; ++k) total -= lp[rows[k] * classes + labels[rows[k]]];
  out[0] = static_cast<float>(total / static_cast<double>(m));
}

void NllLossBackward(const float* g, int64_t classes, const int64_t* labels, const int32_t* rows,
                     int64_t m, float* gl) {
  const float scale = -g[0] / static_cast<float>(m);
  for (int64_t k = 0; k < m; ++k) gl[rows[k] * classes + labels[rows[k]]] += scale;
}

void BceWithLogits(const float* x, const float* t, int64_t n, float* out) {
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += shared::BceTerm(x[i], t[i]);
  out[0] = static_cast<float>(total / static_cast<double>(n));
}

void BceWithLogitsBackward(const float* g, const float* x, const float* t, int64_t n, float* gx) {
  const float scale = g[0] / static_cast<float>(n);
  for (int64_t i = 0; i < n; ++i) gx[i] = scale * shared::BceGrad(x[i], t[i]);
}

}  // namespace fg::ops::cpu
