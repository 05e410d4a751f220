#include "flexgraph/graph/edge_filter.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/builder.h"

namespace fg::graph {

absl::StatusOr<Dataset> FilterGraphSetEdges(const Dataset& ds, const std::vector<uint8_t>& keep) {
  if (!ds.IsGraphSet()) {
    return absl::InvalidArgumentError(
        absl::StrCat("filter: dataset ", ds.name, " is not a set of graphs"));
  }
  const GraphSet& gs = *ds.graphs;
  const int64_t m = gs.num_edges();
  if (static_cast<int64_t>(keep.size()) != m) {
    return absl::InvalidArgumentError(absl::StrCat("filter: ", keep.size(), " keep flags for ", m,
                                                   " edges of dataset ", ds.name));
  }
  const Tensor& labels = gs.edge_labels;
  if (labels.defined()) {
    bool binary = labels.dtype() == DType::kInt64 && labels.rank() == 1;
    for (int64_t k = 0; binary && k < m; ++k)
      binary = labels.i64()[k] >= -1 && labels.i64()[k] <= 1;
    if (!binary) {
      return absl::InvalidArgumentError(
          absl::StrCat("filter: the edge labels of dataset ", ds.name,
                       " are not binary (one task, 0 or 1, -1 unlabeled)"));
    }
  }
  Dataset out;
  out.name = ds.name;
  out.features = ds.features;
  out.labels = ds.labels;
  out.num_classes = ds.num_classes;
  out.split_name = ds.split_name;
  GraphSet& fs = out.graphs.emplace();
  fs.node_offsets = gs.node_offsets;
  fs.graph_labels = gs.graph_labels;
  fs.num_graph_classes = gs.num_graph_classes;
  fs.num_edge_classes = gs.num_edge_classes;
  fs.train = gs.train;
  fs.valid = gs.valid;
  fs.test = gs.test;
  fs.node_info = gs.node_info;
  fs.particle_offsets = gs.particle_offsets;
  fs.particles = gs.particles;

  const int64_t n = ds.graph.num_nodes[0];
  std::vector<int64_t> kept;
  for (int64_t k = 0; k < m; ++k) {
    if (keep[k]) kept.push_back(k);
  }
  const int64_t mk = static_cast<int64_t>(kept.size());
  std::vector<int64_t> offsets(gs.num_graphs() + 1, 0);
  for (int64_t g = 0, i = 0; g < gs.num_graphs(); ++g) {
    while (i < mk && kept[i] < gs.EdgeEnd(g)) ++i;
    offsets[g + 1] = i;
  }
  fs.edge_offsets = Tensor::FromVector(offsets);
  fs.edges = Tensor::Empty({mk, 2}, DType::kInt64);
  for (int64_t i = 0; i < mk; ++i) {
    fs.edges.i64()[2 * i] = gs.edges.i64()[2 * kept[i]];
    fs.edges.i64()[2 * i + 1] = gs.edges.i64()[2 * kept[i] + 1];
  }
  if (gs.edge_feat.defined()) {
    const int64_t f = gs.edge_feat.row_width();
    fs.edge_feat = Tensor::Empty({mk, f});
    for (int64_t i = 0; i < mk; ++i) {
      std::copy_n(gs.edge_feat.f32() + kept[i] * f, f, fs.edge_feat.f32() + i * f);
    }
  }
  if (labels.defined()) {
    fs.edge_labels = Tensor::Empty({mk}, DType::kInt64);
    for (int64_t i = 0; i < mk; ++i) fs.edge_labels.i64()[i] = labels.i64()[kept[i]];
    // The dropped true edges, at their sources, on top of earlier stages' counts.
    Tensor dropped = Tensor::Zeros({n}, DType::kInt64);
    if (auto it = gs.node_info.find(kHitDroppedTrueEdges); it != gs.node_info.end()) {
      if (it->second.dtype() != DType::kInt64) {
        return absl::InvalidArgumentError(absl::StrCat("filter: node_info ", kHitDroppedTrueEdges,
                                                       " of dataset ", ds.name, " is not int64"));
      }
      std::copy_n(it->second.i64(), n, dropped.i64());
    }
    for (int64_t k = 0; k < m; ++k) {
      if (!keep[k] && labels.i64()[k] == 1) ++dropped.i64()[gs.edges.i64()[2 * k]];
    }
    fs.node_info[kHitDroppedTrueEdges] = dropped;
  }
  // The union graph as the source's was built: reverse edges when its relation is symmetric,
  // self loops when some edge of it is one (graph sets are loaded without added loops).
  LoadOptions build;
  build.add_reverse_edges = ds.graph.relations[0].symmetric;
  build.remove_self_loops = true;
  for (int64_t k = 0; k < m && build.remove_self_loops; ++k) {
    build.remove_self_loops = gs.edges.i64()[2 * k] != gs.edges.i64()[2 * k + 1];
  }
  FG_RETURN_IF_ERROR(BuildGraphSetGraph(&out, build));
  FG_RETURN_IF_ERROR(out.graph.ToInt32Indices());
  FG_RETURN_IF_ERROR(ValidateGraphSet(out));
  return out;
}

std::vector<int64_t> DroppedTrueEdgesPerGraph(const GraphSet& gs) {
  std::vector<int64_t> out(gs.num_graphs(), 0);
  auto it = gs.node_info.find(kHitDroppedTrueEdges);
  if (it == gs.node_info.end() || it->second.dtype() != DType::kInt64) return out;
  for (int64_t g = 0; g < gs.num_graphs(); ++g) {
    for (int64_t v = gs.NodeBegin(g); v < gs.NodeEnd(g); ++v) out[g] += it->second.i64()[v];
  }
  return out;
}

absl::StatusOr<double> CutForEfficiency(const GraphSet& gs, const std::vector<float>& scores,
                                        const std::vector<int64_t>& graphs, double efficiency) {
  if (!(efficiency > 0 && efficiency <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("efficiency ", efficiency, " outside (0, 1]"));
  }
  if (!gs.edge_labels.defined() || gs.edge_labels.rank() != 1 ||
      static_cast<int64_t>(scores.size()) != gs.num_edges()) {
    return absl::InvalidArgumentError(
        "efficiency: needs binary edge labels and one score per edge");
  }
  std::vector<float> true_scores;
  for (int64_t g : graphs) {
    for (int64_t k = gs.EdgeBegin(g); k < gs.EdgeEnd(g); ++k) {
      if (gs.edge_labels.i64()[k] == 1 && !std::isnan(scores[k])) true_scores.push_back(scores[k]);
    }
  }
  if (true_scores.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("efficiency: no scored true edge in the ", graphs.size(), " graphs"));
  }
  // Keep the `need` highest: the cut lies just below the need-th highest score.
  const size_t need =
      static_cast<size_t>(std::ceil(efficiency * static_cast<double>(true_scores.size()) - 1e-9));
  std::sort(true_scores.begin(), true_scores.end(), std::greater<float>());
  const float s = true_scores[std::max<size_t>(need, 1) - 1];
  return static_cast<double>(std::nextafter(s, -1.0f));
}

}  // namespace fg::graph
