// CUDA kernels of layer-wise (LADIES) sampling over a bulk's stacked rows (cuda/layer.h). A batch's
// columns in order of first appearance come from a stable sort of its entries by (batch, column):
// each run of equal keys is a column, its first entry the smallest, its mass summed over the run
// in entry order (one thread per column, as the host sums); the columns sorted by first entry are
// every batch's columns in the host's order. Cumulative masses are summed per block of kMassBlock
// columns, then per batch over the blocks, as layer_pick.h prescribes; draws count into their
// columns with atomics (integers: any order gives the same counts); the kept entries are placed by
// a scan over all entries, and one thread per row weighs its kept ones in the host's order (a
// hub's row is long; what it keeps is short).
#include <cub/cub.cuh>

#include <algorithm>

#include "flexgraph/ops/cuda/cuda_util.h"
#include "flexgraph/ops/shared/sparse.h"
#include "flexgraph/tensor/device_alloc.h"
#include "sampling/cuda/layer.h"
#include "sampling/layer_pick.h"

namespace fg::sampling::cuda {
namespace {

using ops::cuda::BlocksFor;
using ops::cuda::CurrentStream;
using ops::cuda::kThreads;

// Device memory of n elements of T for one call (the stream-ordered caching allocator's).
template <typename T>
class Scratch {
 public:
  explicit Scratch(int64_t n) : n_(n < 1 ? 1 : n), p_(static_cast<T*>(DeviceAlloc(sizeof(T) * n_))) {}
  ~Scratch() { DeviceFree(p_, sizeof(T) * n_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* get() const { return p_; }

 private:
  int64_t n_;
  T* p_;
};

template <typename T>
std::vector<T> ToHost(const T* device, int64_t n) {
  std::vector<T> host(n);
  if (n > 0) DeviceCopy(host.data(), false, device, true, sizeof(T) * n);
  return host;
}
template <typename T>
void ToDevice(T* device, const std::vector<T>& host) {
  if (!host.empty()) DeviceCopy(device, true, host.data(), false, sizeof(T) * host.size());
}

int BitsFor(uint64_t max_value) {
  int bits = 1;
  while (bits < 64 && (uint64_t{1} << bits) <= max_value) ++bits;
  return bits;
}

// Entry i (stacked: row r's entries are eoff[r] .. eoff[r + 1]): its CSR position and its sort key
// (batch, column).
__global__ void __launch_bounds__(kThreads)
    EntryKeysKernel(MatrixView a, const int64_t* __restrict__ row, const int32_t* __restrict__ group,
                    const int64_t* __restrict__ eoff, int64_t R, int64_t E, uint64_t* __restrict__ keys,
                    int32_t* __restrict__ idx, int64_t* __restrict__ entry) {
  FG_GRID_STRIDE(i, E) {
    const int64_t lo = ops::shared::RowOfEntry(eoff, R, i);
    const int64_t e = a.row_ptr[row[lo]] + (i - eoff[lo]);
    entry[i] = e;
    keys[i] = (static_cast<uint64_t>(group[lo]) << 32) | static_cast<uint32_t>(a.col[e]);
    idx[i] = static_cast<int32_t>(i);
  }
}

__global__ void __launch_bounds__(kThreads)
    HeadsKernel(const uint64_t* __restrict__ keys, int64_t E, int64_t* __restrict__ head) {
  FG_GRID_STRIDE(j, E) { head[j] = j == 0 || keys[j] != keys[j - 1] ? 1 : 0; }
}

// seg[j]: 1 + the column of sorted entry j. start[c]: the first sorted entry of column c; start[NS]:
// E.
__global__ void __launch_bounds__(kThreads)
    ColumnStartsKernel(const int64_t* __restrict__ head, const int64_t* __restrict__ seg, int64_t E,
                       int32_t* __restrict__ start) {
  FG_GRID_STRIDE(j, E) {
    if (head[j] != 0) start[seg[j] - 1] = static_cast<int32_t>(j);
    if (j == E - 1) start[seg[j]] = static_cast<int32_t>(E);
  }
}

// Per column (in key order): its first entry, its mass (entry order) and its batch's count.
__global__ void __launch_bounds__(kThreads)
    ColumnMassKernel(const float* __restrict__ w, const uint64_t* __restrict__ keys,
                     const int32_t* __restrict__ idx, const int64_t* __restrict__ entry,
                     const int32_t* __restrict__ start, int64_t NS, int32_t* __restrict__ first,
                     double* __restrict__ mass, int32_t* __restrict__ iota, int64_t* __restrict__ columns) {
  FG_GRID_STRIDE(c, NS) {
    const int32_t j0 = start[c], j1 = start[c + 1];
    double m = 0.0;
    for (int32_t j = j0; j < j1; ++j) m = AddMass(m, w, entry[idx[j]]);
    first[c] = idx[j0];
    mass[c] = m;
    iota[c] = static_cast<int32_t>(c);
    atomicAdd(reinterpret_cast<unsigned long long*>(columns + (keys[j0] >> 32)), 1ull);
  }
}

// Position q of the columns in first-appearance order: its mass; where its column went.
__global__ void __launch_bounds__(kThreads)
    PlaceColumnsKernel(const int32_t* __restrict__ order, int64_t NS, const double* __restrict__ column_mass,
                       double* __restrict__ mass, int32_t* __restrict__ position) {
  FG_GRID_STRIDE(q, NS) {
    const int32_t c = order[q];
    mass[q] = column_mass[c];
    position[c] = static_cast<int32_t>(q);
  }
}

__global__ void __launch_bounds__(kThreads)
    EntryPositionsKernel(const int32_t* __restrict__ idx, const int64_t* __restrict__ seg, int64_t E,
                         const int32_t* __restrict__ position, int32_t* __restrict__ entry_pos) {
  FG_GRID_STRIDE(j, E) { entry_pos[idx[j]] = position[seg[j] - 1]; }
}

// Sums within each block of positions [begin[b], end[b]), in order.
__global__ void __launch_bounds__(kThreads)
    BlockSumsKernel(const double* __restrict__ mass, const int64_t* __restrict__ begin,
                    const int64_t* __restrict__ end, int64_t blocks, double* __restrict__ cumulative,
                    double* __restrict__ block_total) {
  FG_GRID_STRIDE(b, blocks) {
    double within = 0.0;
    for (int64_t q = begin[b]; q < end[b]; ++q) cumulative[q] = within = AddRounded(within, mass[q]);
    block_total[b] = within;
  }
}

// Per batch, over its blocks [first[k], first[k + 1]) in order: each block's offset; the total.
__global__ void __launch_bounds__(kThreads)
    BatchOffsetsKernel(const int64_t* __restrict__ first, int64_t K, const double* __restrict__ block_total,
                       double* __restrict__ block_offset, double* __restrict__ total) {
  FG_GRID_STRIDE(k, K) {
    double offset = 0.0;
    for (int64_t b = first[k]; b < first[k + 1]; ++b) {
      block_offset[b] = offset;
      offset = AddRounded(offset, block_total[b]);
    }
    total[k] = offset;
  }
}

__global__ void __launch_bounds__(kThreads)
    AddOffsetsKernel(const int64_t* __restrict__ begin, const int64_t* __restrict__ end, int64_t blocks,
                     const double* __restrict__ block_offset, double* __restrict__ cumulative) {
  FG_GRID_STRIDE(b, blocks) {
    for (int64_t q = begin[b]; q < end[b]; ++q) cumulative[q] = AddRounded(block_offset[b], cumulative[q]);
  }
}

__global__ void __launch_bounds__(kThreads)
    DrawsKernel(uint64_t seed, const uint64_t* __restrict__ streams, int64_t K, int64_t S,
                const int64_t* __restrict__ column_base, const double* __restrict__ cumulative,
                const double* __restrict__ total, int32_t* __restrict__ draws) {
  FG_GRID_STRIDE(t, K * S) {
    const int64_t k = t / S, s = t % S;
    if (!(total[k] > 0)) continue;
    const int64_t base = column_base[k], n = column_base[k + 1] - base;
    const int64_t c = DrawnColumn(cumulative + base, n, DrawPoint(seed, streams[k], s, total[k]));
    atomicAdd(draws + base + c, 1);
  }
}

// Whether entry i is kept (its column drawn), as 0 or 1 for the scan of output positions.
__global__ void __launch_bounds__(kThreads)
    KeepFlagsKernel(const int32_t* __restrict__ entry_pos, int64_t E, const int32_t* __restrict__ draws,
                    int64_t* __restrict__ keep) {
  FG_GRID_STRIDE(i, E) { keep[i] = draws[entry_pos[i]] > 0 ? 1 : 0; }
}

// Row r's kept entries begin at the kept position of its first entry.
__global__ void __launch_bounds__(kThreads)
    KeptOffsetsKernel(const int64_t* __restrict__ eoff, int64_t R, const int64_t* __restrict__ at,
                      int64_t* __restrict__ koff) {
  FG_GRID_STRIDE(r, R + 1) { koff[r] = at[eoff[r]]; }
}

__global__ void __launch_bounds__(kThreads)
    WriteEntriesKernel(MatrixView a, const int64_t* __restrict__ entry, int64_t E, const int64_t* __restrict__ keep,
                       const int64_t* __restrict__ at, int32_t* __restrict__ cols, int32_t* __restrict__ kept_entry) {
  FG_GRID_STRIDE(i, E) {
    if (keep[i] == 0) continue;
    cols[at[i]] = a.col[entry[i]];
    kept_entry[at[i]] = static_cast<int32_t>(i);
  }
}

// Row r's kept weights (importance-weighted), rescaled to its full sum: the host's arithmetic, in
// its order, over the row's kept entries only.
__global__ void __launch_bounds__(kThreads)
    RowWeightsKernel(MatrixView a, const int64_t* __restrict__ row, int64_t R, const int32_t* __restrict__ group,
                     const int64_t* __restrict__ entry, const int32_t* __restrict__ entry_pos,
                     const int32_t* __restrict__ draws, const double* __restrict__ mass,
                     const double* __restrict__ total, int64_t S, const int64_t* __restrict__ koff,
                     const int32_t* __restrict__ kept_entry, float* __restrict__ weights) {
  FG_GRID_STRIDE(r, R) {
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
      for (int64_t t = koff[r]; t < koff[r + 1]; ++t) weights[t] = __fmul_rn(weights[t], scale);
    }
  }
}

}  // namespace

void SampleLayerWise(const MatrixView& a, uint64_t seed, int64_t layer_size, const int64_t* row,
                     const int32_t* group, const std::vector<int64_t>& entry_offsets,
                     const std::vector<uint64_t>& streams, std::vector<int64_t>* kept_offsets,
                     std::vector<int32_t>* cols, std::vector<float>* weights) {
  const cudaStream_t stream = CurrentStream();
  const int64_t R = static_cast<int64_t>(entry_offsets.size()) - 1, K = static_cast<int64_t>(streams.size());
  const int64_t E = entry_offsets[R];  // below 2^31 (the caller's check)
  const int64_t S = layer_size;
  // Every entry's key, sorted stably: each batch's columns, entries in order within each.
  Scratch<int64_t> eoff(R + 1), entry(E);
  ToDevice(eoff.get(), entry_offsets);
  Scratch<uint64_t> keys(2 * E);
  Scratch<int32_t> idx(2 * E);
  Scratch<int64_t> head(E), seg(E);  // (64-bit: CUB's 32-bit scan spills registers)
  if (E > 0) {
    EntryKeysKernel<<<BlocksFor(E), kThreads, 0, stream>>>(a, row, group, eoff.get(), R, E, keys.get(), idx.get(),
                                                           entry.get());
    FG_CUDA_CHECK_LAUNCH();
  }
  uint64_t* keys_sorted = keys.get() + E;
  int32_t* idx_sorted = idx.get() + E;
  const int key_bits = 32 + BitsFor(static_cast<uint64_t>(K));
  size_t temp_bytes = 0;
  FG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys.get(), keys_sorted, idx.get(), idx_sorted,
                                                static_cast<int>(E), 0, key_bits, stream));
  {
    Scratch<char> temp(static_cast<int64_t>(temp_bytes));
    FG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, keys.get(), keys_sorted, idx.get(),
                                                  idx_sorted, static_cast<int>(E), 0, key_bits, stream));
  }
  // Columns: runs of equal keys.
  int64_t NS = 0;
  if (E > 0) {
    HeadsKernel<<<BlocksFor(E), kThreads, 0, stream>>>(keys_sorted, E, head.get());
    FG_CUDA_CHECK_LAUNCH();
    temp_bytes = 0;
    FG_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, head.get(), seg.get(), static_cast<int>(E),
                                                stream));
    Scratch<char> temp(static_cast<int64_t>(temp_bytes));
    FG_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.get(), temp_bytes, head.get(), seg.get(), static_cast<int>(E),
                                                stream));
    NS = ToHost(seg.get() + E - 1, 1)[0];
  }
  Scratch<int32_t> start(NS + 1), first(2 * NS), order(2 * NS), position(NS), entry_pos(E);
  Scratch<double> column_mass(NS), mass(NS), cumulative(NS);
  Scratch<int64_t> columns(K);
  DeviceMemset(columns.get(), 0, sizeof(int64_t) * K);
  if (NS > 0) {
    ColumnStartsKernel<<<BlocksFor(E), kThreads, 0, stream>>>(head.get(), seg.get(), E, start.get());
    FG_CUDA_CHECK_LAUNCH();
    ColumnMassKernel<<<BlocksFor(NS), kThreads, 0, stream>>>(a.weights, keys_sorted, idx_sorted, entry.get(),
                                                             start.get(), NS, first.get(), column_mass.get(),
                                                             order.get(), columns.get());
    FG_CUDA_CHECK_LAUNCH();
    // First-appearance order: the columns sorted by their first entries (batch-major, as entries are).
    const int first_bits = BitsFor(static_cast<uint64_t>(E));
    temp_bytes = 0;
    FG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, first.get(), first.get() + NS, order.get(),
                                                  order.get() + NS, static_cast<int>(NS), 0, first_bits, stream));
    Scratch<char> temp(static_cast<int64_t>(temp_bytes));
    FG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, first.get(), first.get() + NS,
                                                  order.get(), order.get() + NS, static_cast<int>(NS), 0, first_bits,
                                                  stream));
    PlaceColumnsKernel<<<BlocksFor(NS), kThreads, 0, stream>>>(order.get() + NS, NS, column_mass.get(), mass.get(),
                                                               position.get());
    FG_CUDA_CHECK_LAUNCH();
    EntryPositionsKernel<<<BlocksFor(E), kThreads, 0, stream>>>(idx_sorted, seg.get(), E, position.get(),
                                                                entry_pos.get());
    FG_CUDA_CHECK_LAUNCH();
  }
  // Each batch's columns, and their blocks of kMassBlock.
  const std::vector<int64_t> per_batch = ToHost(columns.get(), K);
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
  Scratch<int64_t> d_column_base(K + 1), d_block_first(K + 1), d_block_begin(blocks), d_block_end(blocks);
  Scratch<uint64_t> d_streams(K);
  ToDevice(d_column_base.get(), column_base);
  ToDevice(d_block_first.get(), block_first);
  ToDevice(d_block_begin.get(), block_begin);
  ToDevice(d_block_end.get(), block_end);
  ToDevice(d_streams.get(), streams);
  Scratch<double> block_total(blocks), block_offset(blocks), total(K);
  Scratch<int32_t> draws(NS);
  DeviceMemset(draws.get(), 0, sizeof(int32_t) * NS);
  if (blocks > 0) {
    BlockSumsKernel<<<BlocksFor(blocks), kThreads, 0, stream>>>(mass.get(), d_block_begin.get(), d_block_end.get(),
                                                                blocks, cumulative.get(), block_total.get());
    FG_CUDA_CHECK_LAUNCH();
  }
  if (K > 0) {
    BatchOffsetsKernel<<<BlocksFor(K), kThreads, 0, stream>>>(d_block_first.get(), K, block_total.get(),
                                                              block_offset.get(), total.get());
    FG_CUDA_CHECK_LAUNCH();
  }
  if (blocks > 0) {
    AddOffsetsKernel<<<BlocksFor(blocks), kThreads, 0, stream>>>(d_block_begin.get(), d_block_end.get(), blocks,
                                                                 block_offset.get(), cumulative.get());
    FG_CUDA_CHECK_LAUNCH();
  }
  if (K * S > 0) {
    DrawsKernel<<<BlocksFor(K * S), kThreads, 0, stream>>>(seed, d_streams.get(), K, S, d_column_base.get(),
                                                           cumulative.get(), total.get(), draws.get());
    FG_CUDA_CHECK_LAUNCH();
  }
  // The kept entries: their positions (a scan over the entries' flags), each row's first, the
  // entries, then each row's weights.
  Scratch<int64_t> keep(E + 1), at(E + 1), koff(R + 1);
  DeviceMemset(keep.get() + E, 0, sizeof(int64_t));
  if (E > 0) {
    KeepFlagsKernel<<<BlocksFor(E), kThreads, 0, stream>>>(entry_pos.get(), E, draws.get(), keep.get());
    FG_CUDA_CHECK_LAUNCH();
  }
  temp_bytes = 0;
  FG_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, keep.get(), at.get(), static_cast<int>(E + 1),
                                              stream));
  {
    Scratch<char> temp(static_cast<int64_t>(temp_bytes));
    FG_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.get(), temp_bytes, keep.get(), at.get(),
                                                static_cast<int>(E + 1), stream));
  }
  KeptOffsetsKernel<<<BlocksFor(R + 1), kThreads, 0, stream>>>(eoff.get(), R, at.get(), koff.get());
  FG_CUDA_CHECK_LAUNCH();
  *kept_offsets = ToHost(koff.get(), R + 1);
  const int64_t N = (*kept_offsets)[R];
  const bool weighted = a.weights != nullptr;
  Scratch<int32_t> d_cols(N), kept_entry(N);
  Scratch<float> d_weights(weighted ? N : 0);
  if (N > 0) {
    WriteEntriesKernel<<<BlocksFor(E), kThreads, 0, stream>>>(a, entry.get(), E, keep.get(), at.get(), d_cols.get(),
                                                              kept_entry.get());
    FG_CUDA_CHECK_LAUNCH();
    if (weighted) {
      RowWeightsKernel<<<BlocksFor(R), kThreads, 0, stream>>>(a, row, R, group, entry.get(), entry_pos.get(),
                                                              draws.get(), mass.get(), total.get(), S, koff.get(),
                                                              kept_entry.get(), d_weights.get());
      FG_CUDA_CHECK_LAUNCH();
    }
  }
  *cols = ToHost(d_cols.get(), N);
  *weights = weighted ? ToHost(d_weights.get(), N) : std::vector<float>();
}

}  // namespace fg::sampling::cuda
