// Layer-wise (LADIES) sampling on the host: per batch, `layer_size` draws over the columns of its
// rows with probability proportional to their squared weights (sampler.h: SampleLayerWiseRows).
#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "sampling/blocks.h"
#include "sampling/device_sampler.h"
#include "sampling/layer_pick.h"
#include "sampling/pick.h"

namespace fg::sampling {
namespace {

// Layer-wise sampling looks up the slot of the column this many entries ahead early (a prefetch).
constexpr int64_t kSlotsAhead = 16;

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

}  // namespace fg::sampling
