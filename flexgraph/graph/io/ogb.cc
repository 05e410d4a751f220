#include "flexgraph/graph/io/ogb.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/builder.h"
#include "flexgraph/graph/io/csv.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/ogb_internal.h"

namespace fg::graph::io {

namespace ogb_internal {

// A one-column file of non-negative counts.
absl::StatusOr<std::vector<int64_t>> ReadCounts(const Ctx& ctx, const std::string& rel,
                                                const std::string& what) {
  CsvOptions o = ctx.Options(1);
  o.bounds = {{0, kNoLimit, what}};
  FG_ASSIGN_OR_RETURN(CsvTable t, ReadCsv(ctx.Path(rel), CsvType::kInt64, o));
  return std::vector<int64_t>(t.values.i64(), t.values.i64() + t.rows);
}

absl::Status CountMismatch(const std::string& file, int64_t rows, const std::string& count_file,
                           int64_t expected, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": has ", rows, " rows but ", count_file,
                                                 ":1 says ", expected, " ", what));
}

// Optional float matrix with exactly `n` rows.
absl::StatusOr<Tensor> ReadRows(const Ctx& ctx, const std::string& rel, int64_t n,
                                const std::string& count_rel, const std::string& what) {
  if (!ctx.Has(rel)) return Tensor();
  FG_ASSIGN_OR_RETURN(CsvTable t, ReadCsv(ctx.Path(rel), CsvType::kFloat32, ctx.Options(-1)));
  if (t.rows != n) return CountMismatch(ctx.Path(rel), t.rows, ctx.Path(count_rel), n, what);
  return t.values;
}

// Optional labels (int64, "nan" = -1 = unlabeled); [n] for one column, [n, k] for k tasks.
absl::StatusOr<Tensor> ReadLabels(const Ctx& ctx, const std::string& rel, int64_t n,
                                  const std::string& count_rel, const std::string& what) {
  if (!ctx.Has(rel)) return Tensor();
  CsvOptions o = ctx.Options(-1);
  o.nan_as_minus_one = true;
  o.bounds = {{-1, kNoLimit, "label"}};
  FG_ASSIGN_OR_RETURN(CsvTable t, ReadCsv(ctx.Path(rel), CsvType::kInt64, o));
  if (t.rows != n) return CountMismatch(ctx.Path(rel), t.rows, ctx.Path(count_rel), n, what);
  return t.cols == 1 ? t.values.Reshape({n}) : t.values;
}

int64_t NumClasses(const Tensor& labels) {
  int64_t mx = -1;
  const int64_t* l = labels.i64();
  for (int64_t i = 0; i < labels.numel(); ++i) mx = std::max(mx, l[i]);
  return labels.rank() == 2 ? labels.dim(1) : mx + 1;
}

// Reads one split file: node ids (1 column) or (src, dst) pairs (2 columns).
absl::StatusOr<Tensor> ReadSplitFile(const Ctx& ctx, const std::string& rel,
                                     std::vector<ColumnBounds> bounds, int64_t columns,
                                     bool required) {
  if (!ctx.Has(rel)) {
    if (required) return absl::NotFoundError(absl::StrCat(ctx.Path(rel), ": file not found"));
    return Tensor::Empty(columns == 2 ? Shape{0, 2} : Shape{0}, DType::kInt64);
  }
  CsvOptions o = ctx.Options(columns);
  o.bounds = std::move(bounds);
  o.allow_empty = true;
  FG_ASSIGN_OR_RETURN(CsvTable t, ReadCsv(ctx.Path(rel), CsvType::kInt64, o));
  return columns == 1 ? t.values.Reshape({t.rows}) : t.values;
}

absl::Status ReadNodeSplit(const Ctx& ctx, const std::string& rel_dir, int64_t n, Split* split) {
  Tensor* parts[] = {&split->train, &split->valid, &split->test};
  for (int i = 0; i < 3; ++i) {
    FG_ASSIGN_OR_RETURN(*parts[i], ReadSplitFile(ctx, JoinPath(rel_dir, std::string(kParts[i]) + ".csv"),
                                                 {{0, n, "node id"}}, 1, i == 0));
  }
  return absl::OkStatus();
}

absl::Status ReadEdgeSplit(const Ctx& ctx, const std::string& rel_dir, int64_t n_src,
                           int64_t n_dst, EdgeSplit* split) {
  Tensor* parts[] = {&split->train, &split->valid, &split->test};
  for (int i = 0; i < 3; ++i) {
    FG_ASSIGN_OR_RETURN(
        *parts[i], ReadSplitFile(ctx, JoinPath(rel_dir, std::string(kParts[i]) + ".csv"),
                                 {{0, n_src, "source node id"}, {0, n_dst, "destination node id"}},
                                 2, i == 0));
  }
  return absl::OkStatus();
}

// The split directory name: the requested one, or the first (alphabetically) under split/.
absl::StatusOr<std::string> ChooseSplit(const std::string& dir, const std::string& requested) {
  const std::string split_dir = JoinPath(dir, "split");
  std::vector<std::string> names;
  for (const std::string& s : ListDirectory(split_dir)) {
    if (IsDirectory(JoinPath(split_dir, s))) names.push_back(s);
  }
  if (!requested.empty()) {
    if (std::find(names.begin(), names.end(), requested) == names.end()) {
      return absl::NotFoundError(absl::StrCat(JoinPath(split_dir, requested), ": split not found",
                                              names.empty() ? "" : " (available: ",
                                              absl::StrJoin(names, ", "), names.empty() ? "" : ")"));
    }
    return requested;
  }
  if (names.size() > 1) {
    FG_LOG(Info) << dir << ": several splits (" << absl::StrJoin(names, ", ") << "), using "
                 << names[0];
  }
  return names.empty() ? std::string() : names[0];
}

std::vector<int64_t> Column(const Tensor& t, int c) {
  const int64_t rows = t.dim(0), cols = t.dim(1);
  std::vector<int64_t> out(rows);
  const int64_t* v = t.i64();
  ParallelFor(0, rows, [&](int64_t r) { out[r] = v[r * cols + c]; });
  return out;
}

std::string BaseName(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

absl::Status WriteSplit(const std::string& dir, const Tensor& train, const Tensor& valid,
                        const Tensor& test) {
  FG_RETURN_IF_ERROR(MakeDirectories(dir));
  const Tensor* parts[] = {&train, &valid, &test};
  for (int i = 0; i < 3; ++i) {
    if (!parts[i]->defined()) continue;
    FG_RETURN_IF_ERROR(WriteCsv(JoinPath(dir, std::string(kParts[i]) + ".csv.gz"), *parts[i]));
  }
  return absl::OkStatus();
}

Tensor Scalar64(int64_t v) { return Tensor::FromVector(std::vector<int64_t>{v}); }

}  // namespace ogb_internal

namespace {

using namespace ogb_internal;  // NOLINT: this file's own helpers

absl::StatusOr<Dataset> LoadHomogeneous(const Ctx& ctx, const LoadOptions& options) {
  Dataset ds;
  const std::string nodes_rel = "raw/num-node-list.csv", edges_rel = "raw/num-edge-list.csv";
  FG_ASSIGN_OR_RETURN(std::vector<int64_t> node_counts, ReadCounts(ctx, nodes_rel, "node count"));
  FG_ASSIGN_OR_RETURN(std::vector<int64_t> edge_counts, ReadCounts(ctx, edges_rel, "edge count"));
  if (node_counts.size() != edge_counts.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        ctx.Path(nodes_rel), ": lists ", node_counts.size(), " graphs but ", ctx.Path(edges_rel),
        " lists ", edge_counts.size()));
  }
  if (IsGraphSetLayout(ctx, node_counts)) return LoadGraphSet(ctx, options, node_counts, edge_counts);
  const int64_t n = std::accumulate(node_counts.begin(), node_counts.end(), int64_t{0});
  const int64_t m = std::accumulate(edge_counts.begin(), edge_counts.end(), int64_t{0});
  const int64_t max_nodes = *std::max_element(node_counts.begin(), node_counts.end());
  CsvOptions eo = ctx.Options(2);
  eo.bounds = {{0, max_nodes, "node id"}};
  eo.allow_empty = m == 0;
  const std::string edge_path = ctx.Path("raw/edge.csv");
  FG_ASSIGN_OR_RETURN(CsvTable edges, ReadCsv(edge_path, CsvType::kInt64, eo));
  if (edges.rows != m) return CountMismatch(edge_path, edges.rows, ctx.Path(edges_rel), m, "edges");
  std::vector<int64_t> src = Column(edges.values, 0), dst = Column(edges.values, 1);
  FG_ASSIGN_OR_RETURN(Tensor edge_feat, ReadRows(ctx, "raw/edge-feat.csv", m, edges_rel, "edges"));
  // Per-node files first: their row counts check the node count before the graph's arrays of
  // that size are allocated.
  FG_ASSIGN_OR_RETURN(Tensor feat, ReadRows(ctx, "raw/node-feat.csv", n, nodes_rel, "nodes"));
  FG_ASSIGN_OR_RETURN(Tensor labels, ReadLabels(ctx, "raw/node-label.csv", n, nodes_rel));
  FG_ASSIGN_OR_RETURN(ds.graph, BuildHomogeneousGraph(n, src.data(), dst.data(), m, edge_feat,
                                                      HomogeneousBuildOptions(options)));
  if (feat.defined()) ds.features["node"] = feat;
  if (labels.defined()) {
    ds.labels["node"] = labels;
    ds.num_classes["node"] = NumClasses(labels);
  }
  FG_ASSIGN_OR_RETURN(ds.split_name, ChooseSplit(ctx.dir, options.split));
  if (!ds.split_name.empty()) {
    const std::string sd = JoinPath("split", ds.split_name);
    const std::string key = ds.graph.relations[0].Key();
    if (ctx.Has(JoinPath(sd, "train.csv"))) {
      // One column: node split; two: link-prediction split.
      CsvOptions probe = ctx.Options(-1);
      probe.max_columns = 2;
      probe.bounds = {{0, n, "node id"}};
      probe.allow_empty = true;
      FG_ASSIGN_OR_RETURN(CsvTable train,
                          ReadCsv(ctx.Path(JoinPath(sd, "train.csv")), CsvType::kInt64, probe));
      if (train.cols == 2) {
        FG_RETURN_IF_ERROR(ReadEdgeSplit(ctx, sd, n, n, &ds.edge_splits[key]));
      } else {
        FG_RETURN_IF_ERROR(ReadNodeSplit(ctx, sd, n, &ds.splits["node"]));
      }
    }
    if (IsDirectory(JoinPath(ctx.dir, JoinPath(sd, key)))) {
      FG_RETURN_IF_ERROR(ReadEdgeSplit(ctx, JoinPath(sd, key), n, n, &ds.edge_splits[key]));
    }
    if (ds.splits.empty() && ds.edge_splits.empty()) {
      return absl::NotFoundError(
          absl::StrCat(ctx.Path(JoinPath(sd, "train.csv")), ": file not found"));
    }
  }
  return ds;
}

absl::StatusOr<Dataset> LoadHeterogeneous(const Ctx& ctx, const LoadOptions& options) {
  Dataset ds;
  const std::string dict_rel = "raw/num-node-dict.csv";
  const std::string dict_path = ctx.Path(dict_rel);
  FG_ASSIGN_OR_RETURN(std::string dict_text, ReadFileToString(dict_path));
  std::vector<int64_t> lines;
  auto rows = SplitCsvText(dict_text, &lines);
  if (rows.empty()) return absl::InvalidArgumentError(absl::StrCat(dict_path, ":1: empty file"));
  if (rows.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        dict_path, ":", rows.size() < 2 ? lines[0] : lines[2], ": expected a header row of node ",
        "types and one row of counts, found ", rows.size(), " rows"));
  }
  if (rows[1].size() != rows[0].size()) {
    return absl::InvalidArgumentError(absl::StrCat(dict_path, ":", lines[1], ": expected ",
                                                   rows[0].size(), " columns, found ",
                                                   rows[1].size()));
  }
  for (size_t i = 0; i < rows[0].size(); ++i) {
    int64_t count;
    if (rows[0][i].empty() || rows[0][i].find("___") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(dict_path, ":", lines[0], ": column ", i + 1,
                                                     ": bad node type name '", rows[0][i], "'"));
    }
    if (!absl::SimpleAtoi(rows[1][i], &count) || count < 0 || count > INT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(dict_path, ":", lines[1], ": column ", i + 1,
                                                     ": bad node count '", rows[1][i], "'"));
    }
    if (ds.graph.TypeIndex(rows[0][i]) >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(dict_path, ":", lines[0],
                                                     ": duplicate node type '", rows[0][i], "'"));
    }
    ds.graph.node_types.push_back(rows[0][i]);
    ds.graph.num_nodes.push_back(count);
  }
  const std::string triplet_path = ctx.Path("raw/triplet-type-list.csv");
  FG_ASSIGN_OR_RETURN(std::string triplet_text, ReadFileToString(triplet_path));
  lines.clear();
  auto triplets = SplitCsvText(triplet_text, &lines);
  if (triplets.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(triplet_path, ":1: empty file"));
  }
  for (size_t t = 0; t < triplets.size(); ++t) {
    const auto& tr = triplets[t];
    if (tr.size() != 3) {
      return absl::InvalidArgumentError(absl::StrCat(triplet_path, ":", lines[t],
                                                     ": expected 3 columns, found ", tr.size()));
    }
    for (int k : {0, 2}) {
      if (ds.graph.TypeIndex(tr[k]) < 0) {
        return absl::InvalidArgumentError(absl::StrCat(triplet_path, ":", lines[t], ": column ",
                                                       k + 1, ": unknown node type '", tr[k],
                                                       "' (not in ", dict_path, ")"));
      }
    }
    const int64_t n_src = ds.graph.NumNodes(tr[0]), n_dst = ds.graph.NumNodes(tr[2]);
    const std::string key = tr[0] + "___" + tr[1] + "___" + tr[2];
    const std::string rd = JoinPath("raw/relations", key);
    const std::string count_rel = JoinPath(rd, "num-edge-list.csv");
    FG_ASSIGN_OR_RETURN(std::vector<int64_t> counts, ReadCounts(ctx, count_rel, "edge count"));
    const int64_t m = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    CsvOptions eo = ctx.Options(2);
    eo.bounds = {{0, n_src, tr[0] + " id"}, {0, n_dst, tr[2] + " id"}};
    eo.allow_empty = m == 0;
    const std::string edge_path = ctx.Path(JoinPath(rd, "edge.csv"));
    FG_ASSIGN_OR_RETURN(CsvTable edges, ReadCsv(edge_path, CsvType::kInt64, eo));
    if (edges.rows != m) return CountMismatch(edge_path, edges.rows, ctx.Path(count_rel), m, "edges");
    FG_ASSIGN_OR_RETURN(Tensor edge_feat, ReadRows(ctx, JoinPath(rd, "edge-feat.csv"), m, count_rel,
                                                   "edges"));
    std::vector<int64_t> src = Column(edges.values, 0), dst = Column(edges.values, 1);
    CsrBuildOptions bo;
    bo.deduplicate = false;
    FG_ASSIGN_OR_RETURN(Relation rel, BuildRelation(tr[0], tr[1], tr[2], n_src, n_dst, src.data(),
                                                    dst.data(), m, nullptr, edge_feat, bo));
    if (ds.graph.FindRelation(key) != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(triplet_path, ":", lines[t], ": duplicate relation ", key));
    }
    ds.graph.relations.push_back(std::move(rel));
  }
  for (size_t t = 0; t < ds.graph.node_types.size(); ++t) {
    const std::string& type = ds.graph.node_types[t];
    const int64_t n = ds.graph.num_nodes[t];
    FG_ASSIGN_OR_RETURN(Tensor feat, ReadRows(ctx, "raw/node-feat/" + type + "/node-feat.csv", n,
                                              dict_rel, type + " nodes"));
    if (feat.defined()) ds.features[type] = feat;
    FG_ASSIGN_OR_RETURN(Tensor labels,
                        ReadLabels(ctx, "raw/node-label/" + type + "/node-label.csv", n, dict_rel));
    if (labels.defined()) {
      ds.labels[type] = labels;
      ds.num_classes[type] = NumClasses(labels);
    }
  }
  FG_ASSIGN_OR_RETURN(ds.split_name, ChooseSplit(ctx.dir, options.split));
  if (!ds.split_name.empty()) {
    const std::string sd = JoinPath("split", ds.split_name);
    for (const std::string& sub : ListDirectory(JoinPath(ctx.dir, sd))) {
      const std::string rel_dir = JoinPath(sd, sub);
      if (!IsDirectory(JoinPath(ctx.dir, rel_dir))) continue;
      if (ds.graph.TypeIndex(sub) >= 0) {
        FG_RETURN_IF_ERROR(ReadNodeSplit(ctx, rel_dir, ds.graph.NumNodes(sub), &ds.splits[sub]));
      } else if (const Relation* r = ds.graph.FindRelation(sub); r != nullptr && sub == r->Key()) {
        FG_RETURN_IF_ERROR(ReadEdgeSplit(ctx, rel_dir, ds.graph.NumNodes(r->src_type),
                                         ds.graph.NumNodes(r->dst_type), &ds.edge_splits[sub]));
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            JoinPath(ctx.dir, rel_dir), ": neither a node type nor a relation of the dataset"));
      }
    }
  }
  return ds;
}

// Writes edges of a relation: by_src entries, each undirected edge once when symmetric.
Tensor EdgeTable(const Relation& r, Tensor* edge_feat) {
  const Csr& c = r.by_src;
  std::vector<int64_t> pairs;
  std::vector<int64_t> entries;
  pairs.reserve(c.nnz() * 2);
  c.VisitIndices([&](const auto* col) {
    for (int64_t u = 0; u < c.num_rows; ++u) {
      for (int64_t e = c.row_ptr()[u]; e < c.row_ptr()[u + 1]; ++e) {
        const int64_t v = col[e];
        if (r.symmetric && v < u) continue;
        pairs.push_back(u);
        pairs.push_back(v);
        entries.push_back(e);
      }
    }
  });
  const int64_t m = static_cast<int64_t>(entries.size());
  if (r.edge_feat.defined() && edge_feat != nullptr) {
    const int64_t f = r.edge_feat.row_width();
    *edge_feat = Tensor::Empty({m, f});
    for (int64_t k = 0; k < m; ++k) {
      std::copy_n(r.edge_feat.f32() + entries[k] * f, f, edge_feat->f32() + k * f);
    }
  }
  return Tensor::FromVector(pairs, {m, 2});
}


}  // namespace

bool IsOgbDirectory(const std::string& dir) {
  for (const char* f : {"raw/num-node-list.csv", "raw/num-node-dict.csv"}) {
    if (PathExists(ResolveCompressed(JoinPath(dir, f)))) return true;
  }
  return false;
}

absl::StatusOr<Dataset> LoadOgb(const std::string& dir, const LoadOptions& options) {
  Ctx ctx{dir, options.threads};
  if (!IsDirectory(dir)) return absl::NotFoundError(absl::StrCat(dir, ": directory not found"));
  absl::StatusOr<Dataset> ds;
  if (ctx.Has("raw/num-node-dict.csv")) {
    ds = LoadHeterogeneous(ctx, options);
  } else if (ctx.Has("raw/num-node-list.csv")) {
    ds = LoadHomogeneous(ctx, options);
  } else {
    return absl::NotFoundError(absl::StrCat(
        dir, ": not an OGB raw dataset (", ctx.Path("raw/num-node-list.csv"), " and ",
        ctx.Path("raw/num-node-dict.csv"), " not found)"));
  }
  if (ds.ok()) ds->name = BaseName(dir);
  return ds;
}

absl::Status WriteOgb(const Dataset& ds, const std::string& dir) {
  const std::string raw = JoinPath(dir, "raw");
  FG_RETURN_IF_ERROR(MakeDirectories(raw));
  if (ds.graphs) return WriteGraphSet(ds, dir);
  const HeteroGraph& g = ds.graph;
  const bool homogeneous = g.IsHomogeneous() && g.node_types[0] == "node";
  auto write_split_dirs = [&](const std::string& base, bool homog) -> absl::Status {
    for (const auto& [type, s] : ds.splits) {
      FG_RETURN_IF_ERROR(WriteSplit(homog ? base : JoinPath(base, type), s.train, s.valid, s.test));
    }
    for (const auto& [key, s] : ds.edge_splits) {
      const bool flat = homog && ds.splits.empty();
      FG_RETURN_IF_ERROR(WriteSplit(flat ? base : JoinPath(base, key), s.train, s.valid, s.test));
    }
    return absl::OkStatus();
  };
  const std::string split_dir =
      JoinPath(JoinPath(dir, "split"), ds.split_name.empty() ? "default" : ds.split_name);
  if (homogeneous) {
    const Relation& r = g.relations[0];
    Tensor edge_feat;
    Tensor edges = EdgeTable(r, &edge_feat);
    FG_RETURN_IF_ERROR(WriteCsv(JoinPath(raw, "num-node-list.csv.gz"), Scalar64(g.num_nodes[0])));
    FG_RETURN_IF_ERROR(WriteCsv(JoinPath(raw, "num-edge-list.csv.gz"), Scalar64(edges.dim(0))));
    FG_RETURN_IF_ERROR(WriteCsv(JoinPath(raw, "edge.csv.gz"), edges));
    if (edge_feat.defined()) FG_RETURN_IF_ERROR(WriteCsv(JoinPath(raw, "edge-feat.csv.gz"), edge_feat));
    if (auto it = ds.features.find("node"); it != ds.features.end()) {
      FG_RETURN_IF_ERROR(WriteCsv(JoinPath(raw, "node-feat.csv.gz"), it->second));
    }
    if (auto it = ds.labels.find("node"); it != ds.labels.end()) {
      FG_RETURN_IF_ERROR(WriteCsv(JoinPath(raw, "node-label.csv.gz"), it->second));
    }
    if (!ds.splits.empty() || !ds.edge_splits.empty()) {
      FG_RETURN_IF_ERROR(write_split_dirs(split_dir, true));
    }
    return absl::OkStatus();
  }
  std::string dict = absl::StrCat(absl::StrJoin(g.node_types, ","), "\n",
                                  absl::StrJoin(g.num_nodes, ","), "\n");
  FG_RETURN_IF_ERROR(WriteGzipFile(JoinPath(raw, "num-node-dict.csv.gz"), dict));
  std::string triplets;
  for (const Relation& r : g.relations) {
    absl::StrAppend(&triplets, r.src_type, ",", r.name, ",", r.dst_type, "\n");
    const std::string rd = JoinPath(JoinPath(raw, "relations"), r.Key());
    FG_RETURN_IF_ERROR(MakeDirectories(rd));
    Tensor edge_feat;
    Tensor edges = EdgeTable(r, &edge_feat);
    FG_RETURN_IF_ERROR(WriteCsv(JoinPath(rd, "num-edge-list.csv.gz"), Scalar64(edges.dim(0))));
    FG_RETURN_IF_ERROR(WriteCsv(JoinPath(rd, "edge.csv.gz"), edges));
    if (edge_feat.defined()) FG_RETURN_IF_ERROR(WriteCsv(JoinPath(rd, "edge-feat.csv.gz"), edge_feat));
  }
  FG_RETURN_IF_ERROR(WriteGzipFile(JoinPath(raw, "triplet-type-list.csv.gz"), triplets));
  for (const auto& [type, feat] : ds.features) {
    const std::string d = JoinPath(JoinPath(raw, "node-feat"), type);
    FG_RETURN_IF_ERROR(MakeDirectories(d));
    FG_RETURN_IF_ERROR(WriteCsv(JoinPath(d, "node-feat.csv.gz"), feat));
  }
  for (const auto& [type, labels] : ds.labels) {
    const std::string d = JoinPath(JoinPath(raw, "node-label"), type);
    FG_RETURN_IF_ERROR(MakeDirectories(d));
    FG_RETURN_IF_ERROR(WriteCsv(JoinPath(d, "node-label.csv.gz"), labels));
  }
  if (!ds.splits.empty() || !ds.edge_splits.empty()) {
    FG_RETURN_IF_ERROR(write_split_dirs(split_dir, false));
  }
  return absl::OkStatus();
}

}  // namespace fg::graph::io
