// Internal to sampling: the per-row steps of node-wise sampling, shared by the host sampler
// (sampler.cc: the draws) and the device one (cuda/rows_kernels.cu: every step, one thread per
// row), so that both keep the same entries.
//
// Row r of batch k draws words from PhiloxBlock(seed, b, stream) for b = 0, 1, ... (four words a
// block), stream = MixStep(prefix[k], key of r); it keeps `keep` of its d entries by Floyd's
// algorithm, in ascending order, where index 0 is the row's own entry (if any) and the others
// follow in stored order.
#pragma once

#include <cstdint>

#include "flexgraph/base/hd.h"
#include "flexgraph/base/rng.h"

namespace fg::sampling {

constexpr uint64_t kNodeWiseTag = 0x5A3F1;

// The first three MixKey steps of the streams of batch `batch`'s rows at layer `layer`: a row's
// stream is MixStep(prefix, its key), i.e. MixKey(kNodeWiseTag ^ epoch, batch, layer, key).
inline uint64_t NodeWiseStreamPrefix(int epoch, int64_t batch, int layer) {
  return MixStep(MixStep(MixStep(kMixKeyStart, kNodeWiseTag ^ static_cast<uint64_t>(epoch)),
                         static_cast<uint64_t>(batch)),
                 static_cast<uint64_t>(layer));
}

// The words of one row's stream, drawn as needed (RandomStream::NextU32's sequence).
struct RowWords {
  uint64_t seed, stream, counter = 0;
  Philox4 block{};
  int pos = 4;
  FG_HD uint32_t NextU32() {
    if (pos == 4) {
      block = PhiloxBlock(seed, counter++, stream);
      pos = 0;
    }
    // Constant indices only: the block stays in registers on the device.
    const int at = pos++;
    return at == 0 ? block.v[0] : at == 1 ? block.v[1] : at == 2 ? block.v[2] : block.v[3];
  }
};

// Uniform integer in [0, n), n <= 2^32, from one 32-bit draw (multiply-shift; bias below n / 2^32).
template <typename Words>
FG_HD int64_t Below(Words& words, int64_t n) {
  return static_cast<int64_t>((static_cast<uint64_t>(words.NextU32()) * static_cast<uint64_t>(n)) >> 32);
}

// Floyd's algorithm: `k` <= d < 2^31 distinct indices of [0, d) into picks[0 .. k) (any order;
// k draws), the picks so far checked by a scan. Any other store of the picks (a bit mask) that
// answers "taken?" the same way gives the same picks.
template <typename Words, typename Index>
FG_HD void FloydPicks(Words& words, int64_t d, int64_t k, Index* picks) {
  for (int64_t j = d - k, n = 0; j < d; ++j, ++n) {
    const int64_t t = Below(words, j + 1);
    bool taken = false;
    for (int64_t i = 0; i < n; ++i) taken |= picks[i] == t;
    // t taken already: j is new (every earlier pick is below j).
    picks[n] = static_cast<Index>(taken ? j : t);
  }
}

// Ascending order of a few values in place (insertion sort).
template <typename Index>
FG_HD void SortFew(Index* v, int64_t n) {
  for (int64_t i = 1; i < n; ++i) {
    const Index x = v[i];
    int64_t j = i;
    for (; j > 0 && v[j - 1] > x; --j) v[j] = v[j - 1];
    v[j] = x;
  }
}

// The stored position of pick t of a row whose own entry is stored at `own` (-1: none): index 0
// is the own entry, then the others in stored order.
FG_HD int64_t StoredEntry(int64_t t, int64_t own) {
  if (own < 0) return t;
  return t == 0 ? own : (t - 1 < own ? t - 1 : t);
}

// The scale of a row's kept weights, so that their sum estimates the full row's: d / keep.
FG_HD float KeptWeightScale(int64_t d, int64_t keep) {
  return static_cast<float>(d) / static_cast<float>(keep);
}

// A layer's neighbourhood matrix as arrays, in host or device memory (NeighbourhoodMatrix's).
struct MatrixView {
  const int64_t* row_ptr = nullptr;
  const int32_t* col = nullptr;
  const float* weights = nullptr;      // null: unweighted
  const int32_t* own_entry = nullptr;  // null: no row holds its root
  const int64_t* keys = nullptr;       // null: a row's key is its root's id
  const int32_t* row_of = nullptr;     // null: the roots are first_root .. first_root + num_roots - 1
  const double* row_sums = nullptr;    // per row, its weights' sum (layer-wise sampling); null: none
  int64_t first_root = 0, num_roots = 0, num_vertices = 0;
};

// Vertex v's row of a, -1 where it has none (NeighbourhoodMatrix::RowOf).
FG_HD int64_t RowOf(const MatrixView& a, int64_t v) {
  if (v < 0 || v >= a.num_vertices) return -1;
  if (a.row_of != nullptr) return a.row_of[v];
  const int64_t r = v - a.first_root;
  return r >= 0 && r < a.num_roots ? r : -1;
}

// The entries row `row` keeps: min(fanout, degree), all of them for fanout 0.
FG_HD int64_t KeptEntries(const MatrixView& a, int64_t row, int fanout) {
  const int64_t d = a.row_ptr[row + 1] - a.row_ptr[row];
  return fanout > 0 && fanout < d ? fanout : d;
}

// The `keep` kept entries of row `row` (the row of `vertex`, in the batch whose stream prefix is
// `prefix`): their column ids into cols[0 .. keep) and, where a is weighted, their weights scaled
// by KeptWeightScale into weights[0 .. keep). cols holds the picks first.
FG_HD void DrawRow(const MatrixView& a, uint64_t seed, uint64_t prefix, int64_t vertex, int64_t row,
                   int64_t keep, int32_t* cols, float* weights) {
  const int64_t b = a.row_ptr[row], d = a.row_ptr[row + 1] - b;
  if (keep == d) {
    for (int64_t t = 0; t < d; ++t) {
      cols[t] = a.col[b + t];
      if (a.weights != nullptr) weights[t] = a.weights[b + t];
    }
    return;
  }
  const uint64_t key = static_cast<uint64_t>(a.keys != nullptr ? a.keys[row] : vertex);
  RowWords words{seed, MixStep(prefix, key)};
  FloydPicks(words, d, keep, cols);
  SortFew(cols, keep);
  const int64_t own = a.own_entry != nullptr ? a.own_entry[row] : -1;
  const float scale = KeptWeightScale(d, keep);
  for (int64_t t = 0; t < keep; ++t) {
    const int64_t e = b + StoredEntry(cols[t], own);
    cols[t] = a.col[e];
    if (a.weights != nullptr) weights[t] = a.weights[e] * scale;
  }
}

}  // namespace fg::sampling
