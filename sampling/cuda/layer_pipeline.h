// Internal to sampling: the device's layer-wise (LADIES) sampling of a bulk's stacked rows, written
// once over a backend of data-parallel primitives, so that the CUDA one (layer_kernels.cu) runs it
// on a GPU and a sequential host one runs the same steps in tests (device_sampler_test.cc).
//
// A batch's columns in order of first appearance come from a stable sort of its entries by
// (batch, column): each run of equal keys is a column, its first entry the smallest, its mass summed
// over the run in entry order (one step per column, as the host sums); the columns sorted by first
// entry are every batch's columns in the host's order. Cumulative masses are summed per block of
// kMassBlock columns, then per batch over the blocks (layer_pick.h); draws count into their
// columns; a scan over the entries places the kept ones, and one step per row weighs only its kept
// entries (a hub's row is long; what it keeps is short), rescaled to the row's weight sum.
//
// A backend B provides, on its memory (Array<T>: get() gives T*; at least one element):
//   Make<T>(n); ForEach(n, f) calls f(i) for i in [0, n) in any order, concurrently;
//   SortPairs(keys_in, keys_out, values_in, values_out, n, end_bit) (stable, keys below 2^end_bit);
//   InclusiveSum(in, out, n), ExclusiveSum(in, out, n) over int64; Zero(p, n);
//   ToHost(p, n) -> std::vector<T>; ToDevice(p, host vector).
// Free of Abseil so that nvcc compiles it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "flexgraph/ops/shared/sparse.h"
#include "sampling/layer_pick.h"
#include "sampling/pick.h"

namespace fg::sampling::layer_steps {

// Adds one to a count that several steps may share (atomically on the device; a host backend runs
// steps one at a time).
FG_HD void CountUp(int64_t* p) {
#if defined(__CUDA_ARCH__)
  atomicAdd(reinterpret_cast<unsigned long long*>(p), 1ull);
#else
  ++*p;
#endif
}
FG_HD void CountUp(int32_t* p) {
#if defined(__CUDA_ARCH__)
  atomicAdd(p, 1);
#else
  ++*p;
#endif
}

// Entry i (stacked: row r's entries are eoff[r] .. eoff[r + 1], its root's own entry first, as the
// host sees a row): its CSR position and its sort key (batch, column).
struct EntryKeys {
  MatrixView a;
  const int64_t *row, *eoff;
  const int32_t* group;
  int64_t R;
  uint64_t* keys;
  int32_t* idx;
  int64_t* entry;
  FG_HD void operator()(int64_t i) const {
    const int64_t r = ops::shared::RowOfEntry(eoff, R, i);
    const int64_t own = a.own_entry != nullptr ? a.own_entry[row[r]] : -1;
    const int64_t e = a.row_ptr[row[r]] + StoredEntry(i - eoff[r], own);
    entry[i] = e;
    keys[i] = (static_cast<uint64_t>(group[r]) << 32) | static_cast<uint32_t>(a.col[e]);
    idx[i] = static_cast<int32_t>(i);
  }
};

struct Heads {
  const uint64_t* keys;
  int64_t* head;
  FG_HD void operator()(int64_t j) const { head[j] = j == 0 || keys[j] != keys[j - 1] ? 1 : 0; }
};

// seg[j]: 1 + the column of sorted entry j. start[c]: the first sorted entry of column c; start[NS]:
// E.
struct ColumnStarts {
  const int64_t *head, *seg;
  int64_t E;
  int32_t* start;
  FG_HD void operator()(int64_t j) const {
    if (head[j] != 0) start[seg[j] - 1] = static_cast<int32_t>(j);
    if (j == E - 1) start[seg[j]] = static_cast<int32_t>(E);
  }
};

// Per column (in key order): its first entry, its mass (entry order) and its batch's count.
struct ColumnMass {
  const float* w;
  const uint64_t* keys;
  const int32_t *idx, *start;
  const int64_t* entry;
  int32_t *first, *iota;
  double* mass;
  int64_t* columns;
  FG_HD void operator()(int64_t c) const {
    const int32_t j0 = start[c], j1 = start[c + 1];
    double m = 0.0;
    for (int32_t j = j0; j < j1; ++j) m = AddMass(m, w, entry[idx[j]]);
    first[c] = idx[j0];
    mass[c] = m;
    iota[c] = static_cast<int32_t>(c);
    CountUp(columns + (keys[j0] >> 32));
  }
};

// Position q of the columns in first-appearance order: its mass; where its column went.
struct PlaceColumns {
  const int32_t* order;
  const double* column_mass;
  double* mass;
  int32_t* position;
  FG_HD void operator()(int64_t q) const {
    const int32_t c = order[q];
    mass[q] = column_mass[c];
    position[c] = static_cast<int32_t>(q);
  }
};

struct EntryPositions {
  const int32_t* idx;
  const int64_t* seg;
  const int32_t* position;
  int32_t* entry_pos;
  FG_HD void operator()(int64_t j) const { entry_pos[idx[j]] = position[seg[j] - 1]; }
};

// Sums within block b of positions [begin[b], end[b]), in order.
struct BlockSums {
  const double* mass;
  const int64_t *begin, *end;
  double *cumulative, *block_total;
  FG_HD void operator()(int64_t b) const {
    double within = 0.0;
    for (int64_t q = begin[b]; q < end[b]; ++q) cumulative[q] = within = AddRounded(within, mass[q]);
    block_total[b] = within;
  }
};

// Batch k, over its blocks [first[k], first[k + 1]) in order: each block's offset; the total.
struct BatchOffsets {
  const int64_t* first;
  const double* block_total;
  double *block_offset, *total;
  FG_HD void operator()(int64_t k) const {
    double offset = 0.0;
    for (int64_t b = first[k]; b < first[k + 1]; ++b) {
      block_offset[b] = offset;
      offset = AddRounded(offset, block_total[b]);
    }
    total[k] = offset;
  }
};

struct AddOffsets {
  const int64_t *begin, *end;
  const double* block_offset;
  double* cumulative;
  FG_HD void operator()(int64_t b) const {
    for (int64_t q = begin[b]; q < end[b]; ++q) cumulative[q] = AddRounded(block_offset[b], cumulative[q]);
  }
};

// Draw t: draw t % S of batch t / S.
struct Draws {
  uint64_t seed;
  const uint64_t* streams;
  int64_t S;
  const int64_t* column_base;
  const double *cumulative, *total;
  int32_t* draws;
  FG_HD void operator()(int64_t t) const {
    const int64_t k = t / S, s = t % S;
    if (!(total[k] > 0)) return;
    const int64_t base = column_base[k], n = column_base[k + 1] - base;
    CountUp(draws + base + DrawnColumn(cumulative + base, n, DrawPoint(seed, streams[k], s, total[k])));
  }
};

// Whether entry i is kept (its column drawn), as 0 or 1 for the scan of output positions.
struct KeepFlags {
  const int32_t *entry_pos, *draws;
  int64_t* keep;
  FG_HD void operator()(int64_t i) const { keep[i] = draws[entry_pos[i]] > 0 ? 1 : 0; }
};

// Row r's kept entries begin at the kept position of its first entry.
struct KeptOffsets {
  const int64_t *eoff, *at;
  int64_t* koff;
  FG_HD void operator()(int64_t r) const { koff[r] = at[eoff[r]]; }
};

struct WriteEntries {
  MatrixView a;
  const int64_t *entry, *keep, *at;
  int32_t *cols, *kept_entry;
  FG_HD void operator()(int64_t i) const {
    if (keep[i] == 0) return;
    cols[at[i]] = a.col[entry[i]];
    kept_entry[at[i]] = static_cast<int32_t>(i);
  }
};

// Row r's kept weights (importance-weighted), rescaled to its weight sum: the host's arithmetic,
// in its order, over the row's kept entries only.
struct RowWeights {
  MatrixView a;
  const int64_t *row, *entry, *koff;
  const int32_t *group, *entry_pos, *draws, *kept_entry;
  const double *mass, *total;
  int64_t S;
  float* weights;
  FG_HD void operator()(int64_t r) const {
    double kept = 0.0;
    for (int64_t t = koff[r]; t < koff[r + 1]; ++t) {
      const int32_t i = kept_entry[t];
      const int32_t q = entry_pos[i];
      const double x = KeptEntryWeight(a.weights[entry[i]], draws[q], S, mass[q], total[group[r]]);
      weights[t] = static_cast<float>(x);
      kept = AddRounded(kept, x);
    }
    if (kept > 0) {
      const float scale = static_cast<float>(a.row_sums[row[r]] / kept);
      for (int64_t t = koff[r]; t < koff[r + 1]; ++t) weights[t] *= scale;
    }
  }
};

inline int BitsFor(uint64_t max_value) {
  int bits = 1;
  while (bits < 64 && (uint64_t{1} << bits) <= max_value) ++bits;
  return bits;
}

}  // namespace fg::sampling::layer_steps

namespace fg::sampling {

// The stacked rows of K batches (batch-major: group[r] is row r's batch, ascending) in the
// backend's memory: row[r] (a row of `a`, every one valid), group[r]; on the host, entry_offsets
// (R + 1: the exclusive sums of the rows' degrees; at most 2^31 - 1 entries) and streams[k] (batch
// k's LayerWiseStream). Each batch draws `layer_size` columns among its rows' entries; on return, on
// the host: kept_offsets (R + 1), the kept entries' column ids and, where `a` is weighted, their
// weights (`a` then has row_sums).
template <typename B>
void RunLayerWise(B& backend, const MatrixView& a, uint64_t seed, int64_t layer_size, const int64_t* row,
                  const int32_t* group, const std::vector<int64_t>& entry_offsets,
                  const std::vector<uint64_t>& streams, std::vector<int64_t>* kept_offsets,
                  std::vector<int32_t>* cols, std::vector<float>* weights) {
  using namespace layer_steps;  // NOLINT: the steps of this pipeline
  const int64_t R = static_cast<int64_t>(entry_offsets.size()) - 1, K = static_cast<int64_t>(streams.size());
  const int64_t E = entry_offsets[R];
  const int64_t S = layer_size;
  // Every entry's key, sorted stably: each batch's columns, entries in order within each.
  auto eoff = backend.template Make<int64_t>(R + 1);
  auto entry = backend.template Make<int64_t>(E);
  backend.ToDevice(eoff.get(), entry_offsets);
  auto keys = backend.template Make<uint64_t>(2 * E);
  auto idx = backend.template Make<int32_t>(2 * E);
  auto head = backend.template Make<int64_t>(E);
  auto seg = backend.template Make<int64_t>(E);
  backend.ForEach(E, EntryKeys{a, row, eoff.get(), group, R, keys.get(), idx.get(), entry.get()});
  uint64_t* keys_sorted = keys.get() + E;
  int32_t* idx_sorted = idx.get() + E;
  backend.SortPairs(keys.get(), keys_sorted, idx.get(), idx_sorted, E, 32 + BitsFor(static_cast<uint64_t>(K)));
  // Columns: runs of equal keys.
  int64_t NS = 0;
  if (E > 0) {
    backend.ForEach(E, Heads{keys_sorted, head.get()});
    backend.InclusiveSum(head.get(), seg.get(), E);
    NS = backend.ToHost(seg.get() + E - 1, 1)[0];
  }
  auto start = backend.template Make<int32_t>(NS + 1);
  auto first = backend.template Make<int32_t>(2 * NS);
  auto order = backend.template Make<int32_t>(2 * NS);
  auto position = backend.template Make<int32_t>(NS);
  auto entry_pos = backend.template Make<int32_t>(E);
  auto column_mass = backend.template Make<double>(NS);
  auto mass = backend.template Make<double>(NS);
  auto cumulative = backend.template Make<double>(NS);
  auto columns = backend.template Make<int64_t>(K);
  backend.Zero(columns.get(), K);
  if (NS > 0) {
    backend.ForEach(E, ColumnStarts{head.get(), seg.get(), E, start.get()});
    backend.ForEach(NS, ColumnMass{a.weights, keys_sorted, idx_sorted, start.get(), entry.get(), first.get(),
                                   order.get(), column_mass.get(), columns.get()});
    // First-appearance order: the columns sorted by their first entries (batch-major, as entries are).
    backend.SortPairs(first.get(), first.get() + NS, order.get(), order.get() + NS, NS,
                      BitsFor(static_cast<uint64_t>(E)));
    backend.ForEach(NS, PlaceColumns{order.get() + NS, column_mass.get(), mass.get(), position.get()});
    backend.ForEach(E, EntryPositions{idx_sorted, seg.get(), position.get(), entry_pos.get()});
  }
  // Each batch's columns, and their blocks of kMassBlock.
  const std::vector<int64_t> per_batch = backend.ToHost(columns.get(), K);
  std::vector<int64_t> column_base(K + 1, 0), block_first(K + 1, 0), block_begin, block_end;
  for (int64_t k = 0; k < K; ++k) {
    column_base[k + 1] = column_base[k] + per_batch[k];
    for (int64_t q = column_base[k]; q < column_base[k + 1]; q += kMassBlock) {
      block_begin.push_back(q);
      block_end.push_back(std::min(column_base[k + 1], q + kMassBlock));
    }
    block_first[k + 1] = static_cast<int64_t>(block_begin.size());
  }
  const int64_t blocks = static_cast<int64_t>(block_begin.size());
  auto d_column_base = backend.template Make<int64_t>(K + 1);
  auto d_block_first = backend.template Make<int64_t>(K + 1);
  auto d_block_begin = backend.template Make<int64_t>(blocks);
  auto d_block_end = backend.template Make<int64_t>(blocks);
  auto d_streams = backend.template Make<uint64_t>(K);
  backend.ToDevice(d_column_base.get(), column_base);
  backend.ToDevice(d_block_first.get(), block_first);
  backend.ToDevice(d_block_begin.get(), block_begin);
  backend.ToDevice(d_block_end.get(), block_end);
  backend.ToDevice(d_streams.get(), streams);
  auto block_total = backend.template Make<double>(blocks);
  auto block_offset = backend.template Make<double>(blocks);
  auto total = backend.template Make<double>(K);
  auto draws = backend.template Make<int32_t>(NS);
  backend.Zero(draws.get(), NS);
  backend.ForEach(blocks, BlockSums{mass.get(), d_block_begin.get(), d_block_end.get(), cumulative.get(),
                                    block_total.get()});
  backend.ForEach(K, BatchOffsets{d_block_first.get(), block_total.get(), block_offset.get(), total.get()});
  backend.ForEach(blocks, AddOffsets{d_block_begin.get(), d_block_end.get(), block_offset.get(), cumulative.get()});
  backend.ForEach(K * S, Draws{seed, d_streams.get(), S, d_column_base.get(), cumulative.get(), total.get(),
                               draws.get()});
  // The kept entries: their positions (a scan over the entries' flags), each row's first, the
  // entries, then each row's weights.
  auto keep = backend.template Make<int64_t>(E + 1);
  auto at = backend.template Make<int64_t>(E + 1);
  auto koff = backend.template Make<int64_t>(R + 1);
  backend.Zero(keep.get() + E, 1);
  backend.ForEach(E, KeepFlags{entry_pos.get(), draws.get(), keep.get()});
  backend.ExclusiveSum(keep.get(), at.get(), E + 1);
  backend.ForEach(R + 1, KeptOffsets{eoff.get(), at.get(), koff.get()});
  *kept_offsets = backend.ToHost(koff.get(), R + 1);
  const int64_t N = (*kept_offsets)[R];
  const bool weighted = a.weights != nullptr;
  auto d_cols = backend.template Make<int32_t>(N);
  auto kept_entry = backend.template Make<int32_t>(N);
  auto d_weights = backend.template Make<float>(weighted ? N : 0);
  if (N > 0) {
    backend.ForEach(E, WriteEntries{a, entry.get(), keep.get(), at.get(), d_cols.get(), kept_entry.get()});
    if (weighted) {
      backend.ForEach(R, RowWeights{a, row, entry.get(), koff.get(), group, entry_pos.get(), draws.get(),
                                    kept_entry.get(), mass.get(), total.get(), S, d_weights.get()});
    }
  }
  *cols = backend.ToHost(d_cols.get(), N);
  *weights = weighted ? backend.ToHost(d_weights.get(), N) : std::vector<float>();
}

}  // namespace fg::sampling
