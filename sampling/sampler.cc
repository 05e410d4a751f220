#include "sampling/sampler.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/status.h"
#include "hdg/builder.h"
#include "sampling/blocks.h"
#include "sampling/device_sampler.h"
#include "sampling/layer_pick.h"
#include "sampling/pick.h"

namespace fg::sampling {
namespace {

constexpr uint64_t kBatchOrderTag = 0xBA7C4;

// Draws read from words drawn beforehand (PhiloxBlocks): a RandomStream's, in its order.
struct DrawnWords {
  const uint32_t* next;
  uint32_t NextU32() { return *next++; }
};

// `k` <= d < 2^31 distinct indices of [0, d), uniformly, ascending, by Floyd's algorithm
// (pick.h; k draws). Where d is at most kMaskBits the picks so far are kept as bits of a mask
// (read back in order), else in a list scanned for each draw, then sorted: the same picks.
constexpr int64_t kMaskBits = 4096;
// Layer-wise sampling looks up the slot of the column this many entries ahead early (a prefetch).
constexpr int64_t kSlotsAhead = 16;
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

// Calls f(e) for row `row`'s CSR entries in sampling's order: its root's own entry first (where it
// has one), then the others in stored order (NeighbourhoodMatrix::own_entries).
template <typename F>
void ForEachEntry(const MatrixView& a, int64_t row, F&& f) {
  const int64_t begin = a.row_ptr[row], end = a.row_ptr[row + 1];
  const int64_t own = a.own_entry != nullptr && a.own_entry[row] >= 0 ? begin + a.own_entry[row] : -1;
  if (own >= 0) f(own);
  for (int64_t e = begin; e < end; ++e) {
    if (e != own) f(e);
  }
}

// Layer-wise sampling of one batch: `layer_size` draws over the columns of its rows (of `a`), with
// probability proportional to the column's squared weights (1 each when unweighted). `slots` holds
// the columns' slots.
void SampleLayerWise(const MatrixView& a, const SamplerOptions& o, int epoch, int layer, int64_t batch,
                     const std::vector<int64_t>& rows, VertexSlots* slots, SampledRows* out) {
  const int64_t* row_ptr = a.row_ptr;
  const int32_t* col = a.col;
  const float* w = a.weights;
  std::vector<double> mass;
  int64_t entries = 0;
  for (int64_t row : rows) entries += row_ptr[row + 1] - row_ptr[row];
  // The batch's columns in order of first appearance, each with its squared-weight mass, and every
  // entry's column there (so that the second pass reads no slot).
  std::vector<int32_t> cols;
  thread_local std::vector<int32_t> entry_col;
  entry_col.resize(entries);
  slots->ForBatch(
      entries,
      [&](auto slot) {
        int64_t at = 0;
        for (int64_t row : rows) {
          const int64_t end = row_ptr[row + 1];
          ForEachEntry(a, row, [&](int64_t e) {
            if (e + kSlotsAhead < end) slot.Prefetch(col[e + kSlotsAhead]);
            const int32_t u = col[e];
            int32_t& c = slot[u];
            if (c < 0) {
              c = static_cast<int32_t>(cols.size());
              cols.push_back(u);
            }
            entry_col[at++] = c;
          });
        }
        // The masses in a second pass, whose random reads are known ahead (prefetched); each
        // column's sum still adds its entries in order.
        mass.assign(cols.size(), 0.0);
        at = 0;
        for (int64_t row : rows) {
          ForEachEntry(a, row, [&](int64_t e) {
            if (at + kSlotsAhead < entries) __builtin_prefetch(&mass[entry_col[at + kSlotsAhead]]);
            mass[entry_col[at]] = AddMass(mass[entry_col[at]], w, e);
            ++at;
          });
        }
        const int64_t n = static_cast<int64_t>(cols.size());
        std::vector<double> cumulative(n);
        double offset = 0.0;
        for (int64_t b0 = 0; b0 < n; b0 += kMassBlock) {  // layer_pick.h's blocked sums
          const int64_t b1 = std::min(n, b0 + kMassBlock);
          double within = 0.0;
          for (int64_t c = b0; c < b1; ++c) cumulative[c] = within = AddRounded(within, mass[c]);
          for (int64_t c = b0; c < b1; ++c) cumulative[c] = AddRounded(offset, cumulative[c]);
          offset = AddRounded(offset, within);
        }
        const double total = n > 0 ? cumulative.back() : 0.0;
        std::vector<int32_t> draws(n, 0);
        const uint64_t stream = LayerWiseStream(epoch, batch, layer);
        // Which columns were drawn, as bits: the pass over every entry below reads them from
        // cache, where the counts (4 B a column) would miss.
        std::vector<uint64_t> drawn((n + 63) / 64, 0);
        for (int64_t s = 0; total > 0 && s < o.layer_size; ++s) {
          const int64_t c = DrawnColumn(cumulative.data(), n, DrawPoint(o.seed, stream, s, total));
          ++draws[c];
          drawn[c >> 6] |= uint64_t{1} << (c & 63);
        }
        // Every row keeps its entries into the drawn columns, weighted by w * draws / (S p_u) and
        // rescaled to the row's full sum.
        out->offsets.assign(rows.size() + 1, 0);
        out->cols.clear();
        out->weights.clear();
        at = 0;
        for (size_t j = 0; j < rows.size(); ++j) {
          double full = 0.0, kept = 0.0;  // full: as RowWeightSums sums it
          const size_t first = out->cols.size();
          ForEachEntry(a, rows[j], [&](int64_t e) {
            const int32_t c = entry_col[at++];
            if (w != nullptr) full = AddRounded(full, w[e]);
            if (((drawn[c >> 6] >> (c & 63)) & 1) == 0) return;
            out->cols.push_back(cols[c]);
            if (w != nullptr) {
              const double x = KeptEntryWeight(w[e], draws[c], o.layer_size, mass[c], total);
              out->weights.push_back(static_cast<float>(x));
              kept = AddRounded(kept, x);
            }
          });
          if (w != nullptr && kept > 0) {
            const double scale = full / kept;
            for (size_t t = first; t < out->weights.size(); ++t)
              out->weights[t] *= static_cast<float>(scale);
          }
          out->offsets[j + 1] = static_cast<int64_t>(out->cols.size());
        }
      },
      cols);
}

// SampleLayerWise for every batch k (number batch[k]) over its rows rows[k] of `a`: one batch per
// task, taken as threads free up (batches' rows differ widely in length), each with a slot set no
// other running task holds.
void SampleLayerWiseBatches(const MatrixView& a, const SamplerOptions& o, int epoch, int layer,
                            const std::vector<int64_t>& batch, const std::vector<std::vector<int64_t>>& rows,
                            std::vector<SampledRows>* out) {
  const int64_t K = static_cast<int64_t>(rows.size());
  const int num_slot_sets = static_cast<int>(std::min<int64_t>(std::max<int64_t>(K, 1), NumThreads()));
  PooledSlots slots(num_slot_sets);
  std::mutex free_mu;
  std::vector<int> free_slots(num_slot_sets);
  std::iota(free_slots.begin(), free_slots.end(), 0);
  ParallelForDynamic(0, K, 1, [&](int64_t k) {
    int i;
    {
      std::lock_guard<std::mutex> lock(free_mu);
      i = free_slots.back();
      free_slots.pop_back();
    }
    slots[i].Prepare(a.num_vertices);
    SampleLayerWise(a, o, epoch, layer, batch[k], rows[k], &slots[i], &(*out)[k]);
    std::lock_guard<std::mutex> lock(free_mu);
    free_slots.push_back(i);
  });
}

}  // namespace

bool ParseSamplerKind(const std::string& name, SamplerKind* out) {
  if (name == "neighbor") {
    *out = SamplerKind::kNodeWise;
  } else if (name == "ladies") {
    *out = SamplerKind::kLayerWise;
  } else {
    return false;
  }
  return true;
}

const char* SamplerKindName(SamplerKind kind) {
  return kind == SamplerKind::kNodeWise ? "neighbor" : "ladies";
}

absl::StatusOr<NeighbourhoodMatrix> NeighbourhoodMatrix::Create(hdg::HdgPtr hdg,
                                                                int64_t num_vertices,
                                                                Tensor root_keys) {
  if (hdg->schema().kind() != hdg::SchemaKind::kFlat || hdg->num_levels() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mini-batch sampling needs a flat neighbourhood (one HDG level), got ",
        hdg->schema().ToString()));
  }
  NeighbourhoodMatrix m;
  m.num_vertices_ = num_vertices;
  const Tensor& roots = hdg->roots();
  const int32_t* root = roots.i32();
  m.num_roots_ = roots.numel();
  m.first_root_ = m.num_roots_ > 0 ? root[0] : 0;
  bool consecutive = true;
  for (int64_t r = 0; r < m.num_roots_ && consecutive; ++r) consecutive = root[r] == m.first_root_ + r;
  if (!consecutive) {
    m.row_of_.assign(num_vertices, -1);
    for (int64_t r = 0; r < m.num_roots_; ++r) m.row_of_[root[r]] = static_cast<int32_t>(r);
  }
  if (root_keys.defined() && root_keys.numel() != roots.numel()) {
    return absl::InvalidArgumentError(absl::StrCat("root_keys: ", root_keys.numel(), " keys for ",
                                                   roots.numel(), " roots"));
  }
  const int64_t* row_ptr = hdg->level(1).csr().row_ptr();
  const int32_t* col = hdg->level(1).csr().col();
  std::vector<int32_t> own(roots.numel(), -1);
  std::atomic<bool> any{false};
  ParallelFor(0, roots.numel(), [&](int64_t r) {
    const int32_t v = root[r];
    for (int64_t e = row_ptr[r]; e < row_ptr[r + 1]; ++e) {
      if (col[e] == v) {
        own[r] = static_cast<int32_t>(e - row_ptr[r]);
        any.store(true, std::memory_order_relaxed);
        break;
      }
    }
  });
  if (any.load()) m.own_entry_ = std::move(own);
  m.keys_ = std::move(root_keys);
  m.hdg_ = std::move(hdg);
  return m;
}

std::vector<Tensor> EpochBatches(const Tensor& ids, int64_t batch_size, uint64_t seed, int epoch) {
  std::vector<int64_t> order(ids.i64(), ids.i64() + ids.numel());
  RandomStream rng(seed, MixKey(kBatchOrderTag, static_cast<uint64_t>(epoch)));
  for (int64_t i = static_cast<int64_t>(order.size()) - 1; i > 0; --i) {
    std::swap(order[i], order[rng.Below(static_cast<uint64_t>(i + 1))]);
  }
  std::vector<Tensor> batches;
  for (int64_t at = 0; at < static_cast<int64_t>(order.size()); at += batch_size) {
    const int64_t end = std::min<int64_t>(order.size(), at + batch_size);
    batches.push_back(Tensor::FromVector(std::vector<int64_t>(order.begin() + at, order.begin() + end)));
  }
  return batches;
}

absl::StatusOr<std::vector<MiniBatch>> SampleBulk(
    const std::vector<const NeighbourhoodMatrix*>& layers, const SamplerOptions& options,
    int epoch, int64_t first_index, const std::vector<Tensor>& seeds) {
  const int num_layers = static_cast<int>(layers.size());
  const int64_t K = static_cast<int64_t>(seeds.size());
  if (options.kind == SamplerKind::kNodeWise &&
      static_cast<int>(options.fanouts.size()) != num_layers) {
    return absl::InvalidArgumentError(absl::StrCat("fanouts: ", options.fanouts.size(),
                                                   " given for a model of ", num_layers, " layers"));
  }
  if (options.kind == SamplerKind::kLayerWise && options.layer_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer_size: must be positive for the ladies sampler, got ", options.layer_size));
  }
  std::vector<int64_t> batch(K);
  std::iota(batch.begin(), batch.end(), first_index);
  auto local = [&](int l, const std::vector<std::vector<int64_t>>& frontier,
                   std::vector<SampledRows>* out, const RowsReady& ready) -> absl::Status {
    const NeighbourhoodMatrix& a = *layers[l];
    // Q·A: the rows of A that every batch's frontier selects.
    std::vector<std::vector<int64_t>> rows(K);
    for (int64_t k = 0; k < K; ++k) rows[k].resize(frontier[k].size());
    std::vector<int64_t> base(K + 1, 0);
    for (int64_t k = 0; k < K; ++k) base[k + 1] = base[k] + static_cast<int64_t>(frontier[k].size());
    // The first stacked position whose vertex has no row (R: none), named whatever the threads.
    const int64_t R = base[K];
    std::atomic<int64_t> missing{R};
    ParallelFor(0, R, [&](int64_t r) {
      const int64_t k = std::upper_bound(base.begin(), base.end(), r) - base.begin() - 1;
      const int64_t v = frontier[k][r - base[k]];
      const int64_t row = v >= 0 && v < a.num_vertices() ? a.RowOf(v) : -1;
      rows[k][r - base[k]] = row;
      if (row < 0) {  // keep the smallest position
        int64_t m = missing.load();
        while (r < m && !missing.compare_exchange_weak(m, r)) {
        }
      }
    });
    if (const int64_t r = missing.load(); r < R) {
      const int64_t k = std::upper_bound(base.begin(), base.end(), r) - base.begin() - 1;
      return absl::InvalidArgumentError(absl::StrCat("vertex ", frontier[k][r - base[k]],
                                                     " has no neighbourhood in layer ", l, " (not one of its roots)"));
    }
    if (options.kind == SamplerKind::kNodeWise) {
      SampleRows(a, options, options.fanouts[num_layers - 1 - l], epoch, l, batch, frontier, rows, out,
                 ready);
      return absl::OkStatus();
    }
    SampleLayerWiseRows(a, options, epoch, l, batch, rows, out);
    return absl::OkStatus();
  };
  return SampleBlocks(layers, first_index, seeds, local);
}

void SampleLayerWiseRows(const NeighbourhoodMatrix& a, const SamplerOptions& options, int epoch, int layer,
                         const std::vector<int64_t>& batch, const std::vector<std::vector<int64_t>>& rows,
                         std::vector<SampledRows>* out) {
  SampleLayerWiseBatches(ViewOf(a), options, epoch, layer, batch, rows, out);
}

void SampleLayerWiseRows(const GatheredRows& gathered, int64_t num_vertices, const SamplerOptions& options,
                         int epoch, int layer, const std::vector<int64_t>& batch,
                         const std::vector<std::vector<int64_t>>& rows, std::vector<SampledRows>* out) {
  MatrixView view;
  view.row_ptr = gathered.offsets.data();
  view.col = gathered.cols.data();
  view.weights = gathered.weights.empty() ? nullptr : gathered.weights.data();
  view.own_entry = gathered.own.data();
  view.num_vertices = num_vertices;
  SampleLayerWiseBatches(view, options, epoch, layer, batch, rows, out);
}

absl::StatusOr<std::vector<MiniBatch>> SampleBlocks(const std::vector<const NeighbourhoodMatrix*>& layers,
                                                    int64_t first_index, const std::vector<Tensor>& seeds,
                                                    const FrontierSampler& sample) {
  const int num_layers = static_cast<int>(layers.size());
  const int64_t K = static_cast<int64_t>(seeds.size());
  std::vector<MiniBatch> out(K);
  std::vector<std::vector<int64_t>> frontier(K);
  for (int64_t k = 0; k < K; ++k) {
    out[k].index = first_index + k;
    out[k].seeds = seeds[k];
    out[k].blocks.resize(num_layers);
    frontier[k].assign(seeds[k].i64(), seeds[k].i64() + seeds[k].numel());
  }
  for (int l = num_layers - 1; l >= 0; --l) {
    std::vector<SampledRows> sampled(K);
    LayerBlocks blocks(*layers[l], l, frontier, sampled, &out);
    FG_RETURN_IF_ERROR(sample(l, frontier, &sampled,
                              [&](int64_t begin, int64_t end) { blocks.Ready(begin, end); }));
    blocks.Finish(&frontier);
  }
  return out;
}

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
  ParallelForDynamic(0, (R + chunk - 1) / chunk, 1, [&](int64_t c) {
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
  ParallelForDynamic(0, (R + chunk - 1) / chunk, 1, [&](int64_t c) {
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
