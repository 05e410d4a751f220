#include "runtime/train/dataset_view.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/builder.h"
#include "nau/metapath.h"

namespace fg::runtime {

absl::StatusOr<graph::Dataset> ApplyView(graph::Dataset ds, const flexgraph::DatasetConfig& config) {
  if (config.homogeneous_view().empty()) return ds;
  const graph::HeteroGraph& g = ds.graph;
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("homogeneous_view '", config.homogeneous_view(),
                                                   "' of dataset ", ds.name, ": ", what));
  };
  if (ds.part) return bad("apply it when partitioning (flexgraph partition --homogeneous_view)");
  const std::string type = config.target_type().empty() ? ds.LabeledType() : config.target_type();
  const int t = g.TypeIndex(type);
  if (t < 0) return bad(absl::StrCat("node type '", type, "' is not in the dataset"));
  auto parsed = nau::ParseMetapathList(config.homogeneous_view(), g);
  if (!parsed.ok()) return bad(std::string(parsed.status().message()));
  for (const nau::Metapath& mp : *parsed) {
    if (mp.start_type() != t || mp.node_types.back() != t) {
      return bad(absl::StrCat("metapath ", mp.name, " must start and end at '", type, "'"));
    }
  }
  // Per vertex, the ends of its instances: the frontier of each step, deduplicated.
  const int64_t n = g.num_nodes[t];
  std::vector<std::vector<int32_t>> ends(n);
  ParallelForDynamic(0, n, 64, [&](int64_t v) {
    std::vector<int32_t> found;
    for (const nau::Metapath& mp : *parsed) {
      std::vector<int32_t> frontier = {static_cast<int32_t>(v)}, next;
      for (const nau::MetapathStep& step : mp.steps) {
        const graph::Relation& rel = g.relations[step.relation];
        const Csr& c = step.forward ? rel.by_src : rel.by_dst;
        next.clear();
        for (int32_t u : frontier) next.insert(next.end(), c.col() + c.row_ptr()[u], c.col() + c.row_ptr()[u + 1]);
        std::sort(next.begin(), next.end());
        next.erase(std::unique(next.begin(), next.end()), next.end());
        frontier.swap(next);
      }
      found.insert(found.end(), frontier.begin(), frontier.end());
    }
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
    found.erase(std::remove(found.begin(), found.end(), static_cast<int32_t>(v)), found.end());
    ends[v] = std::move(found);
  });
  std::vector<int64_t> src, dst;
  for (int64_t v = 0; v < n; ++v) {
    for (int32_t u : ends[v]) {
      src.push_back(u);
      dst.push_back(v);
    }
  }
  graph::CsrBuildOptions build;
  build.deduplicate = true;
  build.remove_self_loops = true;
  build.add_reverse_edges = true;  // undirected, as homogeneous datasets are
  FG_ASSIGN_OR_RETURN(graph::Relation rel,
                      graph::BuildRelation(type, "view", type, n, n, src.data(),
                                           dst.data(), static_cast<int64_t>(src.size()), nullptr,
                                           Tensor(), build));
  graph::Dataset view;
  view.name = absl::StrCat(ds.name, "[", type, ":", config.homogeneous_view(), "]");
  view.split_name = ds.split_name;
  view.graph.node_types = {type};
  view.graph.num_nodes = {n};
  view.graph.relations.push_back(std::move(rel));
  for (auto* table : {&ds.features, &ds.labels}) {
    if (auto it = table->find(type); it != table->end()) {
      (table == &ds.features ? view.features : view.labels)[type] = it->second;
    }
  }
  if (auto it = ds.num_classes.find(type); it != ds.num_classes.end()) view.num_classes[type] = it->second;
  if (auto it = ds.splits.find(type); it != ds.splits.end()) view.splits[type] = it->second;
  return view;
}

}  // namespace fg::runtime
