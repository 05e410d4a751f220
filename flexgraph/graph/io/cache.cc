// Writing the binary cache (cache.h: EncodeCache, WriteCache): the dataset's arrays as sections
// behind a header and a table (cache_format.h), written to a temporary file and renamed.
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

struct Section {
  std::string name;
  Tensor tensor;      // arrays
  std::string bytes;  // meta
  const char* data() const { return tensor.defined() ? static_cast<const char*>(tensor.raw()) : bytes.data(); }
  uint64_t size() const { return tensor.defined() ? tensor.nbytes() : bytes.size(); }
};

void AddCsr(std::vector<Section>* out, const std::string& prefix, const Csr& c) {
  out->push_back({prefix + ".off", c.offsets, {}});
  out->push_back({prefix + ".idx", c.indices, {}});
  if (c.values.defined()) out->push_back({prefix + ".val", c.values, {}});
}

void AddSplit(std::vector<Section>* out, const std::string& prefix, const Tensor& train,
              const Tensor& valid, const Tensor& test) {
  if (train.defined()) out->push_back({prefix + ".train", train, {}});
  if (valid.defined()) out->push_back({prefix + ".valid", valid, {}});
  if (test.defined()) out->push_back({prefix + ".test", test, {}});
}

// A graph set's arrays (version 2): "g.<field>", "g.node.<column>", "g.ptcl.<column>".
void AddGraphSet(std::vector<Section>* s, const GraphSet& gs) {
  const std::pair<const char*, const Tensor*> fields[] = {
      {"g.noff", &gs.node_offsets}, {"g.eoff", &gs.edge_offsets},   {"g.edges", &gs.edges},
      {"g.entry", &gs.entry_edges}, {"g.efeat", &gs.edge_feat},     {"g.elabel", &gs.edge_labels},
      {"g.glabel", &gs.graph_labels}, {"g.train", &gs.train},       {"g.valid", &gs.valid},
      {"g.test", &gs.test},         {"g.poff", &gs.particle_offsets}};
  for (const auto& [name, t] : fields) {
    if (t->defined()) s->push_back({name, *t, {}});
  }
  for (const auto& [name, t] : gs.node_info) s->push_back({"g.node." + name, t, {}});
  for (const auto& [name, t] : gs.particles) s->push_back({"g.ptcl." + name, t, {}});
}

std::vector<Section> Sections(const Dataset& ds) {
  const HeteroGraph& g = ds.graph;
  std::string meta = absl::StrCat("name\t", ds.name, "\nsplit\t", ds.split_name, "\n");
  for (size_t t = 0; t < g.node_types.size(); ++t) {
    absl::StrAppend(&meta, "type\t", g.node_types[t], "\t", g.num_nodes[t], "\n");
  }
  for (const Relation& r : g.relations) {
    absl::StrAppend(&meta, "relation\t", r.src_type, "\t", r.name, "\t", r.dst_type, "\t",
                    r.symmetric ? 1 : 0, "\n");
  }
  for (const auto& [type, k] : ds.num_classes) absl::StrAppend(&meta, "classes\t", type, "\t", k, "\n");
  if (ds.graphs) {
    absl::StrAppend(&meta, "graphs\t", ds.graphs->num_graphs(), "\nedge_classes\t",
                    ds.graphs->num_edge_classes, "\ngraph_classes\t", ds.graphs->num_graph_classes,
                    "\n");
  }
  if (ds.part) {
    absl::StrAppend(&meta, "part\t", ds.part->index, "\t", ds.part->num_parts(), "\n");
    for (size_t t = 0; t < ds.part->bounds.size(); ++t) {
      absl::StrAppend(&meta, "bounds\t", t, "\t", absl::StrJoin(ds.part->bounds[t], ","), "\n");
    }
    for (const auto& [type, n] : ds.part->train_total) {
      absl::StrAppend(&meta, "train_total\t", type, "\t", n, "\n");
    }
    for (const auto& [key, n] : ds.part->train_pairs_total) {
      absl::StrAppend(&meta, "train_pairs_total\t", key, "\t", n, "\n");
    }
  }
  std::vector<Section> s;
  s.push_back({"meta", Tensor(), meta});
  for (size_t i = 0; i < g.relations.size(); ++i) {
    const Relation& r = g.relations[i];
    const std::string p = absl::StrCat("r", i);
    AddCsr(&s, p + ".src", r.by_src);
    if (!r.symmetric) AddCsr(&s, p + ".dst", r.by_dst);
    if (r.edge_feat.defined()) s.push_back({p + ".efeat", r.edge_feat, {}});
    if (auto it = ds.edge_splits.find(r.Key()); it != ds.edge_splits.end()) {
      AddSplit(&s, p, it->second.train, it->second.valid, it->second.test);
    }
  }
  for (size_t t = 0; t < g.node_types.size(); ++t) {
    const std::string& type = g.node_types[t];
    const std::string p = absl::StrCat("t", t);
    if (auto it = ds.features.find(type); it != ds.features.end()) s.push_back({p + ".feat", it->second, {}});
    if (auto it = ds.labels.find(type); it != ds.labels.end()) s.push_back({p + ".label", it->second, {}});
    if (auto it = ds.splits.find(type); it != ds.splits.end()) {
      AddSplit(&s, p, it->second.train, it->second.valid, it->second.test);
    }
    if (ds.part) {
      if (auto it = ds.part->original_ids.find(type); it != ds.part->original_ids.end()) {
        s.push_back({p + ".orig", it->second, {}});
      }
    }
  }
  if (ds.part && ds.part->halo_ids.defined()) {
    s.push_back({"halo.ids", ds.part->halo_ids, {}});
    s.push_back({"halo.deg", ds.part->halo_in_degrees, {}});
  }
  if (ds.graphs) AddGraphSet(&s, *ds.graphs);
  return s;
}

// Header and table for the sections; data offsets are 64-byte aligned after the table.
std::string HeaderAndTable(const std::vector<Section>& sections, std::vector<uint64_t>* offsets,
                           uint64_t* file_size) {
  const uint64_t table_bytes = sections.size() * sizeof(Entry);
  uint64_t pos = (sizeof(Header) + table_bytes + kAlign - 1) / kAlign * kAlign;
  std::vector<Entry> table(sections.size());
  std::vector<uint32_t> crcs(sections.size());
  for (size_t i = 0; i < sections.size(); ++i) crcs[i] = Crc(sections[i].data(), sections[i].size());
  for (size_t i = 0; i < sections.size(); ++i) {
    const Section& s = sections[i];
    Entry& e = table[i];
    std::memset(&e, 0, sizeof(e));
    std::strncpy(e.name, s.name.c_str(), sizeof(e.name) - 1);
    if (s.tensor.defined()) {
      e.kind = KindOf(s.tensor.dtype());
      e.rank = static_cast<uint32_t>(s.tensor.rank());
      for (int d = 0; d < s.tensor.rank(); ++d) e.shape[d] = s.tensor.dim(d);
    } else {
      e.kind = kKindBytes;
      e.rank = 1;
      e.shape[0] = static_cast<int64_t>(s.bytes.size());
    }
    e.offset = pos;
    e.nbytes = s.size();
    e.crc = crcs[i];
    offsets->push_back(pos);
    pos = (pos + e.nbytes + kAlign - 1) / kAlign * kAlign;
  }
  *file_size = pos;
  Header h;
  std::memset(&h, 0, sizeof(h));
  std::memcpy(h.magic, kMagic, 8);
  h.version = kCacheVersion;
  h.num_sections = static_cast<uint32_t>(sections.size());
  h.table_offset = sizeof(Header);
  h.file_size = pos;
  h.table_crc = Crc(reinterpret_cast<const char*>(table.data()), table_bytes);
  h.header_crc = Crc(reinterpret_cast<const char*>(&h), offsetof(Header, header_crc));
  std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
  out.append(reinterpret_cast<const char*>(table.data()), table_bytes);
  return out;
}

}  // namespace

std::string EncodeCache(const Dataset& ds) {
  const std::vector<Section> sections = Sections(ds);
  std::vector<uint64_t> offsets;
  uint64_t size = 0;
  std::string out = HeaderAndTable(sections, &offsets, &size);
  out.resize(size, '\0');
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].size() > 0) std::memcpy(out.data() + offsets[i], sections[i].data(), sections[i].size());
  }
  return out;
}

absl::Status WriteCache(const Dataset& ds, const std::string& path) {
  const std::vector<Section> sections = Sections(ds);
  std::vector<uint64_t> offsets;
  uint64_t size = 0;
  const std::string head = HeaderAndTable(sections, &offsets, &size);
  const std::string tmp = absl::StrCat(path, ".tmp", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  auto write_at = [&](const char* p, uint64_t n, uint64_t off) {
    while (n > 0) {
      const ssize_t w = ::pwrite(fd, p, std::min<uint64_t>(n, 1 << 30), static_cast<off_t>(off));
      if (w <= 0) return false;
      p += w;
      n -= w;
      off += w;
    }
    return true;
  };
  bool ok = write_at(head.data(), head.size(), 0) && ::ftruncate(fd, static_cast<off_t>(size)) == 0;
  for (size_t i = 0; ok && i < sections.size(); ++i) {
    ok = write_at(sections[i].data(), sections[i].size(), offsets[i]);
  }
  ok = (::close(fd) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::DataLossError(absl::StrCat(path, ": write failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace fg::graph::io
