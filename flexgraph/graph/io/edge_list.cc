#include "flexgraph/graph/io/edge_list.h"

#include <algorithm>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/builder.h"
#include "flexgraph/graph/io/csv.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/npy.h"

namespace fg::graph::io {

namespace {

std::string StemOf(const std::string& path) {
  std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  for (const char* ext : {".gz", ".txt", ".tsv", ".csv", ".edges", ".el"}) {
    const std::string e = ext;
    if (base.size() > e.size() && base.compare(base.size() - e.size(), e.size(), e) == 0) {
      base.resize(base.size() - e.size());
    }
  }
  return base;
}

// Value of "key": <int or "string"> in a small JSON object (meta.json).
std::string JsonValue(const std::string& json, const std::string& key) {
  size_t p = json.find("\"" + key + "\"");
  if (p == std::string::npos) return "";
  p = json.find(':', p);
  if (p == std::string::npos) return "";
  ++p;
  while (p < json.size() && json[p] == ' ') ++p;
  if (p < json.size() && json[p] == '"') {
    const size_t e = json.find('"', p + 1);
    return e == std::string::npos ? "" : json.substr(p + 1, e - p - 1);
  }
  size_t e = p;
  while (e < json.size() && json[e] != ',' && json[e] != '}' && json[e] != '\n') ++e;
  return json.substr(p, e - p);
}

absl::Status Expect(const Tensor& t, const std::string& path, DType dtype, int rank) {
  if (t.dtype() != dtype || t.rank() != rank) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a rank-", rank, " ",
                                                   DTypeName(dtype), " array, found ",
                                                   DTypeName(t.dtype()), " ", t.ShapeString()));
  }
  return absl::OkStatus();
}

absl::Status CheckIds(const Tensor& ids, int64_t n, const std::string& path) {
  for (int64_t i = 0; i < ids.numel(); ++i) {
    if (ids.i64()[i] < 0 || ids.i64()[i] >= n) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": entry ", i, ": node id ", ids.i64()[i],
                                                     " out of range [0, ", n, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Dataset> LoadEdgeList(const std::string& path, const LoadOptions& options) {
  CsvOptions o;
  o.whitespace = true;
  o.comment = '#';
  o.min_columns = 2;
  o.max_columns = 3;
  o.bounds = {{0, INT32_MAX, "node id"}};
  o.threads = options.threads;
  FG_ASSIGN_OR_RETURN(CsvTable t, ReadCsv(path, CsvType::kInt64, o));
  const int64_t m = t.rows, cols = t.cols;
  std::vector<int64_t> src(m), dst(m);
  const int64_t* v = t.values.i64();
  ParallelFor(0, m, [&](int64_t k) {
    src[k] = v[k * cols];
    dst[k] = v[k * cols + 1];
  });
  int64_t n = 0;
  for (int64_t k = 0; k < m; ++k) n = std::max({n, src[k] + 1, dst[k] + 1});
  Dataset ds;
  ds.name = StemOf(path);
  FG_ASSIGN_OR_RETURN(ds.graph, BuildHomogeneousGraph(n, src.data(), dst.data(), m, Tensor(),
                                                      HomogeneousBuildOptions(options)));
  return ds;
}

bool IsNpyDirectory(const std::string& dir) { return PathExists(JoinPath(dir, "indptr.npy")); }

absl::StatusOr<Dataset> LoadNpyDirectory(const std::string& dir) {
  const std::string ip = JoinPath(dir, "indptr.npy"), ix = JoinPath(dir, "indices.npy");
  FG_ASSIGN_OR_RETURN(Tensor indptr, ReadNpy(ip));
  FG_ASSIGN_OR_RETURN(Tensor indices, ReadNpy(ix));
  FG_RETURN_IF_ERROR(Expect(indptr, ip, DType::kInt64, 1));
  const DType index_type = indices.dtype() == DType::kInt64 ? DType::kInt64 : DType::kInt32;
  FG_RETURN_IF_ERROR(Expect(indices, ix, index_type, 1));  // int32 or int64 column ids
  const int64_t n = indptr.numel() - 1;
  if (n < 0) return absl::InvalidArgumentError(absl::StrCat(ip, ": empty array"));
  Csr c;
  c.num_rows = c.num_cols = n;
  c.offsets = indptr;
  c.indices = indices;
  if (absl::Status s = c.Validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(ix, ": ", s.message()));
  }
  Dataset ds;
  const std::string meta_path = JoinPath(dir, "meta.json");
  std::string meta;
  if (PathExists(meta_path)) {
    FG_ASSIGN_OR_RETURN(meta, ReadFileToString(meta_path));
  }
  ds.name = JsonValue(meta, "name");
  if (ds.name.empty()) ds.name = StemOf(dir);
  ds.graph.node_types = {"node"};
  ds.graph.num_nodes = {n};
  Relation r;
  r.src_type = r.dst_type = "node";
  r.name = "edge";
  r.by_dst = c;
  r.by_src = c.Transpose();
  ds.graph.relations.push_back(std::move(r));
  const std::string fp = JoinPath(dir, "feat.npy");
  if (PathExists(fp)) {
    FG_ASSIGN_OR_RETURN(Tensor f, ReadNpy(fp));
    FG_RETURN_IF_ERROR(Expect(f, fp, DType::kFloat32, 2));
    if (f.dim(0) != n) {
      return absl::InvalidArgumentError(absl::StrCat(fp, ": ", f.dim(0), " rows but ", ip, " has ", n, " nodes"));
    }
    ds.features["node"] = f;
  }
  int64_t classes = 0;
  absl::SimpleAtoi(JsonValue(meta, "num_classes"), &classes);
  const std::string lp = JoinPath(dir, "label.npy");
  if (PathExists(lp)) {
    FG_ASSIGN_OR_RETURN(Tensor l, ReadNpy(lp));
    FG_RETURN_IF_ERROR(Expect(l, lp, DType::kInt64, 1));
    if (l.dim(0) != n) {
      return absl::InvalidArgumentError(absl::StrCat(lp, ": ", l.dim(0), " rows but ", ip, " has ", n, " nodes"));
    }
    for (int64_t i = 0; i < n; ++i) classes = std::max(classes, l.i64()[i] + 1);
    ds.labels["node"] = l;
  }
  if (classes > 0) ds.num_classes["node"] = classes;
  if (PathExists(JoinPath(dir, "train_idx.npy"))) {
    Split& s = ds.splits["node"];
    Tensor* parts[] = {&s.train, &s.valid, &s.test};
    const char* names[] = {"train_idx.npy", "valid_idx.npy", "test_idx.npy"};
    for (int i = 0; i < 3; ++i) {
      const std::string p = JoinPath(dir, names[i]);
      if (!PathExists(p)) {
        *parts[i] = Tensor::Empty({0}, DType::kInt64);
        continue;
      }
      FG_ASSIGN_OR_RETURN(*parts[i], ReadNpy(p));
      FG_RETURN_IF_ERROR(Expect(*parts[i], p, DType::kInt64, 1));
      FG_RETURN_IF_ERROR(CheckIds(*parts[i], n, p));
    }
    ds.split_name = "npy";
  }
  return ds;
}

absl::Status WriteNpyDirectory(const Dataset& ds, const std::string& dir, bool normalize_features) {
  FG_RETURN_IF_ERROR(MakeDirectories(dir));
  const HeteroGraph& g = ds.graph;
  const bool homogeneous = g.IsHomogeneous() && g.node_types[0] == "node";
  for (const Relation& r : g.relations) {
    const std::string d = homogeneous ? dir : JoinPath(dir, r.Key());
    FG_RETURN_IF_ERROR(MakeDirectories(d));
    FG_RETURN_IF_ERROR(WriteNpy(JoinPath(d, "indptr.npy"), r.by_dst.offsets));
    FG_RETURN_IF_ERROR(WriteNpy(JoinPath(d, "indices.npy"), r.by_dst.indices));
    if (auto it = ds.edge_splits.find(r.Key()); it != ds.edge_splits.end()) {
      FG_RETURN_IF_ERROR(WriteNpy(JoinPath(d, "train_edges.npy"), it->second.train));
      if (it->second.valid.defined()) FG_RETURN_IF_ERROR(WriteNpy(JoinPath(d, "valid_edges.npy"), it->second.valid));
      if (it->second.test.defined()) FG_RETURN_IF_ERROR(WriteNpy(JoinPath(d, "test_edges.npy"), it->second.test));
    }
  }
  for (const std::string& type : g.node_types) {
    const std::string d = homogeneous ? dir : JoinPath(dir, type);
    FG_RETURN_IF_ERROR(MakeDirectories(d));
    if (auto it = ds.features.find(type); it != ds.features.end()) {
      FG_RETURN_IF_ERROR(WriteNpy(JoinPath(d, "feat.npy"), it->second));
    }
    if (auto it = ds.labels.find(type); it != ds.labels.end()) {
      FG_RETURN_IF_ERROR(WriteNpy(JoinPath(d, "label.npy"), it->second));
    }
    if (auto it = ds.splits.find(type); it != ds.splits.end()) {
      FG_RETURN_IF_ERROR(WriteNpy(JoinPath(d, "train_idx.npy"), it->second.train));
      if (it->second.valid.defined()) FG_RETURN_IF_ERROR(WriteNpy(JoinPath(d, "valid_idx.npy"), it->second.valid));
      if (it->second.test.defined()) FG_RETURN_IF_ERROR(WriteNpy(JoinPath(d, "test_idx.npy"), it->second.test));
    }
    if (homogeneous || ds.num_classes.count(type) != 0) {
      const auto it = ds.num_classes.find(type);
      const int64_t k = it == ds.num_classes.end() ? 0 : it->second;
      FG_RETURN_IF_ERROR(WriteStringToFile(
          JoinPath(d, "meta.json"),
          absl::StrCat("{\"name\": \"", ds.name, "\", \"num_classes\": ", k,
                       ", \"normalize_features\": ", normalize_features ? "true" : "false", "}\n")));
    }
  }
  return absl::OkStatus();
}

}  // namespace fg::graph::io
