// The trainer's HDGs: each layer's, selected (again when the layer's selection is drawn anew)
// over this worker's roots, shared between layers of one selection, exported and measured.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "runtime/distributed/distributed_selection.h"
#include "runtime/distributed/hdg_export.h"
#include "runtime/train/trainer.h"

namespace fg::runtime {

absl::Status Trainer::EnsureHdgs(int epoch) {
  ScopedTimer timer(&stats_.selection);
  std::map<std::string, int> by_key;
  for (int i = 0; i < model_->num_layers(); ++i) {
    nau::Layer& layer = model_->layer(i);
    LayerGraph& lg = layer_graphs_[i];
    if (!Stale(layer, lg, epoch)) continue;
    const std::string key = nau::SharedSelectionKey(layer);
    auto it = key.empty() ? by_key.end() : by_key.find(key);
    // Decided on global facts (the layers' root lists), so that every worker decides alike.
    const bool same_roots = it != by_key.end() && roots_key_[it->second] == roots_key_[i];
    if (same_roots) {
      lg.hdg = layer_graphs_[it->second].hdg;
      lg.bytes = 0;
    } else {
      const Tensor& ids = layer_roots_[i].ids;
      std::vector<int32_t> roots(ids.numel());
      for (size_t k = 0; k < roots.size(); ++k) roots[k] = static_cast<int32_t>(ids.i64()[k]);
      auto select = [&]() -> absl::StatusOr<hdg::Hdg> {
        if (!dataset_.part || !distributed() || layer.LocalSelection()) {
          return nau::SelectHdg(layer, i, spec_, epoch, roots);
        }
        // Walks and metapath instances cross the parts: expand them across the workers.
        const nau::SelectContext ctx(&dataset_, &space_, spec_.seed, nau::SelectionRound(layer, epoch), i);
        if (layer.Walks() != nullptr) {
          return SelectByWalks(*exec_.setup().comm, exec_.ownership(), *layer.Walks(), ctx,
                               layer.Schema(), space_.size(), roots);
        }
        return SelectByMetapaths(*exec_.setup().comm, exec_.ownership(), *layer.Instances(), ctx,
                                 layer.Schema(), space_.size(), roots);
      };
      FG_ASSIGN_OR_RETURN(hdg::Hdg built, select());
      lg.hdg = std::make_shared<const hdg::Hdg>(std::move(built));
      lg.bytes = static_cast<int64_t>(lg.hdg->Bytes());
      if (!key.empty()) by_key[key] = i;
    }
    lg.built_epoch = epoch;
    // The layer's input rows: layer 0 reads the table, layer i > 0 the roots of layer i - 1.
    const DistributedExecutor::Rows& input = i == 0 ? table_ : layer_roots_[i - 1];
    // A layer over the same HDG, input and bottom reduction as an earlier one shares its exchange.
    auto input_key = [&](int l) { return l == 0 ? table_key_ : roots_key_[l - 1]; };
    const int j = same_roots ? it->second : -1;
    const bool same_exchange =
        j >= 0 && input_key(j) == input_key(i) &&
        model_->layer(j).LevelAggregator(1).reduction() == layer.LevelAggregator(1).reduction();
    FG_RETURN_IF_ERROR(
        exec_.PlanLayer(i, layer, lg.hdg, input, layer_roots_[i], epoch, same_exchange ? j : -1));
  }
  if (!keep_hdgs_) ReleaseHdgs();
  return absl::OkStatus();
}

void Trainer::ReleaseHdgs() {
  keep_hdgs_ = false;
  for (LayerGraph& lg : layer_graphs_) lg.hdg.reset();
  exec_.ReleaseHdgs();
}

absl::Status Trainer::WholeGraphHdgs(int epoch) {
  // Alone, layer_graphs_ select every vertex; a part samples its own and asks the others.
  if (!distributed() || dataset_.part) return absl::OkStatus();
  ScopedTimer timer(&stats_.selection);
  whole_graphs_.resize(model_->num_layers());
  std::map<std::string, int> by_key;
  for (int i = 0; i < model_->num_layers(); ++i) {
    const nau::Layer& layer = model_->layer(i);
    LayerGraph& lg = whole_graphs_[i];
    if (!Stale(layer, lg, epoch)) continue;
    const std::string key = nau::SharedSelectionKey(layer);
    auto it = key.empty() ? by_key.end() : by_key.find(key);
    if (it != by_key.end() && roots_key_[it->second] == roots_key_[i]) {
      lg.hdg = whole_graphs_[it->second].hdg;
    } else {
      FG_ASSIGN_OR_RETURN(hdg::Hdg built,
                          nau::SelectHdg(layer, i, spec_, epoch, model_->Roots(i, spec_)));
      lg.hdg = std::make_shared<const hdg::Hdg>(std::move(built));
      if (!key.empty()) by_key[key] = i;
    }
    lg.built_epoch = epoch;
  }
  return absl::OkStatus();
}

bool Trainer::Stale(const nau::Layer& layer, const LayerGraph& lg, int epoch) {
  const int period = std::max(1, layer.SelectionPeriod());
  return lg.built_epoch < 0 || (layer.SampledSelection() && epoch / period != lg.built_epoch / period);
}

absl::Status Trainer::ExportHdgs(const std::string& dir) const {
  std::vector<const hdg::Hdg*> layers;
  for (const auto& lg : layer_graphs_) layers.push_back(lg.hdg.get());
  return runtime::ExportHdgs(distributed() ? exec_.setup().comm : nullptr, layers, table_.ids, table_.keys, dir);
}

int64_t Trainer::HdgBytes() const {
  int64_t bytes = 0;
  for (const auto& lg : layer_graphs_) bytes += lg.bytes;
  return bytes;
}

}  // namespace fg::runtime
