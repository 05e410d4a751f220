// ShaDow sampling on the host (sampler.h): per root, its k-hop vertex set drawn hop by hop with
// the node-wise draws (all roots of a bulk stacked, one SampleRows per hop: Q·A over every set's
// frontier), then per layer matrix the subgraphs it induces (the rows of A for every set's vertices,
// Q_S·A, kept where the column lies in the same set, ·Q_S^T), laid out block-diagonally per batch.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/status.h"
#include "hdg/builder.h"
#include "sampling/blocks.h"
#include "sampling/sampler.h"

namespace fg::sampling {
namespace {

constexpr uint64_t kShadowTag = 0x5AD0B;
// Loops over less work than this (entries, or rows) run on the calling thread: joining a parallel
// region costs more than they do, and on a loaded machine a whole scheduler slice (on 2 busy
// cores, 2 threads sampled Cora's batches 70x slower than 1).
constexpr int64_t kParallelWork = int64_t{1} << 15;

// The grain that keeps a loop of `n` items and `work` in all on the calling thread where it is small.
int64_t Grain(int64_t n, int64_t work, int64_t grain) { return work < kParallelWork ? std::max<int64_t>(n, 1) : grain; }

// One set's induced rows: per vertex (in set order) its kept entries, as table rows of the batch.
struct SetRows {
  std::vector<int64_t> count;  // kept entries per vertex
  std::vector<int32_t> children;
  std::vector<float> weights;
};

}  // namespace

absl::Status ParseSamplerOptions(const std::string& text, SamplerOptions* out) {
  if (text.empty()) return absl::OkStatus();
  for (absl::string_view kv : absl::StrSplit(text, ',')) {
    const size_t eq = kv.find('=');
    const std::string key(kv.substr(0, eq == absl::string_view::npos ? kv.size() : eq));
    const std::string value(eq == absl::string_view::npos ? "" : kv.substr(eq + 1));
    if (eq == absl::string_view::npos || key.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--sampler_opt: expected key=value, got '", std::string(kv), "'"));
    }
    if (key == "pool") {
      if (out->kind != SamplerKind::kShadow) {
        return absl::InvalidArgumentError(absl::StrCat("--sampler_opt pool: applies to the shadow sampler, not ",
                                                       SamplerKindName(out->kind)));
      }
      if (value == "none") {
        out->pool = SamplerOptions::Pool::kNone;
      } else if (value == "mean") {
        out->pool = SamplerOptions::Pool::kMean;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--sampler_opt pool: expected none or mean, got '", value, "'"));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--sampler_opt: unknown key '", key, "' (pool)"));
    }
  }
  return absl::OkStatus();
}

int64_t ShadowDrawBatch(int64_t batch, int64_t root_key) {
  return static_cast<int64_t>(MixKey(kShadowTag, static_cast<uint64_t>(batch), static_cast<uint64_t>(root_key)));
}

absl::StatusOr<std::vector<std::vector<int64_t>>> ShadowVertexSets(const std::vector<int>& fanouts,
                                                                   int64_t num_vertices,
                                                                   const std::vector<int64_t>& draw,
                                                                   const std::vector<int64_t>& roots,
                                                                   const HopSampler& sample) {
  const int64_t G = static_cast<int64_t>(roots.size());
  std::vector<std::vector<int64_t>> sets(G), frontier(G);
  for (int64_t g = 0; g < G; ++g) sets[g] = frontier[g] = {roots[g]};
  PooledSlots slots(NumThreads());
  for (int t = 0; t < NumThreads(); ++t) slots[t].Prepare(num_vertices);
  for (int hop = 0; hop < static_cast<int>(fanouts.size()); ++hop) {
    std::vector<SampledRows> drawn(G);
    FG_RETURN_IF_ERROR(sample(hop, fanouts[hop], draw, frontier, &drawn));
    int64_t work = 0;
    for (const SampledRows& d : drawn) work += static_cast<int64_t>(d.cols.size());
    ParallelForDynamic(0, G, Grain(G, work, 8), [&](int64_t g) {
      VertexSlots& s = slots[omp_get_thread_num()];
      std::vector<int64_t>& set = sets[g];
      std::vector<int64_t>& next = frontier[g];
      next.clear();
      const std::vector<int32_t>& cols = drawn[g].cols;
      s.Begin(static_cast<int64_t>(set.size() + cols.size()));
      s.With([&](auto slot) {
        for (int64_t v : set) slot[static_cast<int32_t>(v)] = 0;
        for (int32_t c : cols) {
          if (int32_t& at = slot[c]; at < 0) {
            at = 0;
            set.push_back(c);
            next.push_back(c);
          }
        }
      });
      s.End(set);
    });
  }
  return sets;
}

absl::StatusOr<std::vector<MiniBatch>> ShadowBatches(const std::vector<const NeighbourhoodMatrix*>& layers,
                                                     const SamplerOptions& options, int64_t first_index,
                                                     const std::vector<Tensor>& seeds,
                                                     const std::vector<std::vector<int64_t>>& sets,
                                                     const InducedRowsSource& rows) {
  const int num_layers = static_cast<int>(layers.size());
  const int64_t K = static_cast<int64_t>(seeds.size());
  const int64_t G = static_cast<int64_t>(sets.size());
  // Group g = batch k's root j: group_base[k] + j. Set g's vertex i > 0 is its batch's table row
  // B + rest[g] + i - 1 (B: the batch's roots), vertex 0 row j.
  std::vector<int64_t> group_base(K + 1, 0), batch_of(G), rest(G), table_rows(K, 0);
  for (int64_t k = 0; k < K; ++k) group_base[k + 1] = group_base[k] + seeds[k].numel();
  FG_CHECK(group_base[K] == G) << "one vertex set per root";
  std::vector<int64_t> stacked_base(G + 1, 0);  // set g's first vertex in the stacked order
  for (int64_t k = 0; k < K; ++k) {
    int64_t at = seeds[k].numel();
    for (int64_t g = group_base[k]; g < group_base[k + 1]; ++g) {
      batch_of[g] = k;
      rest[g] = at - seeds[k].numel();
      at += static_cast<int64_t>(sets[g].size()) - 1;
    }
    table_rows[k] = at;
  }
  for (int64_t g = 0; g < G; ++g) stacked_base[g + 1] = stacked_base[g] + static_cast<int64_t>(sets[g].size());
  std::vector<int64_t> stacked(stacked_base[G]);
  for (int64_t g = 0; g < G; ++g) std::copy(sets[g].begin(), sets[g].end(), stacked.begin() + stacked_base[g]);

  std::vector<MiniBatch> out(K);
  for (int64_t k = 0; k < K; ++k) {
    out[k].index = first_index + k;
    out[k].seeds = seeds[k];
    out[k].blocks.resize(num_layers);
    std::vector<int64_t> table(table_rows[k]);
    for (int64_t g = group_base[k]; g < group_base[k + 1]; ++g) {
      const int64_t B = seeds[k].numel();
      table[g - group_base[k]] = sets[g][0];
      std::copy(sets[g].begin() + 1, sets[g].end(), table.begin() + B + rest[g]);
    }
    const Tensor t = Tensor::FromVector(table);
    for (int l = 0; l < num_layers; ++l) out[k].blocks[l].table = t;
  }

  PooledSlots slots(NumThreads());
  for (int t = 0; t < NumThreads(); ++t) slots[t].Prepare(layers.back()->num_vertices());
  // The subgraphs that matrix `a` (layer l's) induces, per batch: all rows, or the roots' only.
  auto induce = [&](int l, bool all_rows) -> absl::StatusOr<std::vector<hdg::HdgPtr>> {
    const NeighbourhoodMatrix& a = *layers[l];
    std::vector<int64_t> roots;
    if (!all_rows) {
      for (int64_t g = 0; g < G; ++g) roots.push_back(sets[g][0]);
    }
    InducedRows induced;
    FG_RETURN_IF_ERROR(rows(l, all_rows ? stacked : roots, &induced));
    const bool weighted = induced.weights != nullptr && a.schema().weighted();
    // Q_S·A·Q_S^T per set: each vertex's row, kept where its column lies in the set.
    std::vector<SetRows> set_rows(G);
    // (Rows are read whole: at least a line of entries each.)
    ParallelForDynamic(0, G, Grain(G, 16 * static_cast<int64_t>(all_rows ? stacked.size() : roots.size()), 4),
                       [&](int64_t g) {
      VertexSlots& s = slots[omp_get_thread_num()];
      const std::vector<int64_t>& set = sets[g];
      const int64_t n = static_cast<int64_t>(set.size());
      const int64_t B = seeds[batch_of[g]].numel();
      const int32_t root_row = static_cast<int32_t>(g - group_base[batch_of[g]]);
      const int32_t first_rest = static_cast<int32_t>(B + rest[g]) - 1;
      SetRows& r = set_rows[g];
      const int64_t m = all_rows ? n : 1;
      r.count.assign(m, 0);
      s.Begin(n);
      s.With([&](auto slot) {
        for (int64_t i = 0; i < n; ++i) {
          slot[static_cast<int32_t>(set[i])] = i == 0 ? root_row : first_rest + static_cast<int32_t>(i);
        }
        for (int64_t i = 0; i < m; ++i) {
          const int64_t row = induced.row[all_rows ? stacked_base[g] + i : g];
          const int64_t b = induced.row_ptr[row], e = induced.row_ptr[row + 1];
          const size_t start = r.children.size();
          double full = 0, kept = 0;
          for (int64_t x = b; x < e; ++x) {
            if (weighted) full += induced.weights[x];
            const int32_t at = slot[induced.col[x]];
            if (at < 0) continue;
            r.children.push_back(at);
            if (weighted) {
              kept += induced.weights[x];
              r.weights.push_back(induced.weights[x]);
            }
          }
          r.count[i] = static_cast<int64_t>(r.children.size() - start);
          if (weighted && kept != 0 && r.count[i] < e - b) {  // rescaled to the row's full sum
            const float scale = static_cast<float>(full / kept);
            for (size_t x = start; x < r.weights.size(); ++x) r.weights[x] *= scale;
          }
        }
      });
      s.End(set);
    });
    // Per batch: the roots' rows first, then each set's others, in table order.
    std::vector<hdg::HdgPtr> hdgs(K);
    ParallelForDynamic(0, K, Grain(K, static_cast<int64_t>(stacked.size()), 1), [&](int64_t k) {
      const int64_t B = seeds[k].numel();
      const int64_t n = all_rows ? table_rows[k] : B;
      std::vector<int64_t> offsets(n + 1, 0);
      for (int64_t g = group_base[k]; g < group_base[k + 1]; ++g) {
        const SetRows& r = set_rows[g];
        offsets[g - group_base[k] + 1] = r.count[0];
        for (size_t i = 1; i < r.count.size(); ++i) offsets[B + rest[g] + i] = r.count[i];
      }
      for (int64_t j = 0; j < n; ++j) offsets[j + 1] += offsets[j];
      Tensor children = Tensor::Empty({offsets[n]}, DType::kInt32);
      Tensor weights = weighted ? Tensor::Empty({offsets[n]}, DType::kFloat32) : Tensor();
      for (int64_t g = group_base[k]; g < group_base[k + 1]; ++g) {
        const SetRows& r = set_rows[g];
        const int64_t j = g - group_base[k];
        std::copy(r.children.begin(), r.children.begin() + r.count[0], children.i32() + offsets[j]);
        if (weighted) std::copy(r.weights.begin(), r.weights.begin() + r.count[0], weights.f32() + offsets[j]);
        if (r.count.size() < 2) continue;
        const int64_t at = offsets[B + rest[g]];
        std::copy(r.children.begin() + r.count[0], r.children.end(), children.i32() + at);
        if (weighted) std::copy(r.weights.begin() + r.count[0], r.weights.end(), weights.f32() + at);
      }
      Tensor roots = Tensor::Empty({n}, DType::kInt32);
      std::iota(roots.i32(), roots.i32() + n, 0);
      hdgs[k] = std::make_shared<const hdg::Hdg>(hdg::FlatHdg(a.schema(), table_rows[k], std::move(roots),
                                                              Tensor::FromVector(offsets), std::move(children),
                                                              std::move(weights)));
    });
    return hdgs;
  };
  // The first B rows of a subgraph HDG: its roots'.
  auto roots_of = [&](const hdg::Hdg& full, int64_t k) {
    const int64_t B = seeds[k].numel();
    const hdg::HdgLevel& level = full.level(1);
    const int64_t* row_ptr = level.csr().row_ptr();
    const int64_t nnz = row_ptr[B];
    Tensor roots = Tensor::Empty({B}, DType::kInt32);
    std::iota(roots.i32(), roots.i32() + B, 0);
    return std::make_shared<const hdg::Hdg>(hdg::FlatHdg(
        full.schema(), table_rows[k], std::move(roots), Tensor::FromVector(std::vector<int64_t>(row_ptr, row_ptr + B + 1)),
        Tensor::FromVector(std::vector<int32_t>(level.csr().col(), level.csr().col() + nnz)),
        level.weights.defined() ? Tensor::FromVector(std::vector<float>(level.weights.f32(), level.weights.f32() + nnz))
                                : Tensor()));
  };
  // Per distinct matrix, its batches' whole subgraphs, once.
  std::map<const NeighbourhoodMatrix*, std::vector<hdg::HdgPtr>> whole;
  for (int l = 0; l < num_layers; ++l) {
    const bool all_rows = l < num_layers - 1 || options.pool == SamplerOptions::Pool::kMean;
    auto it = whole.find(layers[l]);
    if (all_rows && it == whole.end()) {
      FG_ASSIGN_OR_RETURN(std::vector<hdg::HdgPtr> h, induce(l, true));
      it = whole.emplace(layers[l], std::move(h)).first;
    }
    std::vector<hdg::HdgPtr> own;
    if (!all_rows && it == whole.end()) {
      FG_ASSIGN_OR_RETURN(own, induce(l, false));
    }
    for (int64_t k = 0; k < K; ++k) {
      out[k].blocks[l].hdg = all_rows ? it->second[k] : it != whole.end() ? roots_of(*it->second[k], k) : own[k];
      out[k].sampled_edges += out[k].blocks[l].hdg->level(1).csr().nnz();
    }
  }
  if (options.pool == SamplerOptions::Pool::kMean) {
    // Row j: the root's output plus the mean of its set's.
    for (int64_t k = 0; k < K; ++k) {
      const int64_t B = seeds[k].numel();
      std::vector<int64_t> offsets{0};
      std::vector<int32_t> cols;
      std::vector<float> values;
      for (int64_t g = group_base[k]; g < group_base[k + 1]; ++g) {
        const int64_t n = static_cast<int64_t>(sets[g].size());
        const float mean = 1.0f / static_cast<float>(n);
        cols.push_back(static_cast<int32_t>(g - group_base[k]));
        values.push_back(1.0f + mean);
        for (int64_t i = 1; i < n; ++i) {
          cols.push_back(static_cast<int32_t>(B + rest[g] + i - 1));
          values.push_back(mean);
        }
        offsets.push_back(static_cast<int64_t>(cols.size()));
      }
      out[k].readout = Csr::FromVectors(B, table_rows[k], offsets, cols, values);
    }
  }
  return out;
}

// SampleBulk's shadow batches: the vertex sets drawn from the last layer's matrix (the seeds'),
// each layer's subgraphs induced by its own.
absl::StatusOr<std::vector<MiniBatch>> SampleShadowBulk(const std::vector<const NeighbourhoodMatrix*>& layers,
                                                        const SamplerOptions& options, int epoch,
                                                        int64_t first_index, const std::vector<Tensor>& seeds) {
  const NeighbourhoodMatrix& top = *layers.back();
  std::vector<int64_t> roots, draw;
  for (size_t k = 0; k < seeds.size(); ++k) {
    for (int64_t j = 0; j < seeds[k].numel(); ++j) roots.push_back(seeds[k].i64()[j]);
  }
  // The first stacked vertex without a row in `a` (size: none), whatever the threads.
  auto first_missing = [](const NeighbourhoodMatrix& a, const std::vector<int64_t>& vertices,
                          std::vector<int64_t>* rows) {
    const int64_t n = static_cast<int64_t>(vertices.size());
    rows->resize(n);
    std::atomic<int64_t> missing{n};
    ParallelForDynamic(0, n, Grain(n, n, 1024), [&](int64_t i) {
      const int64_t v = vertices[i];
      (*rows)[i] = v >= 0 && v < a.num_vertices() ? a.RowOf(v) : -1;
      if ((*rows)[i] < 0) {
        int64_t m = missing.load();
        while (i < m && !missing.compare_exchange_weak(m, i)) {
        }
      }
    });
    return missing.load();
  };
  std::vector<int64_t> root_rows;
  if (const int64_t m = first_missing(top, roots, &root_rows); m < static_cast<int64_t>(roots.size())) {
    return absl::InvalidArgumentError(absl::StrCat("vertex ", roots[m], " has no neighbourhood in layer ",
                                                   layers.size() - 1, " (not one of its roots)"));
  }
  for (size_t k = 0, g = 0; k < seeds.size(); ++k) {
    for (int64_t j = 0; j < seeds[k].numel(); ++j, ++g) {
      const int64_t key = top.keys() != nullptr ? top.keys()[root_rows[g]] : roots[g];
      draw.push_back(ShadowDrawBatch(first_index + static_cast<int64_t>(k), key));
    }
  }
  auto hop = [&](int h, int fanout, const std::vector<int64_t>& batch, const std::vector<std::vector<int64_t>>& frontier,
                 std::vector<SampledRows>* out) -> absl::Status {
    std::vector<int64_t> flat, flat_rows;
    for (const auto& f : frontier) flat.insert(flat.end(), f.begin(), f.end());
    if (const int64_t m = first_missing(top, flat, &flat_rows); m < static_cast<int64_t>(flat.size())) {
      return absl::InvalidArgumentError(absl::StrCat("vertex ", flat[m], " has no neighbourhood in layer ",
                                                     layers.size() - 1, " (not one of its roots)"));
    }
    std::vector<std::vector<int64_t>> rows(frontier.size());
    for (size_t g = 0, at = 0; g < frontier.size(); at += frontier[g].size(), ++g) {
      rows[g].assign(flat_rows.begin() + at, flat_rows.begin() + at + frontier[g].size());
    }
    SampleRows(top, options, fanout, epoch, h, batch, frontier, rows, out);
    return absl::OkStatus();
  };
  FG_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> sets,
                      ShadowVertexSets(options.fanouts, top.num_vertices(), draw, roots, hop));
  auto induced = [&](int l, const std::vector<int64_t>& vertices, InducedRows* out) -> absl::Status {
    const NeighbourhoodMatrix& a = *layers[l];
    if (const int64_t m = first_missing(a, vertices, &out->row); m < static_cast<int64_t>(vertices.size())) {
      return absl::InvalidArgumentError(absl::StrCat("vertex ", vertices[m], " has no neighbourhood in layer ", l,
                                                     " (not one of its roots)"));
    }
    out->row_ptr = a.csr().row_ptr();
    out->col = a.csr().col();
    out->weights = a.weights();
    return absl::OkStatus();
  };
  return ShadowBatches(layers, options, first_index, seeds, sets, induced);
}

}  // namespace fg::sampling
