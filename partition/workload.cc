#include "partition/workload.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/status.h"
#include "nau/model.h"

namespace fg::partition {
namespace {

// Adds one layer: its dependency structure and its per-vertex work. `table` holds the global ids
// of the layer's input rows.
void AddLayer(hdg::HdgPtr h, const std::vector<int32_t>& roots, const nau::LayerCost& cost,
              bool decomposable, const std::vector<int32_t>& table, Workload* w) {
  const int levels = h->num_levels();
  auto width = [&](int k) {  // level k in 1..levels
    const auto& lw = cost.level_widths;
    return lw.empty() ? cost.in : lw[std::min<size_t>(k - 1, lw.size() - 1)];
  };
  LayerWorkload lw;
  lw.schema = h->schema().ToString();
  lw.roots = roots;
  lw.in_width = cost.in;
  lw.out_width = cost.out;
  lw.message_width = width(1);
  lw.decomposable = decomposable;
  // Root index of every node, level by level from the top.
  std::vector<int32_t> node_root(h->level(levels).num_nodes());
  for (size_t i = 0; i < node_root.size(); ++i) node_root[i] = static_cast<int32_t>(i);
  for (int k = levels; k >= 1; --k) {
    const Csr& c = h->level(k).csr();
    const double floats = static_cast<double>(width(k));
    lw.nodes_per_level.insert(lw.nodes_per_level.begin(), c.num_rows);
    lw.entries_per_level.insert(lw.entries_per_level.begin(), c.nnz());
    w->hdg_entries += c.nnz();
    std::vector<int32_t> child_root(k > 1 ? c.num_cols : 0, -1);
    for (int64_t i = 0; i < c.num_rows; ++i) {
      const int32_t r = node_root[i];
      const int32_t v = roots[r];
      w->entry_floats[v] += static_cast<double>(c.degree(i)) * floats;
      w->row_floats[v] += floats;
      if (k > 1) {
        for (int64_t e = c.row_ptr()[i]; e < c.row_ptr()[i + 1]; ++e) child_root[c.col()[e]] = r;
      }
    }
    if (k > 1) node_root = std::move(child_root);
  }
  // Group the bottom level by root (counting sort; stable, so deterministic).
  const Csr& b = h->level(1).csr();
  const size_t num_roots = roots.size();
  lw.root_nodes.assign(num_roots + 1, 0);
  for (int64_t i = 0; i < b.num_rows; ++i) {
    if (node_root[i] >= 0) ++lw.root_nodes[node_root[i] + 1];
  }
  for (size_t r = 0; r < num_roots; ++r) lw.root_nodes[r + 1] += lw.root_nodes[r];
  bool in_order = true;
  for (int64_t i = 0; i < b.num_rows && in_order; ++i) {
    in_order = node_root[i] >= 0 && (i == 0 || node_root[i] >= node_root[i - 1]);
  }
  if (in_order) {
    lw.bottom = b;
  } else {
    std::vector<int64_t> next(lw.root_nodes.begin(), lw.root_nodes.end() - 1);
    std::vector<int64_t> order(lw.root_nodes.back());
    for (int64_t i = 0; i < b.num_rows; ++i) {
      if (node_root[i] >= 0) order[next[node_root[i]]++] = i;
    }
    std::vector<int64_t> offsets{0};
    std::vector<int32_t> indices;
    indices.reserve(b.nnz());
    for (int64_t i : order) {
      indices.insert(indices.end(), b.col() + b.row_ptr()[i], b.col() + b.row_ptr()[i + 1]);
      offsets.push_back(static_cast<int64_t>(indices.size()));
    }
    lw.bottom = Csr::FromVectors(static_cast<int64_t>(order.size()), b.num_cols, offsets, indices);
  }
  // Dense transforms: flops, and the rows they stream in and out.
  for (int32_t v : roots) {
    w->gemm_flops[v] += cost.update_flops;
    w->row_floats[v] += static_cast<double>(cost.in + cost.out);
  }
  if (cost.message_flops > 0) {
    for (int32_t v : table) {
      w->gemm_flops[v] += cost.message_flops;
      w->row_floats[v] += static_cast<double>(cost.in + lw.message_width);
    }
  }
  lw.hdg = std::move(h);
  w->layers.push_back(std::move(lw));
}

// The options' spec completed with the data, as the trainer completes it.
absl::StatusOr<nau::ModelSpec> CompleteSpec(const graph::Dataset& dataset, const nau::VertexSpace* space,
                                            const WorkloadOptions& o) {
  nau::ModelSpec spec = o.spec;
  spec.dataset = &dataset;
  spec.vertices = space;
  if (spec.target_type.empty()) spec.target_type = dataset.LabeledType();
  if (space->TypeIndex(spec.target_type) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target type '", spec.target_type, "' is not a node type of dataset ", dataset.name));
  }
  auto classes = dataset.num_classes.find(spec.target_type);
  spec.num_classes = classes != dataset.num_classes.end() && classes->second > 0 ? classes->second
                                                                                 : spec.hidden;
  return spec;
}

std::vector<int32_t> AllVertices(int64_t n) {
  std::vector<int32_t> all(n);
  for (int64_t v = 0; v < n; ++v) all[v] = static_cast<int32_t>(v);
  return all;
}

}  // namespace

absl::StatusOr<Workload> BuildWorkload(const graph::Dataset& dataset, const WorkloadOptions& o) {
  const nau::ModelInfo* info = nau::ModelRegistry::Get().Find(o.model);
  if (info == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("model: unknown model '", o.model, "' (registered: ",
                     absl::StrJoin(nau::ModelRegistry::Get().Names(), ", "), ")"));
  }
  const nau::VertexSpace space(dataset.graph);
  FG_ASSIGN_OR_RETURN(const nau::ModelSpec spec, CompleteSpec(dataset, &space, o));
  std::unique_ptr<nau::Model> model = info->factory();
  FG_RETURN_IF_ERROR(Annotate(model->Build(spec), absl::StrCat("model ", o.model)));

  Workload w;
  w.model = o.model;
  w.num_vertices = space.size();
  w.entry_floats.assign(w.num_vertices, 0.0);
  w.row_floats.assign(w.num_vertices, 0.0);
  w.gemm_flops.assign(w.num_vertices, 0.0);
  // Layers share HDGs as the trainer's do (same key, as many roots).
  std::map<std::string, int> by_key;
  std::vector<int32_t> table = AllVertices(w.num_vertices);
  int64_t in = spec.FeatureDim(spec.target_type);
  for (int i = 0; i < model->num_layers(); ++i) {
    const nau::Layer& layer = model->layer(i);
    std::vector<int32_t> roots = model->Roots(i, spec);
    const bool last = i == model->num_layers() - 1;
    const nau::LayerCost cost = layer.Cost(in, last ? spec.num_classes : spec.hidden);
    const std::string key = nau::SharedSelectionKey(layer);
    auto it = key.empty() ? by_key.end() : by_key.find(key);
    hdg::HdgPtr h;
    if (it != by_key.end() && w.layers[it->second].roots.size() == roots.size()) {
      h = w.layers[it->second].hdg;
    } else {
      FG_ASSIGN_OR_RETURN(hdg::Hdg built, nau::SelectHdg(layer, i, spec, /*epoch=*/0, roots));
      h = std::make_shared<const hdg::Hdg>(std::move(built));
      if (!key.empty()) by_key[key] = i;
    }
    AddLayer(std::move(h), roots, cost, layer.LevelAggregator(1).decomposable(), table, &w);
    table = std::move(roots);
    in = cost.out;
  }
  return w;
}

}  // namespace fg::partition
