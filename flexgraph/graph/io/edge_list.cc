#include "flexgraph/graph/io/edge_list.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <map>

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

// The top-level members of a JSON object (meta.json): key -> the value's text as written (a string
// with its quotes). Strict JSON; nested values are checked and kept as text. Errors say where.
class JsonObjectReader {
 public:
  explicit JsonObjectReader(const std::string& text) : t_(text) {}

  absl::StatusOr<std::map<std::string, std::string>> Read() {
    std::map<std::string, std::string> members;
    Space();
    if (!Eat('{')) return Bad("expected '{'");
    Space();
    if (!Eat('}')) {
      for (;;) {
        Space();
        const size_t key_at = p_;
        FG_RETURN_IF_ERROR(String());
        const std::string key = t_.substr(key_at + 1, p_ - key_at - 2);
        Space();
        if (!Eat(':')) return Bad("expected ':'");
        Space();
        const size_t value_at = p_;
        FG_RETURN_IF_ERROR(Value(0));
        members[key] = t_.substr(value_at, p_ - value_at);
        Space();
        if (Eat('}')) break;
        if (!Eat(',')) return Bad("expected ',' or '}'");
      }
    }
    Space();
    if (p_ != t_.size()) return Bad("text after the object");
    return members;
  }

 private:
  absl::Status Bad(const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(what, " at byte ", p_));
  }
  bool Eat(char c) {
    if (p_ < t_.size() && t_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }
  void Space() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r'))
      ++p_;
  }
  absl::Status String() {
    if (!Eat('"')) return Bad("expected a string");
    while (p_ < t_.size() && t_[p_] != '"') {
      if (static_cast<unsigned char>(t_[p_]) < 0x20) return Bad("control character in a string");
      p_ += t_[p_] == '\\' ? 2 : 1;
    }
    if (!Eat('"')) return Bad("unterminated string");
    return absl::OkStatus();
  }
  absl::Status Value(int depth) {
    if (depth > 64) return Bad("nested too deeply");
    if (p_ >= t_.size()) return Bad("expected a value");
    const char c = t_[p_];
    if (c == '"') return String();
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++p_;
      Space();
      if (Eat(close)) return absl::OkStatus();
      for (;;) {
        Space();
        if (c == '{') {
          FG_RETURN_IF_ERROR(String());
          Space();
          if (!Eat(':')) return Bad("expected ':'");
          Space();
        }
        FG_RETURN_IF_ERROR(Value(depth + 1));
        Space();
        if (Eat(close)) return absl::OkStatus();
        if (!Eat(',')) return Bad(absl::StrCat("expected ',' or '", std::string(1, close), "'"));
      }
    }
    for (const char* word : {"true", "false", "null"}) {
      if (t_.compare(p_, std::strlen(word), word) == 0) {
        p_ += std::strlen(word);
        return absl::OkStatus();
      }
    }
    const size_t start = p_;
    Eat('-');
    while (p_ < t_.size() && (std::isdigit(static_cast<unsigned char>(t_[p_])) || t_[p_] == '.' ||
                              t_[p_] == 'e' || t_[p_] == 'E' || t_[p_] == '+' || t_[p_] == '-')) {
      ++p_;
    }
    double ignored;
    if (p_ == start || !absl::SimpleAtod(t_.substr(start, p_ - start), &ignored)) {
      p_ = start;
      return Bad("expected a value");
    }
    return absl::OkStatus();
  }

  const std::string& t_;
  size_t p_ = 0;
};

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
  // meta.json (optional): a JSON object; "name" a string, "num_classes" a non-negative integer no
  // smaller than any label. Anything else is refused, naming the file and the field.
  const std::string meta_path = JoinPath(dir, "meta.json");
  std::map<std::string, std::string> meta;
  if (PathExists(meta_path)) {
    FG_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(meta_path));
    auto members = JsonObjectReader(text).Read();
    if (!members.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(meta_path, ": invalid JSON: ", members.status().message()));
    }
    meta = std::move(*members);
  }
  if (auto it = meta.find("name"); it != meta.end()) {
    if (it->second.size() < 2 || it->second.front() != '"') {
      return absl::InvalidArgumentError(
          absl::StrCat(meta_path, ": name: expected a string, got ", it->second));
    }
    ds.name = it->second.substr(1, it->second.size() - 2);
  }
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
  const bool meta_classes = meta.count("num_classes") != 0;
  if (meta_classes && (!absl::SimpleAtoi(meta.at("num_classes"), &classes) || classes < 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        meta_path, ": num_classes: expected a non-negative integer, got ", meta.at("num_classes")));
  }
  const std::string lp = JoinPath(dir, "label.npy");
  if (PathExists(lp)) {
    FG_ASSIGN_OR_RETURN(Tensor l, ReadNpy(lp));
    FG_RETURN_IF_ERROR(Expect(l, lp, DType::kInt64, 1));
    if (l.dim(0) != n) {
      return absl::InvalidArgumentError(absl::StrCat(lp, ": ", l.dim(0), " rows but ", ip, " has ", n, " nodes"));
    }
    int64_t largest = -1;
    for (int64_t i = 0; i < n; ++i) largest = std::max(largest, l.i64()[i]);
    if (meta_classes && largest >= classes) {
      return absl::InvalidArgumentError(absl::StrCat(meta_path, ": num_classes: ", classes,
                                                     ", but ", lp, " holds label ", largest));
    }
    classes = std::max(classes, largest + 1);
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
