#include "sampling/sampler.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/status.h"
#include "hdg/builder.h"
#include "sampling/blocks.h"
#include "sampling/device_sampler.h"
#include "sampling/pick.h"

namespace fg::sampling {
namespace {

constexpr uint64_t kBatchOrderTag = 0xBA7C4;

}  // namespace

bool ParseSamplerKind(const std::string& name, SamplerKind* out) {
  if (name == "neighbor") {
    *out = SamplerKind::kNodeWise;
  } else if (name == "ladies") {
    *out = SamplerKind::kLayerWise;
  } else if (name == "shadow") {
    *out = SamplerKind::kShadow;
  } else {
    return false;
  }
  return true;
}

const char* SamplerKindName(SamplerKind kind) {
  switch (kind) {
    case SamplerKind::kNodeWise:
      return "neighbor";
    case SamplerKind::kLayerWise:
      return "ladies";
    case SamplerKind::kShadow:
      return "shadow";
  }
  return "?";
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
  if (options.kind == SamplerKind::kShadow) {
    if (options.fanouts.empty() || num_layers == 0) {
      return absl::InvalidArgumentError(absl::StrCat("fanouts: the shadow sampler needs at least one hop, and a model "
                                                     "at least one layer; got ", options.fanouts.size(), " hops for ",
                                                     num_layers, " layers"));
    }
    return SampleShadowBulk(layers, options, epoch, first_index, seeds);
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

}  // namespace fg::sampling
