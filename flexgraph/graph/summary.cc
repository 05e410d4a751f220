#include "flexgraph/graph/summary.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "flexgraph/graph/edge_filter.h"

namespace fg::graph {

namespace {

int64_t Rows(const Tensor& t) { return t.defined() ? t.dim(0) : 0; }

std::string Bytes(int64_t b) {
  if (b >= (int64_t{1} << 30)) return absl::StrFormat("%.2f GiB", b / double(int64_t{1} << 30));
  if (b >= (1 << 20)) return absl::StrFormat("%.2f MiB", b / double(1 << 20));
  if (b >= (1 << 10)) return absl::StrFormat("%.1f KiB", b / 1024.0);
  return absl::StrCat(b, " B");
}

std::string DegreeText(const DegreeStats& d) {
  return absl::StrFormat("min %d, median %d, mean %.2f, max %d, zero-degree %d", d.min, d.median,
                         d.mean, d.max, d.zeros);
}

std::string DegreeJson(const DegreeStats& d) {
  return absl::StrFormat(R"({"min": %d, "median": %d, "mean": %.4f, "max": %d, "zeros": %d})", d.min,
                         d.median, d.mean, d.max, d.zeros);
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

std::vector<int64_t> LabelCounts(const Tensor& labels, int64_t classes) {
  std::vector<int64_t> counts;
  if (!labels.defined() || labels.rank() != 1 || labels.dtype() != DType::kInt64) return counts;
  counts.assign(std::max<int64_t>(classes, 0), 0);
  for (int64_t i = 0; i < labels.numel(); ++i) {
    const int64_t l = labels.i64()[i];
    if (l >= 0 && l < classes) ++counts[l];
  }
  return counts;
}

GraphSetSummary SummarizeGraphSet(const Dataset& ds) {
  const GraphSet& gs = *ds.graphs;
  GraphSetSummary g;
  g.sizes = SizeStats(gs);
  g.edge_feature_dim = gs.edge_feat.defined() ? gs.edge_feat.row_width() : 0;
  g.edge_classes = gs.num_edge_classes;
  g.graph_classes = gs.num_graph_classes;
  g.edge_label_counts = LabelCounts(gs.edge_labels, gs.num_edge_classes);
  g.graph_label_counts = LabelCounts(gs.graph_labels, gs.num_graph_classes);
  g.graph_targets = gs.graph_labels.defined() && gs.graph_labels.dtype() == DType::kFloat32;
  g.train = Rows(gs.train);
  g.valid = Rows(gs.valid);
  g.test = Rows(gs.test);
  g.particles = gs.num_particles();
  if (absl::StatusOr<ConstructionQuality> q = MeasureConstruction(ds, 1.0); q.ok()) g.construction = *q;
  if (gs.node_info.count(kHitDroppedTrueEdges)) {
    g.dropped_true_edges = 0;
    for (int64_t n : DroppedTrueEdgesPerGraph(gs)) g.dropped_true_edges += n;
  }
  return g;
}

std::string GraphSetText(const GraphSetSummary& g) {
  const GraphSizeStats& z = g.sizes;
  std::string out = absl::StrFormat(
      "graphs: %d (split: train %d, valid %d, test %d)\n"
      "  nodes per graph: min %d, median %d, mean %.1f, max %d\n"
      "  edges per graph: min %d, median %d, mean %.1f, max %d\n",
      z.graphs, g.train, g.valid, g.test, z.min_nodes, z.median_nodes, z.mean_nodes, z.max_nodes,
      z.min_edges, z.median_edges, z.mean_edges, z.max_edges);
  if (g.edge_feature_dim > 0) absl::StrAppend(&out, "  edge features: ", g.edge_feature_dim, "\n");
  if (g.edge_classes > 0) {
    absl::StrAppend(&out, "  edge classes: ", g.edge_classes, " (edges per class: ",
                    absl::StrJoin(g.edge_label_counts, " "), ")\n");
  }
  if (g.graph_classes > 0) {
    absl::StrAppend(&out, "  graph classes: ", g.graph_classes, " (graphs per class: ",
                    absl::StrJoin(g.graph_label_counts, " "), ")\n");
  }
  if (g.graph_targets) absl::StrAppend(&out, "  graph labels: real-valued targets\n");
  if (g.particles > 0) absl::StrAppend(&out, "  particles: ", g.particles, "\n");
  if (g.construction) {
    const ConstructionQuality& q = *g.construction;
    absl::StrAppend(&out, absl::StrFormat(
        "  graph construction: efficiency %.4f (%d of %d true segments, pT > %.1f GeV), "
        "purity %.4f (%d of %d candidate edges true)\n",
        q.efficiency(), q.found_segments, q.true_segments, q.pt_min, q.purity(), q.true_candidates,
        q.candidates));
  }
  if (g.dropped_true_edges >= 0) {
    absl::StrAppend(&out, "  filtered: ", g.dropped_true_edges,
                    " true edges dropped by filter stages (track counts them as lost; the "
                    "construction figures above include the filters')\n");
  }
  return out;
}

std::string GraphSetJson(const GraphSetSummary& g) {
  const GraphSizeStats& z = g.sizes;
  std::string out = absl::StrFormat(
      R"({"graphs": %d, "split": {"train": %d, "valid": %d, "test": %d}, )"
      R"("nodes_per_graph": {"min": %d, "median": %d, "mean": %.4f, "max": %d}, )"
      R"("edges_per_graph": {"min": %d, "median": %d, "mean": %.4f, "max": %d}, )"
      R"("edge_feature_dim": %d, "edge_classes": %d, "graph_classes": %d, "graph_targets": %s, )"
      R"("particles": %d)",
      z.graphs, g.train, g.valid, g.test, z.min_nodes, z.median_nodes, z.mean_nodes, z.max_nodes,
      z.min_edges, z.median_edges, z.mean_edges, z.max_edges, g.edge_feature_dim, g.edge_classes,
      g.graph_classes, g.graph_targets ? "true" : "false", g.particles);
  absl::StrAppend(&out, ", \"edge_label_counts\": [", absl::StrJoin(g.edge_label_counts, ", "),
                  "], \"graph_label_counts\": [", absl::StrJoin(g.graph_label_counts, ", "), "]");
  if (g.construction) {
    const ConstructionQuality& q = *g.construction;
    absl::StrAppend(&out, absl::StrFormat(
        R"(, "construction": {"pt_min": %.2f, "efficiency": %.6f, "purity": %.6f, )"
        R"("true_segments": %d, "found_segments": %d, "candidates": %d, "true_candidates": %d})",
        q.pt_min, q.efficiency(), q.purity(), q.true_segments, q.found_segments, q.candidates,
        q.true_candidates));
  }
  if (g.dropped_true_edges >= 0) absl::StrAppend(&out, ", \"filter_dropped_true_edges\": ", g.dropped_true_edges);
  return out + "}";
}

}  // namespace

DegreeStats ComputeDegreeStats(const Csr& csr) {
  DegreeStats d;
  if (csr.num_rows == 0) return d;
  std::vector<int64_t> deg(csr.num_rows);
  for (int64_t r = 0; r < csr.num_rows; ++r) deg[r] = csr.degree(r);
  d.min = *std::min_element(deg.begin(), deg.end());
  d.max = *std::max_element(deg.begin(), deg.end());
  d.zeros = std::count(deg.begin(), deg.end(), 0);
  d.mean = static_cast<double>(csr.nnz()) / csr.num_rows;
  std::nth_element(deg.begin(), deg.begin() + deg.size() / 2, deg.end());
  d.median = deg[deg.size() / 2];
  return d;
}

DatasetSummary Summarize(const Dataset& ds) {
  DatasetSummary s;
  s.name = ds.name;
  s.split_name = ds.split_name;
  for (size_t t = 0; t < ds.graph.node_types.size(); ++t) {
    NodeTypeSummary n;
    n.name = ds.graph.node_types[t];
    n.nodes = ds.graph.num_nodes[t];
    if (auto it = ds.features.find(n.name); it != ds.features.end()) {
      n.feature_dim = it->second.row_width();
      s.feature_bytes += it->second.nbytes();
    }
    if (auto it = ds.num_classes.find(n.name); it != ds.num_classes.end()) n.classes = it->second;
    if (auto it = ds.labels.find(n.name); it != ds.labels.end() && it->second.rank() == 1) {
      n.label_counts.assign(std::max<int64_t>(n.classes, 0), 0);
      for (int64_t i = 0; i < it->second.numel(); ++i) {
        const int64_t l = it->second.i64()[i];
        if (l >= 0 && l < n.classes) {
          ++n.label_counts[l];
        } else {
          ++n.unlabeled;
        }
      }
    }
    if (auto it = ds.splits.find(n.name); it != ds.splits.end()) {
      n.has_split = true;
      n.train = Rows(it->second.train);
      n.valid = Rows(it->second.valid);
      n.test = Rows(it->second.test);
    }
    s.types.push_back(std::move(n));
  }
  for (const Relation& r : ds.graph.relations) {
    RelationSummary rs;
    rs.key = r.Key();
    rs.edges = r.by_src.nnz();
    rs.symmetric = r.symmetric;
    rs.out_degree = ComputeDegreeStats(r.by_src);
    rs.in_degree = r.symmetric ? rs.out_degree : ComputeDegreeStats(r.by_dst);
    rs.edge_feature_dim = r.edge_feat.defined() ? r.edge_feat.row_width() : 0;
    if (auto it = ds.edge_splits.find(rs.key); it != ds.edge_splits.end()) {
      rs.has_split = true;
      rs.train = Rows(it->second.train);
      rs.valid = Rows(it->second.valid);
      rs.test = Rows(it->second.test);
    }
    s.relations.push_back(std::move(rs));
  }
  if (ds.graphs) s.graph_set = SummarizeGraphSet(ds);
  s.graph_bytes = static_cast<int64_t>(ds.graph.Bytes());
  s.total_bytes = static_cast<int64_t>(ds.Bytes());
  return s;
}

std::string DatasetSummary::ToText() const {
  std::string out = absl::StrCat("dataset ", name, split_name.empty() ? "" : " (split ",
                                 split_name, split_name.empty() ? "" : ")", "\n");
  absl::StrAppend(&out, "node types: ", types.size(), "\n");
  for (const NodeTypeSummary& t : types) {
    absl::StrAppend(&out, "  ", t.name, ": ", t.nodes, " nodes");
    if (t.feature_dim > 0) absl::StrAppend(&out, ", ", t.feature_dim, " features");
    if (t.classes > 0) absl::StrAppend(&out, ", ", t.classes, " classes");
    absl::StrAppend(&out, "\n");
    if (!t.label_counts.empty()) {
      absl::StrAppend(&out, "    labels per class: ", absl::StrJoin(t.label_counts, " "));
      if (t.unlabeled > 0) absl::StrAppend(&out, " (unlabeled ", t.unlabeled, ")");
      absl::StrAppend(&out, "\n");
    }
    if (t.has_split) {
      absl::StrAppend(&out, "    split: train ", t.train, ", valid ", t.valid, ", test ", t.test, "\n");
    }
  }
  absl::StrAppend(&out, "relations: ", relations.size(), "\n");
  for (const RelationSummary& r : relations) {
    absl::StrAppend(&out, "  ", r.key, ": ", r.edges, " edges",
                    r.symmetric ? " (undirected: both directions stored)" : "",
                    r.edge_feature_dim > 0 ? absl::StrCat(", ", r.edge_feature_dim, " edge features") : "",
                    "\n");
    absl::StrAppend(&out, "    out-degree: ", DegreeText(r.out_degree), "\n");
    if (!r.symmetric) absl::StrAppend(&out, "    in-degree:  ", DegreeText(r.in_degree), "\n");
    if (r.has_split) {
      absl::StrAppend(&out, "    link split: train ", r.train, ", valid ", r.valid, ", test ", r.test, "\n");
    }
  }
  if (graph_set) absl::StrAppend(&out, GraphSetText(*graph_set));
  absl::StrAppend(&out, "memory: graph ", Bytes(graph_bytes), ", features ", Bytes(feature_bytes),
                  ", total ", Bytes(total_bytes), "\n");
  return out;
}

std::string DatasetSummary::ToJson() const {
  std::vector<std::string> ts, rs;
  for (const NodeTypeSummary& t : types) {
    std::string split = t.has_split ? absl::StrFormat(R"({"train": %d, "valid": %d, "test": %d})",
                                                      t.train, t.valid, t.test)
                                    : "null";
    ts.push_back(absl::StrCat("{\"name\": ", Quote(t.name), ", \"nodes\": ", t.nodes,
                              ", \"feature_dim\": ", t.feature_dim, ", \"classes\": ", t.classes,
                              ", \"label_counts\": [", absl::StrJoin(t.label_counts, ", "),
                              "], \"unlabeled\": ", t.unlabeled, ", \"split\": ", split, "}"));
  }
  for (const RelationSummary& r : relations) {
    std::string split = r.has_split ? absl::StrFormat(R"({"train": %d, "valid": %d, "test": %d})",
                                                      r.train, r.valid, r.test)
                                    : "null";
    rs.push_back(absl::StrCat("{\"key\": ", Quote(r.key), ", \"edges\": ", r.edges,
                              ", \"symmetric\": ", r.symmetric ? "true" : "false",
                              ", \"out_degree\": ", DegreeJson(r.out_degree),
                              ", \"in_degree\": ", DegreeJson(r.in_degree),
                              ", \"edge_feature_dim\": ", r.edge_feature_dim, ", \"split\": ", split,
                              "}"));
  }
  return absl::StrCat("{\"name\": ", Quote(name), ", \"split\": ", Quote(split_name),
                      ", \"node_types\": [", absl::StrJoin(ts, ", "), "], \"relations\": [",
                      absl::StrJoin(rs, ", "), "], \"graph_set\": ",
                      graph_set ? GraphSetJson(*graph_set) : "null",
                      ", \"memory\": {\"graph_bytes\": ", graph_bytes,
                      ", \"feature_bytes\": ", feature_bytes, ", \"total_bytes\": ", total_bytes,
                      "}}\n");
}

}  // namespace fg::graph
