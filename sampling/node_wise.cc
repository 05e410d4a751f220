// Node-wise sampling on the host: `fanout` entries of every frontier row, all groups at once
// (sampler.h: SampleRows).
#include "sampling/sampler.h"

#include <algorithm>
#include <memory>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "sampling/pick.h"

namespace fg::sampling {
namespace {

// Draws read from words drawn beforehand (PhiloxBlocks): a RandomStream's, in its order.
struct DrawnWords {
  const uint32_t* next;
  uint32_t NextU32() { return *next++; }
};

// Rows below this many are drawn on the calling thread.
constexpr int64_t kSerialRows = 1024;

// `k` <= d < 2^31 distinct indices of [0, d), uniformly, ascending, by Floyd's algorithm
// (pick.h; k draws). Where d is at most kMaskBits the picks so far are kept as bits of a mask
// (read back in order), else in a list scanned for each draw, then sorted: the same picks.
constexpr int64_t kMaskBits = 4096;
template <typename Words>
void ChooseDistinct(Words& words, int64_t d, int64_t k, std::vector<int64_t>* out) {
  out->resize(k);
  int64_t* picks = out->data();
  if (d > kMaskBits) {
    FloydPicks(words, d, k, picks);
    std::sort(picks, picks + k);
    return;
  }
  uint64_t mask[kMaskBits / 64];
  const int64_t mask_words = (d + 63) / 64;
  std::fill(mask, mask + mask_words, uint64_t{0});
  for (int64_t j = d - k; j < d; ++j) {
    const int64_t t = Below(words, j + 1);
    // t taken already: j is new (every earlier pick is below j).
    const int64_t pick = (mask[t >> 6] >> (t & 63)) & 1 ? j : t;
    mask[pick >> 6] |= uint64_t{1} << (pick & 63);
  }
  for (int64_t w = 0, n = 0; w < mask_words; ++w) {
    for (uint64_t m = mask[w]; m != 0; m &= m - 1) picks[n++] = w * 64 + __builtin_ctzll(m);
  }
}

}  // namespace

// Node-wise sampling of every group's rows at once: the rows of A for all frontiers (Q·A), then
// `fanout` of each row's entries. Rows are visited in chunks whose loads are issued before they
// are used (prefetches), so that the random reads of offsets and column ids overlap.
void SampleRows(const NeighbourhoodMatrix& a, const SamplerOptions& o, int fanout, int epoch,
                int layer, const std::vector<int64_t>& batch,
                const std::vector<std::vector<int64_t>>& vertices,
                const std::vector<std::vector<int64_t>>& rows, std::vector<SampledRows>* out,
                const RowsReady& ready) {
  const int64_t K = static_cast<int64_t>(rows.size());
  const Csr& csr = a.csr();
  const int64_t* row_ptr = csr.row_ptr();
  const int32_t* col = csr.col();
  const float* w = a.weights();
  // Stacked rows: batch k's row j is stacked row base[k] + j.
  std::vector<int64_t> base(K + 1, 0);
  for (int64_t k = 0; k < K; ++k) base[k + 1] = base[k] + static_cast<int64_t>(rows[k].size());
  const int64_t R = base[K];
  // Rows per task: at least 8 tasks a thread where rows are few, so that blocks are built from the
  // first tasks' rows while the others are drawn; rows prefetched ahead.
  const int64_t chunk = std::clamp<int64_t>(R / (8 * NumThreads()), 64, 512);
  constexpr int64_t kAhead = 48;
  // A few rows are drawn on the calling thread: joining a parallel region costs more, and on a
  // loaded machine a whole scheduler slice.
  const int64_t tasks = (R + chunk - 1) / chunk;
  const int64_t grain = R < kSerialRows ? std::max<int64_t>(tasks, 1) : 1;
  auto locate = [&](int64_t r) {  // (batch, row within it)
    const int64_t k = std::upper_bound(base.begin(), base.end(), r) - base.begin() - 1;
    return std::pair<int64_t, int64_t>(k, r - base[k]);
  };
  std::vector<int64_t> flat(R);
  for (int64_t k = 0; k < K; ++k) std::copy(rows[k].begin(), rows[k].end(), flat.begin() + base[k]);
  // Each stacked row's first entry, degree, key and own entry (per-row reads issued together).
  // (Left uninitialised: every element is written below.)
  std::unique_ptr<int64_t[]> begin(new int64_t[R]), degree(new int64_t[R]), own(new int64_t[R]);
  std::unique_ptr<uint64_t[]> key(new uint64_t[R]);
  // Row r of batch k draws from RandomStream(seed, MixKey(tag ^ epoch, batch[k], layer, key[r])):
  // the first three steps are the batch's.
  std::vector<uint64_t> stream_prefix(K);
  for (int64_t k = 0; k < K; ++k) stream_prefix[k] = NodeWiseStreamPrefix(epoch, batch[k], layer);
  const int32_t* own_entry = a.own_entries();
  const int64_t* keys = a.keys();
  ParallelForDynamic(0, tasks, grain, [&](int64_t c) {
    const int64_t lo = c * chunk, hi = std::min(R, lo + chunk);
    auto prefetch = [&](int64_t r) {
      __builtin_prefetch(row_ptr + flat[r]);
      if (own_entry != nullptr) __builtin_prefetch(own_entry + flat[r]);
      if (keys != nullptr) __builtin_prefetch(keys + flat[r]);
    };
    for (int64_t r = lo; r < std::min(hi, lo + kAhead); ++r) prefetch(r);
    const auto [k0, j0] = locate(lo);
    int64_t k = k0, j = j0;
    for (int64_t r = lo; r < hi; ++r, ++j) {
      if (r + kAhead < hi) prefetch(r + kAhead);
      while (j == static_cast<int64_t>(rows[k].size())) ++k, j = 0;
      begin[r] = row_ptr[flat[r]];
      degree[r] = row_ptr[flat[r] + 1] - begin[r];
      own[r] = own_entry != nullptr ? own_entry[flat[r]] : -1;
      key[r] = static_cast<uint64_t>(keys != nullptr ? keys[flat[r]] : vertices[k][j]);
    }
  });
  for (int64_t k = 0; k < K; ++k) {
    SampledRows& s = (*out)[k];
    s.offsets.assign(rows[k].size() + 1, 0);
    for (size_t j = 0; j < rows[k].size(); ++j) {
      const int64_t d = degree[base[k] + j];
      s.offsets[j + 1] = s.offsets[j] + (fanout > 0 ? std::min<int64_t>(fanout, d) : d);
    }
    s.cols.resize(s.offsets.back());
    s.weights.resize(w != nullptr ? s.offsets.back() : 0);
  }
  ParallelForDynamic(0, tasks, grain, [&](int64_t c) {
    const int64_t lo = c * chunk, hi = std::min(R, lo + chunk);
    for (int64_t r = lo; r < std::min(hi, lo + kAhead); ++r) __builtin_prefetch(col + begin[r]);
    // First the random words of every row that keeps part of its entries, all at once (one block
    // of four words per four draws, counters (0, 1, ..., the row's stream)); then every row's
    // chosen entries (CSR entry ids), their column ids prefetched; then the copy.
    thread_local std::vector<int64_t> picked, entries;
    thread_local std::vector<uint64_t> counters, streams;
    thread_local std::vector<uint32_t> words;
    counters.clear();
    streams.clear();
    const auto [k0, j0] = locate(lo);
    int64_t k = k0, j = j0;
    for (int64_t r = lo; r < hi; ++r, ++j) {
      while (j == static_cast<int64_t>(rows[k].size())) ++k, j = 0;  // past empty batches too
      const int64_t keep = (*out)[k].offsets[j + 1] - (*out)[k].offsets[j];
      if (keep == degree[r]) continue;
      const uint64_t stream = MixStep(stream_prefix[k], key[r]);
      for (int64_t b = 0; b < (keep + 3) / 4; ++b) {
        counters.push_back(static_cast<uint64_t>(b));
        streams.push_back(stream);
      }
    }
    words.resize(4 * counters.size());
    PhiloxBlocks(o.seed, counters.data(), streams.data(), static_cast<int64_t>(counters.size()),
                 words.data());
    DrawnWords drawn{words.data()};
    entries.clear();
    k = k0, j = j0;
    for (int64_t r = lo; r < hi; ++r, ++j) {
      if (r + kAhead < hi) __builtin_prefetch(col + begin[r + kAhead]);
      while (j == static_cast<int64_t>(rows[k].size())) ++k, j = 0;  // past empty batches too
      const SampledRows& s = (*out)[k];
      const int64_t b = begin[r], d = degree[r];
      const int64_t keep = s.offsets[j + 1] - s.offsets[j];
      if (keep == d) {
        for (int64_t t = 0; t < d; ++t) entries.push_back(b + t);
        continue;
      }
      ChooseDistinct(drawn, d, keep, &picked);
      drawn.next += (4 - keep % 4) % 4;  // the rest of the row's last block
      if (own[r] >= 0) {  // index 0: the root's own entry
        for (int64_t& t : picked) t = StoredEntry(t, own[r]);
      }
      for (int64_t t : picked) {
        __builtin_prefetch(col + b + t);
        entries.push_back(b + t);
      }
    }
    const int64_t* e = entries.data();
    k = k0, j = j0;
    for (int64_t r = lo; r < hi; ++r, ++j) {
      while (j == static_cast<int64_t>(rows[k].size())) ++k, j = 0;  // past empty batches too
      SampledRows& s = (*out)[k];
      const int64_t keep = s.offsets[j + 1] - s.offsets[j];
      int32_t* cols = s.cols.data() + s.offsets[j];
      for (int64_t t = 0; t < keep; ++t) cols[t] = col[e[t]];
      if (w != nullptr) {
        const float scale = KeptWeightScale(degree[r], keep);
        float* weights = s.weights.data() + s.offsets[j];
        for (int64_t t = 0; t < keep; ++t) weights[t] = keep == degree[r] ? w[e[t]] : w[e[t]] * scale;
      }
      e += keep;
    }
    if (ready) ready(lo, hi);
  });
}

}  // namespace fg::sampling
