#include "flexgraph/graph/graph_set.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/builder.h"
#include "flexgraph/graph/dataset.h"

namespace fg::graph {

namespace {

absl::Status Bad(const std::string& field, const std::string& msg) {
  return absl::InvalidArgumentError(absl::StrCat("graph set: ", field, ": ", msg));
}

// Offsets: int64 [g + 1] (g = -1: any count), from 0, ascending, ending at `total` (-1: any).
absl::Status CheckOffsets(const Tensor& t, const std::string& field, int64_t g, int64_t total) {
  if (!t.defined() || t.dtype() != DType::kInt64 || t.rank() != 1 || t.numel() < 1 ||
      (g >= 0 && t.numel() != g + 1)) {
    return Bad(field,
               absl::StrCat("expected int64 [", g >= 0 ? absl::StrCat(g + 1) : "G + 1", "]"));
  }
  const int64_t* o = t.i64();
  if (o[0] != 0) return Bad(field, "does not start at 0");
  for (int64_t i = 1; i < t.numel(); ++i) {
    if (o[i] < o[i - 1]) return Bad(field, absl::StrCat("decreases at graph ", i - 1));
  }
  if (total >= 0 && o[t.numel() - 1] != total) {
    return Bad(field, absl::StrCat("ends at ", o[t.numel() - 1], ", expected ", total));
  }
  return absl::OkStatus();
}

// A per-row table: `rows` rows, rank 1 or 2, of one of the allowed dtypes.
absl::Status CheckRows(const Tensor& t, const std::string& field, int64_t rows, bool allow_int,
                       bool allow_float, int max_rank = 2) {
  if (!t.defined()) return absl::OkStatus();
  const bool type_ok =
      (allow_int && t.dtype() == DType::kInt64) || (allow_float && t.dtype() == DType::kFloat32);
  if (!type_ok || t.rank() < 1 || t.rank() > max_rank || t.dim(0) != rows) {
    return Bad(field,
               absl::StrCat("has type/shape ", t.ShapeString(), ", expected ", rows, " rows of ",
                            allow_int ? "int64" : "", allow_int && allow_float ? " or " : "",
                            allow_float ? "float" : ""));
  }
  return absl::OkStatus();
}

absl::Status CheckLabels(const Tensor& t, const std::string& field) {
  if (!t.defined() || t.dtype() != DType::kInt64) return absl::OkStatus();
  const int64_t* v = t.i64();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (v[i] < -1)
      return Bad(field, absl::StrCat("label ", v[i], " at row ", i / t.row_width(), " below -1"));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t GraphSet::GraphOfNode(int64_t v) const {
  const int64_t* o = node_offsets.i64();
  return std::upper_bound(o, o + node_offsets.numel(), v) - o - 1;
}

size_t GraphSet::Bytes() const {
  size_t b = 0;
  for (const Tensor* t : {&node_offsets, &edge_offsets, &edges, &entry_edges, &edge_feat,
                          &edge_labels, &graph_labels, &train, &valid, &test, &particle_offsets}) {
    if (t->defined()) b += t->nbytes();
  }
  for (const auto& [k, t] : node_info) b += t.nbytes();
  for (const auto& [k, t] : particles) b += t.nbytes();
  return b;
}

absl::Status BuildGraphSetGraph(Dataset* ds, const LoadOptions& options) {
  GraphSet& gs = *ds->graphs;
  FG_RETURN_IF_ERROR(CheckOffsets(gs.node_offsets, "node_offsets", -1, -1));
  const int64_t g_count = gs.num_graphs();
  FG_RETURN_IF_ERROR(CheckOffsets(gs.edge_offsets, "edge_offsets", g_count, -1));
  const int64_t m = gs.edge_offsets.i64()[g_count];
  const int64_t n = gs.node_offsets.i64()[g_count];
  if (!gs.edges.defined() || gs.edges.dtype() != DType::kInt64 || gs.edges.rank() != 2 ||
      gs.edges.dim(0) != m || gs.edges.dim(1) != 2) {
    return Bad("edges", absl::StrCat("expected int64 [", m, ", 2]"));
  }
  std::vector<int64_t> src(m), dst(m);
  const int64_t* e = gs.edges.i64();
  for (int64_t g = 0; g < g_count; ++g) {
    const int64_t lo = gs.NodeBegin(g), hi = gs.NodeEnd(g);
    for (int64_t k = gs.EdgeBegin(g); k < gs.EdgeEnd(g); ++k) {
      src[k] = e[2 * k];
      dst[k] = e[2 * k + 1];
      if (src[k] < lo || src[k] >= hi || dst[k] < lo || dst[k] >= hi) {
        return Bad("edges", absl::StrCat("edge ", k, " (", src[k], ", ", dst[k], ") leaves graph ",
                                         g, " (vertices [", lo, ", ", hi, "))"));
      }
    }
  }
  const CsrBuildOptions build = HomogeneousBuildOptions(options);
  HeteroGraph& graph = ds->graph;
  graph = HeteroGraph();
  graph.node_types = {"node"};
  graph.num_nodes = {n};
  Relation rel;
  rel.src_type = rel.dst_type = "node";
  rel.name = "edge";
  // Rows are destinations: entry id k < m is edge k itself (column = its source).
  FG_ASSIGN_OR_RETURN(rel.by_dst,
                      BuildCsr(n, n, dst.data(), src.data(), m, nullptr, build, &gs.entry_edges));
  if (build.add_reverse_edges) {
    rel.by_src = rel.by_dst;
    rel.symmetric = true;
  } else {
    FG_ASSIGN_OR_RETURN(rel.by_src, BuildCsr(n, n, src.data(), dst.data(), m, nullptr, build));
  }
  graph.relations.push_back(std::move(rel));
  return absl::OkStatus();
}

absl::Status ValidateGraphSet(const Dataset& ds) {
  if (!ds.graphs) return absl::OkStatus();
  const GraphSet& gs = *ds.graphs;
  const HeteroGraph& g = ds.graph;
  if (!g.IsHomogeneous()) return Bad("graph", "a graph set's union graph must be homogeneous");
  const int64_t n = g.num_nodes[0];
  FG_RETURN_IF_ERROR(CheckOffsets(gs.node_offsets, "node_offsets", -1, n));
  const int64_t count = gs.num_graphs();
  FG_RETURN_IF_ERROR(CheckOffsets(gs.edge_offsets, "edge_offsets", count, -1));
  const int64_t m = gs.edge_offsets.i64()[count];
  if (!gs.edges.defined() || gs.edges.dtype() != DType::kInt64 || gs.edges.rank() != 2 ||
      gs.edges.dim(0) != m || gs.edges.dim(1) != 2) {
    return Bad("edges", absl::StrCat("expected int64 [", m, ", 2]"));
  }
  const int64_t* e = gs.edges.i64();
  for (int64_t k = 0, gi = 0; k < m; ++k) {
    while (gs.EdgeEnd(gi) <= k) ++gi;
    for (int c = 0; c < 2; ++c) {
      if (e[2 * k + c] < gs.NodeBegin(gi) || e[2 * k + c] >= gs.NodeEnd(gi)) {
        return Bad("edges", absl::StrCat("edge ", k, " leaves graph ", gi));
      }
    }
  }
  const Csr& adj = ds.Adjacency();
  const Tensor& ids = gs.entry_edges;
  if (!ids.defined() || ids.dtype() != DType::kInt64 || ids.rank() != 1 ||
      ids.numel() != adj.nnz()) {
    return Bad("entry_edges", absl::StrCat("expected int64 [", adj.nnz(), "]"));
  }
  absl::Status entries = adj.VisitIndices([&](const auto* col) -> absl::Status {
    const int64_t* o = adj.row_ptr();
    for (int64_t r = 0; r < adj.num_rows; ++r) {
      for (int64_t x = o[r]; x < o[r + 1]; ++x) {
        const int64_t id = ids.i64()[x], c = col[x];
        bool ok;
        if (id == kAddedLoop) {
          ok = r == c;
        } else if (id >= 0 && id < m) {
          ok = e[2 * id] == c && e[2 * id + 1] == r;
        } else if (id >= m && id < 2 * m) {
          ok = e[2 * (id - m)] == r && e[2 * (id - m) + 1] == c;
        } else {
          ok = false;
        }
        if (!ok) {
          return Bad("entry_edges", absl::StrCat("entry ", x, " (", c, " -> ", r,
                                                 ") does not match edge id ", id));
        }
      }
    }
    return absl::OkStatus();
  });
  FG_RETURN_IF_ERROR(entries);
  FG_RETURN_IF_ERROR(CheckRows(gs.edge_feat, "edge_feat", m, false, true));
  if (gs.edge_feat.defined() && gs.edge_feat.rank() != 2)
    return Bad("edge_feat", "expected [M, f]");
  FG_RETURN_IF_ERROR(CheckRows(gs.edge_labels, "edge_labels", m, true, false));
  FG_RETURN_IF_ERROR(CheckLabels(gs.edge_labels, "edge_labels"));
  FG_RETURN_IF_ERROR(CheckRows(gs.graph_labels, "graph_labels", count, true, true));
  FG_RETURN_IF_ERROR(CheckLabels(gs.graph_labels, "graph_labels"));
  if (gs.num_edge_classes < 0 || gs.num_graph_classes < 0) return Bad("classes", "negative count");
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"train", &gs.train},
                                {"valid", &gs.valid},
                                {"test", &gs.test}}) {
    if (!t->defined()) continue;
    if (t->dtype() != DType::kInt64 || t->rank() != 1) return Bad(name, "expected int64 graph ids");
    for (int64_t i = 0; i < t->numel(); ++i) {
      if (t->i64()[i] < 0 || t->i64()[i] >= count) {
        return Bad(name, absl::StrCat("graph id ", t->i64()[i], " outside [0, ", count, ")"));
      }
    }
  }
  for (const auto* columns : {&gs.node_info, &gs.particles}) {
    for (const auto& [name, t] : *columns) {
      if (name.empty() || name.size() > kMaxColumnName ||
          name.find_first_of("\t\n\r") != std::string::npos) {
        return Bad("columns", absl::StrCat("bad column name '", name.substr(0, 80), "'"));
      }
    }
  }
  for (const auto& [name, t] : gs.node_info) {
    FG_RETURN_IF_ERROR(CheckRows(t, "node_info " + name, n, true, true, 1));
  }
  if (gs.particle_offsets.defined()) {
    FG_RETURN_IF_ERROR(CheckOffsets(gs.particle_offsets, "particle_offsets", count, -1));
  } else if (!gs.particles.empty()) {
    return Bad("particles", "columns without particle_offsets");
  }
  const int64_t p = gs.num_particles();
  for (const auto& [name, t] : gs.particles) {
    FG_RETURN_IF_ERROR(CheckRows(t, "particles " + name, p, true, true, 1));
  }
  if (auto it = gs.node_info.find(kHitParticle); it != gs.node_info.end()) {
    if (it->second.dtype() != DType::kInt64 || !gs.particle_offsets.defined()) {
      return Bad("node_info particle", "expected int64 rows of particles");
    }
    const int64_t* hp = it->second.i64();
    for (int64_t v = 0, gi = 0; v < n; ++v) {
      while (gs.NodeEnd(gi) <= v) ++gi;
      const int64_t q = hp[v];
      if (q != -1 &&
          (q < gs.particle_offsets.i64()[gi] || q >= gs.particle_offsets.i64()[gi + 1])) {
        return Bad("node_info particle",
                   absl::StrCat("vertex ", v, " names particle ", q, ", not one of graph ", gi));
      }
    }
  }
  return absl::OkStatus();
}

GraphSizeStats SizeStats(const GraphSet& gs) {
  GraphSizeStats s;
  s.graphs = gs.num_graphs();
  if (s.graphs == 0) return s;
  std::vector<int64_t> nodes(s.graphs), edges(s.graphs);
  for (int64_t g = 0; g < s.graphs; ++g) {
    nodes[g] = gs.NodeEnd(g) - gs.NodeBegin(g);
    edges[g] = gs.EdgeEnd(g) - gs.EdgeBegin(g);
  }
  s.mean_nodes = static_cast<double>(gs.NodeBegin(s.graphs)) / s.graphs;
  s.mean_edges = static_cast<double>(gs.EdgeBegin(s.graphs)) / s.graphs;
  std::sort(nodes.begin(), nodes.end());
  std::sort(edges.begin(), edges.end());
  s.min_nodes = nodes.front();
  s.max_nodes = nodes.back();
  s.median_nodes = nodes[s.graphs / 2];
  s.min_edges = edges.front();
  s.max_edges = edges.back();
  s.median_edges = edges[s.graphs / 2];
  return s;
}

}  // namespace fg::graph
