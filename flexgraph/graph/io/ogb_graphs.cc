// The OGB graph-property layout (many graphs): reading into and writing from Dataset::graphs.
// The layout is described in ogb.h.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/graph_set.h"
#include "flexgraph/graph/io/csv.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/ogb_internal.h"

namespace fg::graph::io::ogb_internal {

namespace {

constexpr char kNodesRel[] = "raw/num-node-list.csv";
constexpr char kEdgesRel[] = "raw/num-edge-list.csv";

// Graph labels: integers (and nan) become int64 classes (nan = -1); anything else stays float.
absl::StatusOr<Tensor> ReadGraphLabels(const Ctx& ctx, int64_t graphs, int64_t* num_classes) {
  *num_classes = 0;
  FG_ASSIGN_OR_RETURN(Tensor t, ReadRows(ctx, "raw/graph-label.csv", graphs, kNodesRel, "graphs"));
  if (!t.defined()) return t;
  const float* v = t.f32();
  const bool integral = std::all_of(v, v + t.numel(), [](float x) {
    return std::isnan(x) || (x == std::floor(x) && x >= -1 && x < 16777216.0f);
  });
  if (t.dim(1) == 1) t = t.Reshape({graphs});
  if (!integral) return t;
  Tensor labels = Tensor::Empty(t.shape(), DType::kInt64);
  for (int64_t i = 0; i < t.numel(); ++i) {
    labels.i64()[i] = std::isnan(v[i]) ? -1 : static_cast<int64_t>(v[i]);
  }
  *num_classes = NumClasses(labels);
  return labels;
}

}  // namespace

bool IsGraphSetLayout(const Ctx& ctx, const std::vector<int64_t>& node_counts) {
  return node_counts.size() > 1 || ctx.Has("raw/graph-label.csv") || ctx.Has("raw/edge-label.csv");
}

absl::StatusOr<Dataset> LoadGraphSet(const Ctx& ctx, const LoadOptions& options,
                                     const std::vector<int64_t>& node_counts,
                                     const std::vector<int64_t>& edge_counts) {
  Dataset ds;
  GraphSet& gs = ds.graphs.emplace();
  const int64_t count = static_cast<int64_t>(node_counts.size());
  std::vector<int64_t> node_off(count + 1, 0), edge_off(count + 1, 0);
  for (int64_t g = 0; g < count; ++g) {
    node_off[g + 1] = node_off[g] + node_counts[g];
    edge_off[g + 1] = edge_off[g] + edge_counts[g];
    if (node_off[g + 1] < node_off[g] || edge_off[g + 1] < edge_off[g]) {
      return absl::InvalidArgumentError(
          absl::StrCat(ctx.Path(kNodesRel), ":", g + 1, ": counts overflow at graph ", g));
    }
  }
  const int64_t n = node_off[count], m = edge_off[count];
  const int64_t max_nodes = *std::max_element(node_counts.begin(), node_counts.end());
  // Per-graph files first: their row counts check the counts before large arrays are allocated.
  FG_ASSIGN_OR_RETURN(gs.graph_labels, ReadGraphLabels(ctx, count, &gs.num_graph_classes));
  FG_ASSIGN_OR_RETURN(Tensor feat, ReadRows(ctx, "raw/node-feat.csv", n, kNodesRel, "nodes"));
  FG_ASSIGN_OR_RETURN(Tensor labels, ReadLabels(ctx, "raw/node-label.csv", n, kNodesRel));
  CsvOptions eo = ctx.Options(2);
  eo.bounds = {{0, max_nodes, "node id"}};
  eo.allow_empty = m == 0;
  const std::string edge_path = ctx.Path("raw/edge.csv");
  FG_ASSIGN_OR_RETURN(CsvTable edges, ReadCsv(edge_path, CsvType::kInt64, eo));
  if (edges.rows != m) return CountMismatch(edge_path, edges.rows, ctx.Path(kEdgesRel), m, "edges");
  // Local ids -> union ids, each checked against its own graph's node count.
  int64_t* e = edges.values.i64();
  for (int64_t g = 0; g < count; ++g) {
    for (int64_t k = edge_off[g]; k < edge_off[g + 1]; ++k) {
      for (int c = 0; c < 2; ++c) {
        if (e[2 * k + c] >= node_counts[g]) {
          return absl::InvalidArgumentError(absl::StrCat(
              edge_path, ":", k + 1, ": node id ", e[2 * k + c], " out of range [0, ",
              node_counts[g], ") of graph ", g, " (", ctx.Path(kNodesRel), ":", g + 1, ")"));
        }
        e[2 * k + c] += node_off[g];
      }
    }
  }
  gs.node_offsets = Tensor::FromVector(node_off);
  gs.edge_offsets = Tensor::FromVector(edge_off);
  gs.edges = edges.values.Reshape({m, 2});
  FG_ASSIGN_OR_RETURN(gs.edge_feat, ReadRows(ctx, "raw/edge-feat.csv", m, kEdgesRel, "edges"));
  FG_ASSIGN_OR_RETURN(gs.edge_labels, ReadLabels(ctx, "raw/edge-label.csv", m, kEdgesRel, "edges"));
  if (gs.edge_labels.defined()) gs.num_edge_classes = NumClasses(gs.edge_labels);
  FG_RETURN_IF_ERROR(BuildGraphSetGraph(&ds, options));
  if (feat.defined()) ds.features["node"] = feat;
  if (labels.defined()) {
    ds.labels["node"] = labels;
    ds.num_classes["node"] = NumClasses(labels);
  }
  FG_ASSIGN_OR_RETURN(ds.split_name, ChooseSplit(ctx.dir, options.split));
  if (!ds.split_name.empty()) {
    const std::string sd = JoinPath("split", ds.split_name);
    Tensor* parts[] = {&gs.train, &gs.valid, &gs.test};
    for (int i = 0; i < 3; ++i) {
      FG_ASSIGN_OR_RETURN(*parts[i],
                          ReadSplitFile(ctx, JoinPath(sd, std::string(kParts[i]) + ".csv"),
                                        {{0, count, "graph id"}}, 1, i == 0));
    }
  }
  return ds;
}

absl::Status WriteGraphSet(const Dataset& ds, const std::string& dir) {
  const GraphSet& gs = *ds.graphs;
  FG_RETURN_IF_ERROR(ValidateGraphSet(ds));
  const std::string raw = JoinPath(dir, "raw");
  FG_RETURN_IF_ERROR(MakeDirectories(raw));
  const int64_t count = gs.num_graphs(), m = gs.num_edges();
  std::vector<int64_t> nodes(count), edge_counts(count), local(2 * m);
  for (int64_t g = 0; g < count; ++g) {
    nodes[g] = gs.NodeEnd(g) - gs.NodeBegin(g);
    edge_counts[g] = gs.EdgeEnd(g) - gs.EdgeBegin(g);
    for (int64_t k = gs.EdgeBegin(g); k < gs.EdgeEnd(g); ++k) {
      local[2 * k] = gs.edges.i64()[2 * k] - gs.NodeBegin(g);
      local[2 * k + 1] = gs.edges.i64()[2 * k + 1] - gs.NodeBegin(g);
    }
  }
  FG_RETURN_IF_ERROR(WriteCsv(JoinPath(raw, "num-node-list.csv.gz"), Tensor::FromVector(nodes)));
  FG_RETURN_IF_ERROR(
      WriteCsv(JoinPath(raw, "num-edge-list.csv.gz"), Tensor::FromVector(edge_counts)));
  FG_RETURN_IF_ERROR(WriteCsv(JoinPath(raw, "edge.csv.gz"), Tensor::FromVector(local, {m, 2})));
  const std::pair<const char*, const Tensor*> tables[] = {{"edge-feat", &gs.edge_feat},
                                                          {"edge-label", &gs.edge_labels},
                                                          {"graph-label", &gs.graph_labels}};
  for (const auto& [file, t] : tables) {
    if (t->defined())
      FG_RETURN_IF_ERROR(WriteCsv(JoinPath(raw, std::string(file) + ".csv.gz"), *t));
  }
  if (auto it = ds.features.find("node"); it != ds.features.end()) {
    FG_RETURN_IF_ERROR(WriteCsv(JoinPath(raw, "node-feat.csv.gz"), it->second));
  }
  if (auto it = ds.labels.find("node"); it != ds.labels.end()) {
    FG_RETURN_IF_ERROR(WriteCsv(JoinPath(raw, "node-label.csv.gz"), it->second));
  }
  if (gs.train.defined()) {
    const std::string split_dir =
        JoinPath(JoinPath(dir, "split"), ds.split_name.empty() ? "default" : ds.split_name);
    FG_RETURN_IF_ERROR(WriteSplit(split_dir, gs.train, gs.valid, gs.test));
  }
  return absl::OkStatus();
}

}  // namespace fg::graph::io::ogb_internal
