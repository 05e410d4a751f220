// CPU kernels for sparse and segment ops. Rows are processed in nnz-balanced chunks with dynamic
// scheduling; each output row is produced by one thread in entry order, so results are identical for
// any thread count. Gathered rows are prefetched a few entries ahead.
#include <algorithm>
#include <cmath>
#include <limits>

#include "flexgraph/base/parallel.h"
#include "flexgraph/ops/kernels.h"

namespace fg::ops::cpu {
namespace {

constexpr int kPrefetchDistance = 8;

// Calls body(row) over [0, rows) in parallel, scheduling row chunks of roughly equal entry count.
template <typename F>
void ForRowsBalanced(const int64_t* off, int64_t rows, F&& body) {
  if (rows == 0) return;
  const int64_t nnz = off[rows];
  const int threads = NumThreads();
  if (threads == 1 || rows < 64) {
    for (int64_t r = 0; r < rows; ++r) body(r);
    return;
  }
  // Chunks of ~equal (nnz + rows) work; boundaries depend only on the matrix.
  const int64_t chunks = std::min<int64_t>(rows, threads * 32);
  const int64_t total = nnz + rows;
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
    for (int64_t row = bounds[c]; row < bounds[c + 1]; ++row) body(row);
  });
}

inline void Prefetch(const float* p) { __builtin_prefetch(p, 0, 1); }

}  // namespace

void Spmm(const int64_t* off, const int32_t* col, const float* w, int64_t w_heads, int64_t rows,
          const float* x, int64_t width, int mean, float* out) {
  const int64_t head_width = w_heads > 1 ? width / w_heads : width;
  ForRowsBalanced(off, rows, [&](int64_t r) {
    float* o = out + r * width;
    for (int64_t j = 0; j < width; ++j) o[j] = 0.0f;
    const int64_t lo = off[r], hi = off[r + 1];
    for (int64_t e = lo; e < hi; ++e) {
      if (e + kPrefetchDistance < hi) {
        const float* nxt = x + static_cast<int64_t>(col[e + kPrefetchDistance]) * width;
        for (int64_t j = 0; j < width; j += 16) Prefetch(nxt + j);
      }
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
    for (int64_t e = lo + 1; e < hi; ++e) {
      const float* xr = x + static_cast<int64_t>(col[e]) * width;
      const int32_t c = col[e];
      for (int64_t j = 0; j < width; ++j) {
        if (xr[j] > o[j]) {
          o[j] = xr[j];
          am[j] = c;
        }
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

void SddmmDot(const int64_t* off, const int32_t* col, int64_t rows, const float* a,
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

void SddmmAdd(const int64_t* off, const int32_t* col, int64_t rows, const float* u,
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
        for (int64_t j = 0; j < width; ++j) {
          if (x[e * width + j] > o[j]) {
            o[j] = x[e * width + j];
            am[j] = static_cast<int32_t>(e);
          }
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

void GatherRows(const float* x, int64_t width, const int32_t* idx, int64_t n, float* out) {
  ParallelFor(0, (n + 255) / 256, [&](int64_t c) {
    const int64_t hi = std::min(n, (c + 1) * 256);
    for (int64_t k = c * 256; k < hi; ++k) {
      if (k + kPrefetchDistance < hi) Prefetch(x + static_cast<int64_t>(idx[k + kPrefetchDistance]) * width);
      const float* xr = x + static_cast<int64_t>(idx[k]) * width;
      float* o = out + k * width;
#pragma omp simd
      for (int64_t j = 0; j < width; ++j) o[j] = xr[j];
    }
  });
}

}  // namespace fg::ops::cpu
