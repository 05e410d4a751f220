// CPU kernels for sparse and segment ops. Rows are processed in nnz-balanced chunks with dynamic
// scheduling; each output row is produced by one thread in entry order, so results are identical for
// any thread count. Gathered rows are prefetched a fixed number of cache lines ahead along the
// chunk's entry stream (across row boundaries).
//
// SpMM is latency-bound on graphs larger than the cache: each entry gathers one random feature row.
// Its AVX-512 path keeps the output row in registers (kernels specialised on the number of 16-float
// vectors per row, up to 256 columns at a time), and keeps about kLinesInFlight cache lines of
// future rows in flight with software prefetches.
#if defined(__AVX512F__) && defined(__AVX512VL__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/ops/kernels.h"

namespace fg::ops::cpu {
namespace {

// Calls body(begin, end) on contiguous row ranges covering [0, rows) in parallel: chunks of roughly
// equal (entries + rows) work, dynamically scheduled. Boundaries depend only on the matrix and the
// thread count; every row belongs to exactly one chunk.
template <typename F>
void ForRowChunks(const int64_t* off, int64_t rows, F&& body) {
  if (rows == 0) return;
  const int threads = NumThreads();
  if (threads == 1 || rows < 64) {
    body(int64_t{0}, rows);
    return;
  }
  const int64_t chunks = std::min<int64_t>(rows, threads * 32);
  const int64_t total = off[rows] + rows;
  std::vector<int64_t> bounds(chunks + 1);
  bounds[0] = 0;
  int64_t r = 0;
  for (int64_t c = 1; c < chunks; ++c) {
    const int64_t target = total * c / chunks;
    while (r < rows && off[r] + r < target) ++r;
    bounds[c] = r;
  }
  bounds[chunks] = rows;
  ParallelForDynamic(0, chunks, 1, [&](int64_t c) {
    if (bounds[c] < bounds[c + 1]) body(bounds[c], bounds[c + 1]);
  });
}

// Calls body(row) over [0, rows) in parallel, in nnz-balanced chunks.
template <typename F>
void ForRowsBalanced(const int64_t* off, int64_t rows, F&& body) {
  ForRowChunks(off, rows, [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) body(row);
  });
}

// Cache lines of future gathered rows kept in flight by each thread. Enough to cover DRAM latency
// with many misses outstanding, few enough not to evict rows from L2 before they are used.
constexpr int64_t kLinesInFlight = 128;

// Entries to prefetch ahead when each gathered row spans `row_floats` floats.
int64_t PrefetchEntries(int64_t row_floats) {
  const int64_t lines = std::max<int64_t>(1, (row_floats * 4 + 63) / 64);
  return std::max<int64_t>(2, kLinesInFlight / lines);
}

// Prefetches the cache lines of x[0 .. n_floats) into L2 (prefetcht1). Prefetching into L1 holds
// an L1 miss buffer per line and caps the misses in flight: on the 2-core EPYC it halved SpMM
// throughput on graphs larger than the cache (bench/README.md).
inline void PrefetchSpan(const float* x, int64_t n_floats) {
  const char* p = reinterpret_cast<const char*>(x);
  const char* last = reinterpret_cast<const char*>(x + n_floats) - 1;
  for (; p <= last; p += 64) __builtin_prefetch(p, 0, 2);
  __builtin_prefetch(last, 0, 2);  // the line of the last float when x is not line-aligned
}

// Portable SpMM over rows [r_lo, r_hi) (any width and head count).
void SpmmRowsGeneric(const int64_t* off, const int32_t* col, const float* w, int64_t w_heads,
                     int64_t r_lo, int64_t r_hi, const float* x, int64_t width, int mean,
                     float* out) {
  const int64_t head_width = w_heads > 1 ? width / w_heads : width;
  const int64_t dist = PrefetchEntries(width);
  const int64_t e_begin = off[r_lo], e_end = off[r_hi];
  for (int64_t e = e_begin; e < std::min(e_end, e_begin + dist); ++e) {
    PrefetchSpan(x + static_cast<int64_t>(col[e]) * width, width);
  }
  for (int64_t r = r_lo; r < r_hi; ++r) {
    float* o = out + r * width;
    for (int64_t j = 0; j < width; ++j) o[j] = 0.0f;
    const int64_t lo = off[r], hi = off[r + 1];
    for (int64_t e = lo; e < hi; ++e) {
      if (e + dist < e_end) PrefetchSpan(x + static_cast<int64_t>(col[e + dist]) * width, width);
      const float* xr = x + static_cast<int64_t>(col[e]) * width;
      if (w == nullptr) {
#pragma omp simd
        for (int64_t j = 0; j < width; ++j) o[j] += xr[j];
      } else if (w_heads <= 1) {
        const float we = w[e];
#pragma omp simd
        for (int64_t j = 0; j < width; ++j) o[j] += we * xr[j];
      } else {
        for (int64_t h = 0; h < w_heads; ++h) {
          const float we = w[e * w_heads + h];
          float* oh = o + h * head_width;
          const float* xh = xr + h * head_width;
#pragma omp simd
          for (int64_t j = 0; j < head_width; ++j) oh[j] += we * xh[j];
        }
      }
    }
    if (mean && hi > lo) {
      const float inv = 1.0f / static_cast<float>(hi - lo);
      for (int64_t j = 0; j < width; ++j) o[j] *= inv;
    }
  }
}

#if defined(__AVX512F__) && defined(__AVX512VL__)
constexpr int kMaxVecs = 16;  // columns per slab: 16 vectors of 16 floats

// How an entry scales its gathered row: not at all, by one weight, or by one weight per head.
enum class EntryWeights { kNone, kOne, kPerHead };

// How the last vector of a slab row is accessed. A 512-bit masked access whose 64 bytes cross a
// cache line is several times slower than plain ones on Zen 4 (SpMM at width 8 ran at a third of
// width 16's speed), so partial tails go through 256-bit halves: a tail of at most 8 floats is one
// masked half, a longer one a plain half and a masked one.
enum class Tail { kFull, kUpToHalf, kOverHalf };

// GCC 12's avx512fintrin.h builds the 256/512-bit casts and inserts from undefined vectors, which
// -Wmaybe-uninitialized reports wherever they are inlined; every lane used is defined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <Tail kTail>
inline __m512 LoadTail(const float* p, __mmask16 mask) {
  if constexpr (kTail == Tail::kFull) return _mm512_loadu_ps(p);
  if constexpr (kTail == Tail::kUpToHalf) {
    return _mm512_zextps256_ps512(_mm256_maskz_loadu_ps(static_cast<__mmask8>(mask), p));
  }
  const __m256 hi = _mm256_maskz_loadu_ps(static_cast<__mmask8>(mask >> 8), p + 8);
  const __m512d lo = _mm512_castps_pd(_mm512_zextps256_ps512(_mm256_loadu_ps(p)));
  return _mm512_castpd_ps(_mm512_maskz_insertf64x4(0xFF, lo, _mm256_castps_pd(hi), 1));
}
template <Tail kTail>
inline void StoreTail(float* p, __mmask16 mask, __m512 v) {
  if constexpr (kTail == Tail::kFull) return _mm512_storeu_ps(p, v);
  if constexpr (kTail == Tail::kUpToHalf) {
    return _mm256_mask_storeu_ps(p, static_cast<__mmask8>(mask), _mm512_castps512_ps256(v));
  }
  _mm256_storeu_ps(p, _mm512_castps512_ps256(v));
  _mm256_mask_storeu_ps(p + 8, static_cast<__mmask8>(mask >> 8),
                        _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(v), 1)));
}

// One slab of SpMM: rows [r_lo, r_hi), columns [c0, c0 + slab) with slab <= 16 * kVecs, the
// output row held in kVecs registers. Per-head weights: lane l of vector v takes the weight of
// head lane_head[16 v + l] of the entry (heads <= 16). Sums in entry order, products then sums
// (no fused multiply-add), exactly like SpmmRowsGeneric.
template <int kVecs, EntryWeights kWeights, Tail kTail>
void SpmmSlabAvx512(const int64_t* off, const int32_t* col, const float* w, int64_t heads,
                    const int32_t* lane_head, int64_t r_lo, int64_t r_hi, const float* x,
                    int64_t width, int64_t c0, int64_t slab, int mean, float* out) {
  const __mmask16 tail = slab % 16 == 0 ? 0xFFFF : static_cast<__mmask16>((1u << (slab % 16)) - 1);
  const __mmask16 head_mask = static_cast<__mmask16>((1u << heads) - 1);
  const float* xs = x + c0;
  const int64_t dist = PrefetchEntries(slab);
  const int64_t e_begin = off[r_lo], e_end = off[r_hi];
  for (int64_t e = e_begin; e < std::min(e_end, e_begin + dist); ++e) {
    PrefetchSpan(xs + static_cast<int64_t>(col[e]) * width, slab);
  }
  for (int64_t r = r_lo; r < r_hi; ++r) {
    __m512 acc[kVecs];
#pragma GCC unroll 16
    for (int v = 0; v < kVecs; ++v) acc[v] = _mm512_setzero_ps();
    const int64_t lo = off[r], hi = off[r + 1];
    for (int64_t e = lo; e < hi; ++e) {
      if (e + dist < e_end) PrefetchSpan(xs + static_cast<int64_t>(col[e + dist]) * width, slab);
      const float* xr = xs + static_cast<int64_t>(col[e]) * width;
      __m512 we = _mm512_setzero_ps();
      if constexpr (kWeights == EntryWeights::kOne) we = _mm512_set1_ps(w[e]);
      if constexpr (kWeights == EntryWeights::kPerHead) {
        we = _mm512_maskz_loadu_ps(head_mask, w + e * heads);
      }
#pragma GCC unroll 16
      for (int v = 0; v < kVecs; ++v) {
        __m512 xv =
            v == kVecs - 1 ? LoadTail<kTail>(xr + 16 * v, tail) : _mm512_loadu_ps(xr + 16 * v);
        if constexpr (kWeights == EntryWeights::kOne) xv = _mm512_mul_ps(we, xv);
        if constexpr (kWeights == EntryWeights::kPerHead) {
          const __m512i idx = _mm512_loadu_si512(lane_head + 16 * v);
          xv = _mm512_mul_ps(_mm512_maskz_permutexvar_ps(0xFFFF, idx, we), xv);
        }
        acc[v] = _mm512_add_ps(acc[v], xv);
      }
    }
    if (mean && hi > lo) {
      const __m512 inv = _mm512_set1_ps(1.0f / static_cast<float>(hi - lo));
#pragma GCC unroll 16
      for (int v = 0; v < kVecs; ++v) acc[v] = _mm512_mul_ps(acc[v], inv);
    }
    float* o = out + r * width + c0;
#pragma GCC unroll 16
    for (int v = 0; v < kVecs - 1; ++v) _mm512_storeu_ps(o + 16 * v, acc[v]);
    StoreTail<kTail>(o + 16 * (kVecs - 1), tail, acc[kVecs - 1]);
  }
}

using SlabKernel = void (*)(const int64_t*, const int32_t*, const float*, int64_t, const int32_t*,
                            int64_t, int64_t, const float*, int64_t, int64_t, int64_t, int, float*);

template <EntryWeights kWeights, Tail kTail, int... I>
constexpr std::array<SlabKernel, kMaxVecs> SlabKernels(std::integer_sequence<int, I...>) {
  return {&SpmmSlabAvx512<I + 1, kWeights, kTail>...};
}
template <EntryWeights kWeights>
constexpr std::array<std::array<SlabKernel, kMaxVecs>, 3> TailKernels() {
  constexpr auto seq = std::make_integer_sequence<int, kMaxVecs>();
  return {SlabKernels<kWeights, Tail::kFull>(seq), SlabKernels<kWeights, Tail::kUpToHalf>(seq),
          SlabKernels<kWeights, Tail::kOverHalf>(seq)};
}
// [weights][tail][vectors - 1]
constexpr std::array<std::array<std::array<SlabKernel, kMaxVecs>, 3>, 3> kSlabKernels = {
    TailKernels<EntryWeights::kNone>(), TailKernels<EntryWeights::kOne>(),
    TailKernels<EntryWeights::kPerHead>()};
#pragma GCC diagnostic pop
#endif  // __AVX512F__

}  // namespace

void Spmm(const int64_t* off, const int32_t* col, const float* w, int64_t w_heads, int64_t rows,
          const float* x, int64_t width, int mean, float* out) {
  if (rows == 0 || width == 0) return;
#if defined(__AVX512F__) && defined(__AVX512VL__)
  const int64_t heads = w_heads > 1 ? w_heads : 1;
  if (heads <= 16) {
    // lane_head[j] = head of column j (padded to whole vectors; padding lanes are masked off).
    const int64_t vecs = (width + 15) / 16;
    std::vector<int32_t> lane_head(vecs * 16, 0);
    if (w != nullptr) {
      for (int64_t j = 0; j < width; ++j) {
        lane_head[j] = static_cast<int32_t>(j / (width / heads));
      }
    }
    const EntryWeights weights = w == nullptr ? EntryWeights::kNone
                                 : heads == 1 ? EntryWeights::kOne
                                              : EntryWeights::kPerHead;
    const auto& kernels = kSlabKernels[static_cast<int>(weights)];
    constexpr int64_t kSlabWidth = 16 * kMaxVecs;
    ForRowChunks(off, rows, [&](int64_t lo, int64_t hi) {
      for (int64_t c0 = 0; c0 < width; c0 += kSlabWidth) {
        const int64_t slab = std::min(kSlabWidth, width - c0);
        const Tail tail = slab % 16 == 0  ? Tail::kFull
                          : slab % 16 <= 8 ? Tail::kUpToHalf
                                           : Tail::kOverHalf;
        kernels[static_cast<int>(tail)][(slab + 15) / 16 - 1](
            off, col, w, heads, lane_head.data() + c0, lo, hi, x, width, c0, slab, mean, out);
      }
    });
    return;
  }
#endif
  ForRowChunks(off, rows, [&](int64_t lo, int64_t hi) {
    SpmmRowsGeneric(off, col, w, w_heads, lo, hi, x, width, mean, out);
  });
}

void SpmmMax(const int64_t* off, const int32_t* col, int64_t rows, const float* x, int64_t width,
             float* out, int32_t* argmax) {
  ForRowsBalanced(off, rows, [&](int64_t r) {
    float* o = out + r * width;
    int32_t* am = argmax + r * width;
    const int64_t lo = off[r], hi = off[r + 1];
    if (lo == hi) {
      for (int64_t j = 0; j < width; ++j) {
        o[j] = 0.0f;
        am[j] = -1;
      }
      return;
    }
    const float* x0 = x + static_cast<int64_t>(col[lo]) * width;
    for (int64_t j = 0; j < width; ++j) {
      o[j] = x0[j];
      am[j] = col[lo];
    }
    const int64_t dist = PrefetchEntries(width);
    for (int64_t e = lo + 1; e < hi; ++e) {
      if (e + dist < hi) PrefetchSpan(x + static_cast<int64_t>(col[e + dist]) * width, width);
      const float* xr = x + static_cast<int64_t>(col[e]) * width;
      const int32_t c = col[e];
#pragma omp simd
      for (int64_t j = 0; j < width; ++j) {  // blends, so the loop vectorises
        const bool more = xr[j] > o[j];
        o[j] = more ? xr[j] : o[j];
        am[j] = more ? c : am[j];
      }
    }
  });
}

void SpmmMaxBackward(const int64_t* t_off, const int32_t* t_col, int64_t x_rows,
                     const int32_t* argmax, const float* gy, int64_t width, float* gx) {
  ForRowsBalanced(t_off, x_rows, [&](int64_t v) {
    float* g = gx + v * width;
    for (int64_t j = 0; j < width; ++j) g[j] = 0.0f;
    for (int64_t e = t_off[v]; e < t_off[v + 1]; ++e) {
      const int64_t r = t_col[e];
      const int32_t* am = argmax + r * width;
      const float* gr = gy + r * width;
      for (int64_t j = 0; j < width; ++j) {
        if (am[j] == v) g[j] += gr[j];
      }
    }
  });
  // A vertex listed twice in one row receives that row's gradient twice above; the forward picked
  // one entry, so duplicates are the caller's contract to avoid (graph builders deduplicate).
}

void SddmmDot(const int64_t* off, const int32_t* col, int64_t rows, int64_t /*nnz*/, const float* a,
              const float* b, int64_t width, int64_t heads, float* out) {
  const int64_t hw = width / heads;
  ForRowsBalanced(off, rows, [&](int64_t r) {
    const float* ar = a + r * width;
    for (int64_t e = off[r]; e < off[r + 1]; ++e) {
      const float* br = b + static_cast<int64_t>(col[e]) * width;
      for (int64_t h = 0; h < heads; ++h) {
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int64_t j = h * hw; j < (h + 1) * hw; ++j) s += ar[j] * br[j];
        out[e * heads + h] = s;
      }
    }
  });
}

void SddmmAdd(const int64_t* off, const int32_t* col, int64_t rows, int64_t /*nnz*/, const float* u,
              const float* v, int64_t heads, float* out) {
  ForRowsBalanced(off, rows, [&](int64_t r) {
    for (int64_t e = off[r]; e < off[r + 1]; ++e) {
      for (int64_t h = 0; h < heads; ++h) {
        out[e * heads + h] = u[r * heads + h] + v[static_cast<int64_t>(col[e]) * heads + h];
      }
    }
  });
}

void SegmentSoftmax(const int64_t* off, int64_t rows, const float* s, int64_t heads, float* y) {
  ForRowsBalanced(off, rows, [&](int64_t r) {
    const int64_t lo = off[r], hi = off[r + 1];
    for (int64_t h = 0; h < heads; ++h) {
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t e = lo; e < hi; ++e) mx = std::max(mx, s[e * heads + h]);
      double sum = 0.0;
      for (int64_t e = lo; e < hi; ++e) {
        const float ex = std::exp(s[e * heads + h] - mx);
        y[e * heads + h] = ex;
        sum += ex;
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t e = lo; e < hi; ++e) y[e * heads + h] *= inv;
    }
  });
}

void SegmentSoftmaxBackward(const int64_t* off, int64_t rows, const float* y, const float* gy,
                            int64_t heads, float* gs) {
  ForRowsBalanced(off, rows, [&](int64_t r) {
    const int64_t lo = off[r], hi = off[r + 1];
    for (int64_t h = 0; h < heads; ++h) {
      double dot = 0.0;
      for (int64_t e = lo; e < hi; ++e) dot += y[e * heads + h] * gy[e * heads + h];
      for (int64_t e = lo; e < hi; ++e) {
        gs[e * heads + h] = y[e * heads + h] * (gy[e * heads + h] - static_cast<float>(dot));
      }
    }
  });
}

void SegmentReduce(const int64_t* off, int64_t rows, const float* x, int64_t width, int reduce,
                   float* out, int32_t* argmax) {
  ForRowsBalanced(off, rows, [&](int64_t r) {
    float* o = out + r * width;
    const int64_t lo = off[r], hi = off[r + 1];
    if (reduce == 2) {
      int32_t* am = argmax + r * width;
      for (int64_t j = 0; j < width; ++j) {
        o[j] = lo < hi ? x[lo * width + j] : 0.0f;
        am[j] = lo < hi ? static_cast<int32_t>(lo) : -1;
      }
      for (int64_t e = lo + 1; e < hi; ++e) {
        const float* xr = x + e * width;
#pragma omp simd
        for (int64_t j = 0; j < width; ++j) {
          const bool more = xr[j] > o[j];
          o[j] = more ? xr[j] : o[j];
          am[j] = more ? static_cast<int32_t>(e) : am[j];
        }
      }
      return;
    }
    for (int64_t j = 0; j < width; ++j) o[j] = 0.0f;
    for (int64_t e = lo; e < hi; ++e) {
      const float* xr = x + e * width;
#pragma omp simd
      for (int64_t j = 0; j < width; ++j) o[j] += xr[j];
    }
    if (reduce == 1 && hi > lo) {
      const float inv = 1.0f / static_cast<float>(hi - lo);
      for (int64_t j = 0; j < width; ++j) o[j] *= inv;
    }
  });
}

void SegmentReduceBackward(const int64_t* off, int64_t segs, const float* g, const int32_t* argmax,
                           int64_t width, int reduce, float* gx) {
  ForRowsBalanced(off, segs, [&](int64_t s) {
    const int64_t lo = off[s], hi = off[s + 1];
    const float* gs = g + s * width;
    if (reduce == 2) {
      const int32_t* am = argmax + s * width;
      for (int64_t e = lo; e < hi; ++e) {
        float* out = gx + e * width;
#pragma omp simd
        for (int64_t j = 0; j < width; ++j) out[j] = am[j] == e ? gs[j] : 0.0f;
      }
      return;
    }
    const float f = reduce == 1 && hi > lo ? 1.0f / static_cast<float>(hi - lo) : 1.0f;
    for (int64_t e = lo; e < hi; ++e) {
      float* out = gx + e * width;
#pragma omp simd
      for (int64_t j = 0; j < width; ++j) out[j] = f * gs[j];
    }
  });
}

void GroupByIndex(const int32_t* idx, int64_t n, int64_t num_rows, int64_t* off, int32_t* pos) {
  std::fill(off, off + num_rows + 1, 0);
  for (int64_t k = 0; k < n; ++k) {
    FG_CHECK(idx[k] >= 0 && idx[k] < num_rows)
        << "GroupByIndex: index " << idx[k] << " outside [0, " << num_rows << ")";
    ++off[idx[k] + 1];
  }
  for (int64_t r = 0; r < num_rows; ++r) off[r + 1] += off[r];
  std::vector<int64_t> cursor(off, off + num_rows);
  for (int64_t k = 0; k < n; ++k) pos[cursor[idx[k]]++] = static_cast<int32_t>(k);
}

void GatherRows(const float* x, int64_t width, const int32_t* idx, int64_t n, float* out) {
  if (n == 0 || width == 0) return;
  constexpr int64_t kChunk = 1024;
  const int64_t dist = PrefetchEntries(width);
  ParallelFor(0, (n + kChunk - 1) / kChunk, [&](int64_t c) {
    const int64_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
    for (int64_t k = lo; k < std::min(hi, lo + dist); ++k) {
      PrefetchSpan(x + static_cast<int64_t>(idx[k]) * width, width);
    }
    for (int64_t k = lo; k < hi; ++k) {
      if (k + dist < hi) PrefetchSpan(x + static_cast<int64_t>(idx[k + dist]) * width, width);
      const float* xr = x + static_cast<int64_t>(idx[k]) * width;
      float* o = out + k * width;
#pragma omp simd
      for (int64_t j = 0; j < width; ++j) o[j] = xr[j];
    }
  });
}

}  // namespace fg::ops::cpu
