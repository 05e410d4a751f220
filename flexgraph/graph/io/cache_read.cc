// Reading the binary cache (cache.h: ParseCache, ReadCache): the header, the table and every
// section checked (checksums, shapes, kinds, names, a section at most once, by_dst the transpose of
// by_src) before a Dataset is built from them; errors name the file.
#include "flexgraph/graph/io/cache.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/cache_format.h"
#include "flexgraph/graph/io/file.h"

namespace fg::graph::io {

namespace {

using cache_format::Crc;
using cache_format::Entry;
using cache_format::Header;
using cache_format::kAlign;
using cache_format::KindOf;
using cache_format::kKindBytes;
using cache_format::kMagic;

// Whether two Csr of the same shape hold the same entries row by row (column ids and values,
// in any order within a row).
bool SameEntries(const Csr& a, const Csr& b) {
  if (a.num_rows != b.num_rows || a.num_cols != b.num_cols || a.nnz() != b.nnz() ||
      a.values.defined() != b.values.defined()) {
    return false;
  }
  auto ids = [](const Csr& c, int64_t k) -> int64_t {
    return c.has_int64_indices() ? c.col64()[k] : c.indices.i32()[k];
  };
  // The common case, rows in the same order (a Transpose sorts each row by column): one pass.
  bool same_order = true;
  for (int64_t r = 0; same_order && r <= a.num_rows; ++r)
    same_order = a.row_ptr()[r] == b.row_ptr()[r];
  for (int64_t k = 0; same_order && k < a.nnz(); ++k) {
    same_order = ids(a, k) == ids(b, k) && (!a.val() || a.val()[k] == b.val()[k]);
  }
  if (same_order) return true;
  std::vector<std::pair<int64_t, float>> x, y;
  for (int64_t r = 0; r < a.num_rows; ++r) {
    if (a.degree(r) != b.degree(r)) return false;
    x.clear();
    y.clear();
    for (int64_t k = a.row_ptr()[r]; k < a.row_ptr()[r + 1]; ++k)
      x.push_back({ids(a, k), a.val() ? a.val()[k] : 0.0f});
    for (int64_t k = b.row_ptr()[r]; k < b.row_ptr()[r + 1]; ++k)
      y.push_back({ids(b, k), b.val() ? b.val()[k] : 0.0f});
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    if (x != y) return false;
  }
  return true;
}

absl::Status Corrupt(const std::string& name, const std::string& msg) {
  return absl::DataLossError(absl::StrCat(name, ": corrupt cache: ", msg));
}

}  // namespace

absl::StatusOr<Dataset> ParseCache(std::string_view image, const std::string& name,
                                   bool verify_checksums) {
  if (image.size() < sizeof(Header)) return Corrupt(name, "file shorter than its header");
  Header h;
  std::memcpy(&h, image.data(), sizeof(h));
  if (std::memcmp(h.magic, kMagic, 8) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": not a FlexGraph cache (bad magic)"));
  }
  if (verify_checksums && h.header_crc != Crc(image.data(), offsetof(Header, header_crc))) {
    return Corrupt(name, "header checksum mismatch");
  }
  if (h.version < kOldestCacheVersion || h.version > kCacheVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        name, ": cache version ", h.version, ", this build reads versions ", kOldestCacheVersion,
        " to ", kCacheVersion, " (rebuild the cache from the dataset)"));
  }
  if (h.file_size != image.size()) {
    return Corrupt(name, absl::StrCat("file has ", image.size(), " bytes, header says ", h.file_size,
                                      " (truncated?)"));
  }
  const uint64_t table_bytes = static_cast<uint64_t>(h.num_sections) * sizeof(Entry);
  if (h.table_offset != sizeof(Header) || table_bytes > image.size() - sizeof(Header)) {
    return Corrupt(name, "section table out of bounds");
  }
  if (verify_checksums && h.table_crc != Crc(image.data() + h.table_offset, table_bytes)) {
    return Corrupt(name, "section table checksum mismatch");
  }
  std::vector<Entry> table(h.num_sections);
  if (table_bytes > 0) std::memcpy(table.data(), image.data() + h.table_offset, table_bytes);
  // Verify all sections (in parallel over sections; Crc parallelises large ones).
  std::map<std::string, Tensor> arrays;
  std::string meta;
  bool have_meta = false;
  for (Entry& e : table) {
    e.name[sizeof(e.name) - 1] = '\0';
    const std::string sname = e.name;
    if (arrays.count(sname) != 0 || (sname == "meta" && have_meta)) {
      return Corrupt(name, absl::StrCat("section '", sname, "' appears twice"));
    }
    if (e.offset % kAlign != 0 || e.offset > image.size() || e.nbytes > image.size() - e.offset) {
      return Corrupt(name, absl::StrCat("section '", sname, "' out of bounds"));
    }
    if (e.kind > kKindBytes || e.rank < 1 || e.rank > 3) {
      return Corrupt(name, absl::StrCat("section '", sname, "' has a bad type or rank"));
    }
    Shape shape;
    unsigned __int128 numel = 1;
    for (uint32_t d = 0; d < e.rank; ++d) {
      if (e.shape[d] < 0) return Corrupt(name, absl::StrCat("section '", sname, "' has a negative dimension"));
      shape.push_back(e.shape[d]);
      numel *= static_cast<uint64_t>(e.shape[d]);
      if (numel > static_cast<unsigned __int128>(INT64_MAX)) {
        return Corrupt(name, absl::StrCat("section '", sname, "' has an impossible shape"));
      }
    }
    const DType dtype = e.kind == 0 ? DType::kFloat32 : e.kind == 1 ? DType::kInt32 : DType::kInt64;
    const uint64_t elem = e.kind == kKindBytes ? 1 : DTypeSize(dtype);
    if (numel * elem != e.nbytes) {
      return Corrupt(name, absl::StrCat("section '", sname, "' size disagrees with its shape"));
    }
    const char* p = image.data() + e.offset;
    if (verify_checksums && Crc(p, e.nbytes) != e.crc) {
      return Corrupt(name, absl::StrCat("checksum mismatch in section '", sname, "'"));
    }
    if (e.kind == kKindBytes) {
      if (sname == "meta") {
        meta.assign(p, e.nbytes);
        have_meta = true;
      }
      continue;
    }
    Tensor t = Tensor::Empty(shape, dtype);
    if (e.nbytes > 0) std::memcpy(t.raw(), p, e.nbytes);
    arrays[sname] = t;
  }
  if (!have_meta) return Corrupt(name, "no meta section");
  Dataset ds;
  std::vector<std::pair<std::string, int64_t>> classes;
  std::vector<std::pair<std::string, int64_t>> train_total, train_pairs_total;
  std::map<int64_t, std::vector<int64_t>> bounds;
  int64_t part_index = -1, num_parts = 0;
  int64_t num_graphs = -1, edge_classes = 0, graph_classes = 0;
  for (absl::string_view line : absl::StrSplit(meta, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    int64_t v = 0;
    if (f[0] == "name" && f.size() == 2) {
      ds.name = f[1];
    } else if (f[0] == "split" && f.size() == 2) {
      ds.split_name = f[1];
    } else if (f[0] == "type" && f.size() == 3 && absl::SimpleAtoi(f[2], &v) && v >= 0 &&
               v <= INT32_MAX) {
      ds.graph.node_types.push_back(f[1]);
      ds.graph.num_nodes.push_back(v);
    } else if (f[0] == "relation" && f.size() == 5 && (f[4] == "0" || f[4] == "1")) {
      Relation r;
      r.src_type = f[1];
      r.name = f[2];
      r.dst_type = f[3];
      r.symmetric = f[4] == "1";
      ds.graph.relations.push_back(std::move(r));
    } else if (f[0] == "classes" && f.size() == 3 && absl::SimpleAtoi(f[2], &v)) {
      classes.push_back({f[1], v});
    } else if (f[0] == "part" && f.size() == 3 && absl::SimpleAtoi(f[1], &part_index) &&
               absl::SimpleAtoi(f[2], &num_parts) && num_parts >= 1 && num_parts <= (1 << 20) &&
               part_index >= 0 && part_index < num_parts) {
    } else if (f[0] == "bounds" && f.size() == 3 && absl::SimpleAtoi(f[1], &v) && v >= 0 &&
               bounds.count(v) == 0) {
      std::vector<int64_t>& b = bounds[v];
      for (absl::string_view x : absl::StrSplit(f[2], ',')) {
        int64_t id = 0;
        if (!absl::SimpleAtoi(x, &id)) return Corrupt(name, absl::StrCat("bad bounds of type ", v));
        b.push_back(id);
      }
    } else if (f[0] == "graphs" && f.size() == 2 && h.version >= 2 && absl::SimpleAtoi(f[1], &v) &&
               v >= 0 && num_graphs < 0) {
      num_graphs = v;
    } else if (f[0] == "edge_classes" && f.size() == 2 && absl::SimpleAtoi(f[1], &v) && v >= 0) {
      edge_classes = v;
    } else if (f[0] == "graph_classes" && f.size() == 2 && absl::SimpleAtoi(f[1], &v) && v >= 0) {
      graph_classes = v;
    } else if (f[0] == "train_total" && f.size() == 3 && absl::SimpleAtoi(f[2], &v) && v >= 0) {
      train_total.push_back({f[1], v});
    } else if (f[0] == "train_pairs_total" && f.size() == 3 && absl::SimpleAtoi(f[2], &v) && v >= 0) {
      train_pairs_total.push_back({f[1], v});
    } else {
      return Corrupt(name, absl::StrCat("bad meta line '", line.substr(0, 80), "'"));
    }
  }
  auto take = [&](const std::string& key) {
    auto it = arrays.find(key);
    return it == arrays.end() ? Tensor() : it->second;
  };
  auto csr = [&](const std::string& p, int64_t rows, int64_t cols, Csr* c) -> absl::Status {
    c->num_rows = rows;
    c->num_cols = cols;
    c->offsets = take(p + ".off");
    c->indices = take(p + ".idx");
    c->values = take(p + ".val");
    if (!c->offsets.defined() || !c->indices.defined() || c->offsets.dtype() != DType::kInt64 ||
        (c->indices.dtype() != DType::kInt32 && c->indices.dtype() != DType::kInt64) ||
        (c->values.defined() && c->values.dtype() != DType::kFloat32)) {
      return Corrupt(name, absl::StrCat("missing or mistyped arrays of ", p));
    }
    absl::Status s = c->Validate();
    if (!s.ok()) return Corrupt(name, absl::StrCat(p, ": ", s.message()));
    return absl::OkStatus();
  };
  // Split arrays: node ids below bound0 (width 1) or (src, dst) pairs below (bound0, bound1).
  auto split_part = [&](const std::string& key, int64_t width, int64_t bound0, int64_t bound1,
                        Tensor* out) -> absl::Status {
    Tensor t = take(key);
    if (!t.defined()) return absl::OkStatus();
    if (t.dtype() != DType::kInt64 || (width == 1 ? t.rank() != 1 : (t.rank() != 2 || t.dim(1) != 2))) {
      return Corrupt(name, absl::StrCat("section '", key, "' has the wrong type or shape"));
    }
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int64_t bound = (width == 2 && i % 2 == 1) ? bound1 : bound0;
      if (t.i64()[i] < 0 || t.i64()[i] >= bound) {
        return Corrupt(name, absl::StrCat("section '", key, "' holds an id out of range"));
      }
    }
    *out = t;
    return absl::OkStatus();
  };
  HeteroGraph& g = ds.graph;
  // A part: its bounds must tile every type's ids; its rows are the owned ranges.
  if (part_index >= 0) {
    PartInfo& part = ds.part.emplace();
    part.index = static_cast<int>(part_index);
    for (size_t t = 0; t < g.node_types.size(); ++t) {
      auto it = bounds.find(static_cast<int64_t>(t));
      if (it == bounds.end()) return Corrupt(name, absl::StrCat("no bounds for node type ", t));
      const std::vector<int64_t>& b = it->second;
      bool ok = static_cast<int64_t>(b.size()) == num_parts + 1 && b.front() == 0 &&
                b.back() == g.num_nodes[t];
      for (size_t k = 1; ok && k < b.size(); ++k) ok = b[k - 1] <= b[k];
      if (!ok) return Corrupt(name, absl::StrCat("bounds of node type ", t, " do not tile its ids"));
      part.bounds.push_back(b);
    }
    if (bounds.size() != g.node_types.size()) return Corrupt(name, "bounds of unknown node types");
    for (const auto& [type, n] : train_total) part.train_total[type] = n;
    for (const auto& [key, n] : train_pairs_total) part.train_pairs_total[key] = n;
  } else if (!bounds.empty() || !train_total.empty() || !train_pairs_total.empty()) {
    return Corrupt(name, "part bounds without a part line");
  }
  const PartInfo* part = ds.part ? &*ds.part : nullptr;
  auto rows = [&](int t) { return part ? part->end(t) - part->begin(t) : g.num_nodes[t]; };
  auto first = [&](int t) -> int64_t { return part ? part->begin(t) : 0; };
  for (size_t i = 0; i < g.relations.size(); ++i) {
    Relation& r = g.relations[i];
    const int s = g.TypeIndex(r.src_type), d = g.TypeIndex(r.dst_type);
    if (s < 0 || d < 0 || (r.symmetric && s != d)) {
      return Corrupt(name, absl::StrCat("relation ", r.Key(), " has unknown node types"));
    }
    const std::string p = absl::StrCat("r", i);
    if (part != nullptr) {  // rows: the part's own vertices
      FG_RETURN_IF_ERROR(csr(p + ".src", rows(s), g.num_nodes[d], &r.by_src));
      if (r.symmetric) {
        r.by_dst = r.by_src;
      } else {
        FG_RETURN_IF_ERROR(csr(p + ".dst", rows(d), g.num_nodes[s], &r.by_dst));
      }
    } else {
      FG_RETURN_IF_ERROR(csr(p + ".src", g.num_nodes[s], g.num_nodes[d], &r.by_src));
      if (r.symmetric) {
        r.by_dst = r.by_src;
      } else {
        FG_RETURN_IF_ERROR(csr(p + ".dst", g.num_nodes[d], g.num_nodes[s], &r.by_dst));
        if (r.by_dst.nnz() != r.by_src.nnz()) {
          return Corrupt(name, absl::StrCat(r.Key(), ": by_src and by_dst differ in size"));
        }
        if (!SameEntries(r.by_dst, r.by_src.Transpose())) {
          return Corrupt(name, absl::StrCat(r.Key(), ": by_dst is not the transpose of by_src"));
        }
      }
      r.edge_feat = take(p + ".efeat");
      if (r.edge_feat.defined() &&
          (r.edge_feat.dtype() != DType::kFloat32 || r.edge_feat.rows() != r.by_src.nnz())) {
        return Corrupt(name, absl::StrCat("section '", p, ".efeat' has the wrong shape"));
      }
    }
    // Edge split pairs: the source dataset's ids in a part (PartInfo), so any id of the types.
    if (arrays.count(p + ".train") != 0) {
      EdgeSplit& es = ds.edge_splits[r.Key()];
      const int64_t ns = g.num_nodes[s], nd = g.num_nodes[d];
      FG_RETURN_IF_ERROR(split_part(p + ".train", 2, ns, nd, &es.train));
      FG_RETURN_IF_ERROR(split_part(p + ".valid", 2, ns, nd, &es.valid));
      FG_RETURN_IF_ERROR(split_part(p + ".test", 2, ns, nd, &es.test));
    }
  }
  // Split ids of a part lie in its own range.
  auto owned_split = [&](const std::string& key, int t, Tensor* out) -> absl::Status {
    FG_RETURN_IF_ERROR(split_part(key, 1, first(t) + rows(t), 0, out));
    for (int64_t i = 0; out->defined() && i < out->numel(); ++i) {
      if (out->i64()[i] < first(t)) {
        return Corrupt(name, absl::StrCat("section '", key, "' holds an id out of range"));
      }
    }
    return absl::OkStatus();
  };
  for (size_t t = 0; t < g.node_types.size(); ++t) {
    const std::string& type = g.node_types[t];
    const int64_t n = rows(static_cast<int>(t));
    const std::string p = absl::StrCat("t", t);
    if (Tensor f = take(p + ".feat"); f.defined()) {
      if (f.dtype() != DType::kFloat32 || f.rank() != 2 || f.dim(0) != n) {
        return Corrupt(name, absl::StrCat("section '", p, ".feat' has the wrong type or shape"));
      }
      ds.features[type] = f;
    }
    if (Tensor l = take(p + ".label"); l.defined()) {
      if (l.dtype() != DType::kInt64 || l.rank() > 2 || l.dim(0) != n) {
        return Corrupt(name, absl::StrCat("section '", p, ".label' has the wrong type or shape"));
      }
      ds.labels[type] = l;
    }
    if (arrays.count(p + ".train") != 0) {
      Split& sp = ds.splits[type];
      const int ti = static_cast<int>(t);
      FG_RETURN_IF_ERROR(owned_split(p + ".train", ti, &sp.train));
      FG_RETURN_IF_ERROR(owned_split(p + ".valid", ti, &sp.valid));
      FG_RETURN_IF_ERROR(owned_split(p + ".test", ti, &sp.test));
    }
    if (part != nullptr) {
      Tensor o = take(p + ".orig");
      if (!o.defined() || o.dtype() != DType::kInt64 || o.rank() != 1 || o.dim(0) != n) {
        return Corrupt(name, absl::StrCat("section '", p, ".orig' is missing or has the wrong shape"));
      }
      for (int64_t i = 0; i < n; ++i) {
        if (o.i64()[i] < 0 || o.i64()[i] >= g.num_nodes[t]) {
          return Corrupt(name, absl::StrCat("section '", p, ".orig' holds an id out of range"));
        }
      }
      ds.part->original_ids[type] = o;
    }
  }
  if (part != nullptr && arrays.count("halo.ids") != 0) {
    Tensor ids = take("halo.ids"), deg = take("halo.deg");
    if (ids.dtype() != DType::kInt64 || ids.rank() != 1 || !deg.defined() ||
        deg.dtype() != DType::kInt64 || deg.rank() != 1 || deg.numel() != ids.numel() ||
        g.node_types.size() != 1) {
      return Corrupt(name, "sections 'halo.ids' and 'halo.deg' disagree");
    }
    for (int64_t i = 0; i < ids.numel(); ++i) {
      const int64_t v = ids.i64()[i];
      if (v < 0 || v >= g.num_nodes[0] || (v >= first(0) && v < first(0) + rows(0)) ||
          (i > 0 && v <= ids.i64()[i - 1]) || deg.i64()[i] < 0) {
        return Corrupt(name, "section 'halo.ids' is not ascending foreign ids with degrees");
      }
    }
    ds.part->halo_ids = ids;
    ds.part->halo_in_degrees = deg;
  }
  for (const auto& [type, k] : classes) {
    if (g.TypeIndex(type) < 0) return Corrupt(name, absl::StrCat("classes of unknown type ", type));
    ds.num_classes[type] = k;
  }
  if (num_graphs >= 0) {
    if (part != nullptr) return Corrupt(name, "a part of a partitioned dataset with a graph set");
    GraphSet& gs = ds.graphs.emplace();
    gs.node_offsets = take("g.noff");
    gs.edge_offsets = take("g.eoff");
    gs.edges = take("g.edges");
    gs.entry_edges = take("g.entry");
    gs.edge_feat = take("g.efeat");
    gs.edge_labels = take("g.elabel");
    gs.graph_labels = take("g.glabel");
    gs.train = take("g.train");
    gs.valid = take("g.valid");
    gs.test = take("g.test");
    gs.particle_offsets = take("g.poff");
    gs.num_edge_classes = edge_classes;
    gs.num_graph_classes = graph_classes;
    for (const auto& [key, t] : arrays) {
      if (key.rfind("g.node.", 0) == 0) gs.node_info[key.substr(7)] = t;
      if (key.rfind("g.ptcl.", 0) == 0) gs.particles[key.substr(7)] = t;
    }
    if (!gs.node_offsets.defined() || gs.node_offsets.numel() != num_graphs + 1) {
      return Corrupt(name, absl::StrCat("section 'g.noff' missing or not ", num_graphs + 1, " long"));
    }
    absl::Status valid = ValidateGraphSet(ds);
    if (!valid.ok()) return Corrupt(name, std::string(valid.message()));
  }
  return ds;
}

absl::StatusOr<Dataset> ReadCache(const std::string& path) {
  FG_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  return ParseCache(file.data(), path);
}

}  // namespace fg::graph::io
