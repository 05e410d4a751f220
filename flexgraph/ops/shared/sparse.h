// Kernel bodies of the sparse and segment ops (SpMM, SDDMM, segment reductions, segment softmax,
// gather), shared by the CUDA kernels (ops/cuda/sparse_kernels.cu) and exercised on the CPU by
// tests/cuda/shared_kernels_test.cc against the CPU backend. Each function produces one output
// element, one (row, column) or one (segment, head), visiting entries in CSR order, so results are
// deterministic and match the CPU kernels' summation order. Pure functions: thread-safe.
//
//   // one CUDA thread, or one CPU loop iteration, per (row r, column j):
//   out[r * width + j] = SpmmElement(off, col, w, heads, r, x, width, j, mean);
#pragma once

#include <math.h>

#include <cstdint>

#include "flexgraph/base/hd.h"

namespace fg::ops::shared {

// out[r, j] = reduce over row r's entries e of w(e, head of j) * x[col(e), j]; w == nullptr means
// all ones; w_heads > 1 splits the width into that many slices with one weight each; mean divides
// by the degree (empty rows give 0).
FG_HD float SpmmElement(const int64_t* off, const int32_t* col, const float* w, int64_t w_heads,
                        int64_t r, const float* x, int64_t width, int64_t j, int mean) {
  const int64_t lo = off[r], hi = off[r + 1];
  const int64_t h = w_heads > 1 ? j / (width / w_heads) : 0;
  const int64_t ws = w_heads > 1 ? w_heads : 1;
  float s = 0.0f;
  for (int64_t e = lo; e < hi; ++e) {
    const float xv = x[static_cast<int64_t>(col[e]) * width + j];
    s += w == nullptr ? xv : w[e * ws + h] * xv;
  }
  if (mean && hi > lo) s *= 1.0f / static_cast<float>(hi - lo);
  return s;
}

// Max over row r's entries of x[col(e), j] (first maximum wins); empty rows give 0 and argmax -1.
FG_HD float SpmmMaxElement(const int64_t* off, const int32_t* col, int64_t r, const float* x,
                           int64_t width, int64_t j, int32_t* argmax) {
  const int64_t lo = off[r], hi = off[r + 1];
  if (lo == hi) {
    *argmax = -1;
    return 0.0f;
  }
  float best = x[static_cast<int64_t>(col[lo]) * width + j];
  int32_t arg = col[lo];
  for (int64_t e = lo + 1; e < hi; ++e) {
    const float v = x[static_cast<int64_t>(col[e]) * width + j];
    if (v > best) {
      best = v;
      arg = col[e];
    }
  }
  *argmax = arg;
  return best;
}

// Gradient of SpmmMax for x[v, j], walking the transposed structure (row v of the transpose lists
// the output rows that read x row v): the sum of gy[r, j] over those r whose argmax is v.
FG_HD float SpmmMaxBackwardElement(const int64_t* t_off, const int32_t* t_col, int64_t v,
                                   const int32_t* argmax, const float* gy, int64_t width,
                                   int64_t j) {
  float g = 0.0f;
  for (int64_t e = t_off[v]; e < t_off[v + 1]; ++e) {
    const int64_t r = t_col[e];
    if (argmax[r * width + j] == v) g += gy[r * width + j];
  }
  return g;
}

// <a_row, b_row> over head h's slice of `head_width` features.
FG_HD float DotSlice(const float* a_row, const float* b_row, int64_t h, int64_t head_width) {
  float s = 0.0f;
  for (int64_t j = h * head_width; j < (h + 1) * head_width; ++j) s += a_row[j] * b_row[j];
  return s;
}

// Row of entry e by binary search over offsets (the CUDA kernels walk entries, not rows).
FG_HD int64_t RowOfEntry(const int64_t* off, int64_t rows, int64_t e) {
  int64_t lo = 0, hi = rows;  // invariant: off[lo] <= e < off[hi]
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (off[mid] <= e) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Segment softmax of column h of scores s [entries, heads] over the segment [lo, hi).
FG_HD void SegmentSoftmaxColumn(int64_t lo, int64_t hi, const float* s, int64_t heads, int64_t h,
                                float* y) {
  float mx = -INFINITY;
  for (int64_t e = lo; e < hi; ++e) mx = fmaxf(mx, s[e * heads + h]);
  double sum = 0.0;
  for (int64_t e = lo; e < hi; ++e) {
    const float ex = expf(s[e * heads + h] - mx);
    y[e * heads + h] = ex;
    sum += ex;
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t e = lo; e < hi; ++e) y[e * heads + h] *= inv;
}

// gs = y * (gy - <y, gy>) over the segment [lo, hi), column h.
FG_HD void SegmentSoftmaxBackwardColumn(int64_t lo, int64_t hi, const float* y, const float* gy,
                                        int64_t heads, int64_t h, float* gs) {
  double dot = 0.0;
  for (int64_t e = lo; e < hi; ++e) dot += y[e * heads + h] * gy[e * heads + h];
  for (int64_t e = lo; e < hi; ++e) {
    gs[e * heads + h] = y[e * heads + h] * (gy[e * heads + h] - static_cast<float>(dot));
  }
}

// Column j of the reduction of rows [lo, hi) of x [entries, width]: reduce 0 sum, 1 mean, 2 max
// (argmax receives the winning entry, -1 for an empty segment, whose value is 0).
FG_HD float SegmentReduceElement(int64_t lo, int64_t hi, const float* x, int64_t width, int64_t j,
                                 int reduce, int32_t* argmax) {
  if (reduce == 2) {
    if (lo == hi) {
      *argmax = -1;
      return 0.0f;
    }
    float best = x[lo * width + j];
    int32_t arg = static_cast<int32_t>(lo);
    for (int64_t e = lo + 1; e < hi; ++e) {
      if (x[e * width + j] > best) {
        best = x[e * width + j];
        arg = static_cast<int32_t>(e);
      }
    }
    *argmax = arg;
    return best;
  }
  float s = 0.0f;
  for (int64_t e = lo; e < hi; ++e) s += x[e * width + j];
  if (reduce == 1 && hi > lo) s *= 1.0f / static_cast<float>(hi - lo);
  return s;
}

}  // namespace fg::ops::shared
