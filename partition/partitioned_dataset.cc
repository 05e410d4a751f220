#include "partition/partitioned_dataset.h"

#include <algorithm>
#include <filesystem>

#include <google/protobuf/text_format.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/cache.h"
#include "flexgraph/graph/io/file.h"
#include "proto/text_format.h"

namespace fg::partition {
namespace {

std::string PartFile(int p) { return absl::StrCat("part-", p, ".fgc"); }

// The renumbering: per node type, source ids in new-id order, the inverse, and each part's bounds.
struct Renumbering {
  std::vector<std::vector<int64_t>> order;   // [type][new id] -> source id
  std::vector<std::vector<int32_t>> new_of;  // [type][source id] -> new id
  std::vector<std::vector<int64_t>> bounds;  // [type][part], num_parts + 1 entries
};

Renumbering Renumber(const graph::HeteroGraph& g, const PartitionPlan& plan) {
  Renumbering r;
  const int P = plan.num_parts;
  int64_t offset = 0;
  for (size_t t = 0; t < g.node_types.size(); ++t) {
    const int64_t n = g.num_nodes[t];
    std::vector<int64_t> count(P + 1, 0);
    for (int64_t v = 0; v < n; ++v) ++count[plan.owners[offset + v] + 1];
    for (int p = 0; p < P; ++p) count[p + 1] += count[p];
    r.bounds.push_back(count);
    std::vector<int64_t> order(n);
    std::vector<int32_t> new_of(n);
    for (int64_t v = 0; v < n; ++v) {
      const int64_t k = count[plan.owners[offset + v]]++;
      order[k] = v;
      new_of[v] = static_cast<int32_t>(k);
    }
    r.order.push_back(std::move(order));
    r.new_of.push_back(std::move(new_of));
    offset += n;
  }
  return r;
}

Tensor GatherRange(const Tensor& table, const std::vector<int64_t>& order, int64_t lo, int64_t hi) {
  Shape shape = table.shape();
  shape[0] = hi - lo;
  Tensor out = Tensor::Empty(shape, table.dtype());
  const size_t row = table.nbytes() / std::max<int64_t>(1, table.dim(0));
  const char* src = static_cast<const char*>(table.raw());
  char* dst = static_cast<char*>(out.raw());
  ParallelFor(lo, hi, [&](int64_t k) {
    std::memcpy(dst + (k - lo) * row, src + order[k] * row, row);
  });
  return out;
}

// Split members owned by `part`, as new ids, ascending.
Tensor OwnedSplit(const Tensor& ids, const std::vector<int32_t>& new_of, int64_t lo, int64_t hi) {
  if (!ids.defined()) return Tensor();
  std::vector<int64_t> mine;
  for (int64_t k = 0; k < ids.numel(); ++k) {
    const int64_t v = new_of[ids.i64()[k]];
    if (v >= lo && v < hi) mine.push_back(v);
  }
  std::sort(mine.begin(), mine.end());
  return Tensor::FromVector(mine);
}

// Part `p` of the renumbered dataset.
graph::Dataset MakePart(const graph::Dataset& ds, const Renumbering& r, int p, int64_t* in_edges,
                        int64_t* cut_in_edges) {
  const graph::HeteroGraph& g = ds.graph;
  graph::Dataset part;
  part.name = ds.name;
  part.split_name = ds.split_name;
  part.num_classes = ds.num_classes;
  part.graph.node_types = g.node_types;
  part.graph.num_nodes = g.num_nodes;
  graph::PartInfo& info = part.part.emplace();
  info.index = p;
  info.bounds = r.bounds;
  for (size_t t = 0; t < g.node_types.size(); ++t) {
    const std::string& type = g.node_types[t];
    const int64_t lo = r.bounds[t][p], hi = r.bounds[t][p + 1];
    info.original_ids[type] = Tensor::FromVector(
        std::vector<int64_t>(r.order[t].begin() + lo, r.order[t].begin() + hi));
    if (auto it = ds.features.find(type); it != ds.features.end() && it->second.defined()) {
      part.features[type] = GatherRange(it->second, r.order[t], lo, hi);
    }
    if (auto it = ds.labels.find(type); it != ds.labels.end() && it->second.defined()) {
      part.labels[type] = GatherRange(it->second, r.order[t], lo, hi);
    }
    if (auto it = ds.splits.find(type); it != ds.splits.end()) {
      const graph::Split& s = it->second;
      part.splits[type] = {OwnedSplit(s.train, r.new_of[t], lo, hi),
                           OwnedSplit(s.valid, r.new_of[t], lo, hi),
                           OwnedSplit(s.test, r.new_of[t], lo, hi)};
      info.train_total[type] = s.train.defined() ? s.train.numel() : 0;
    }
  }
  // Link prediction: the split's pairs of owned sources, in source ids.
  for (const auto& [key, split] : ds.edge_splits) {
    if (!ds.PredictsLinks()) continue;  // node classification ignores edge splits
    const int s = g.TypeIndex(g.FindRelation(key)->src_type);
    const int64_t lo = r.bounds[s][p], hi = r.bounds[s][p + 1];
    auto owned = [&](const Tensor& pairs) {
      std::vector<int64_t> mine;
      for (int64_t k = 0; pairs.defined() && k < pairs.dim(0); ++k) {
        const int64_t v = r.new_of[s][pairs.i64()[2 * k]];
        if (v >= lo && v < hi) mine.insert(mine.end(), pairs.i64() + 2 * k, pairs.i64() + 2 * k + 2);
      }
      Tensor out = Tensor::FromVector(mine);
      return out.Reshape({static_cast<int64_t>(mine.size() / 2), 2});
    };
    part.edge_splits[key] = {owned(split.train), owned(split.valid), owned(split.test)};
    info.train_pairs_total[key] = split.train.defined() ? split.train.dim(0) : 0;
  }
  *in_edges = *cut_in_edges = 0;
  // Rows of `full` for the new ids [lo, hi) of its row type, columns renumbered, in source order.
  auto owned_rows = [&](const Csr& full, int row_type, int col_type, int64_t lo, int64_t hi,
                        int64_t* cut) {
    std::vector<int64_t> offsets = {0};
    std::vector<int32_t> cols;
    std::vector<float> vals;
    for (int64_t k = lo; k < hi; ++k) {
      const int64_t v = r.order[row_type][k];
      for (int64_t e = full.row_ptr()[v]; e < full.row_ptr()[v + 1]; ++e) {
        const int32_t u = r.new_of[col_type][full.col()[e]];
        cols.push_back(u);
        *cut += u < r.bounds[col_type][p] || u >= r.bounds[col_type][p + 1];
        if (full.val() != nullptr) vals.push_back(full.val()[e]);
      }
      offsets.push_back(static_cast<int64_t>(cols.size()));
    }
    return Csr::FromVectors(hi - lo, full.num_cols, offsets, cols, vals);
  };
  for (const graph::Relation& rel : g.relations) {
    const int s = g.TypeIndex(rel.src_type), d = g.TypeIndex(rel.dst_type);
    graph::Relation out;
    out.src_type = rel.src_type;
    out.name = rel.name;
    out.dst_type = rel.dst_type;
    out.symmetric = rel.symmetric;
    out.by_dst = owned_rows(rel.by_dst, d, s, r.bounds[d][p], r.bounds[d][p + 1], cut_in_edges);
    *in_edges += out.by_dst.nnz();
    int64_t out_cut = 0;
    out.by_src = rel.symmetric
                     ? out.by_dst
                     : owned_rows(rel.by_src, s, d, r.bounds[s][p], r.bounds[s][p + 1], &out_cut);
    part.graph.relations.push_back(std::move(out));
  }
  if (g.IsHomogeneous()) {  // in-degrees of the foreign in-neighbours
    const Csr& in = g.relations[0].by_dst;
    const Csr& mine = part.graph.relations[0].by_dst;
    const int64_t lo = r.bounds[0][p], hi = r.bounds[0][p + 1];
    std::vector<int64_t> halo;
    for (int64_t e = 0; e < mine.nnz(); ++e) {
      if (mine.col()[e] < lo || mine.col()[e] >= hi) halo.push_back(mine.col()[e]);
    }
    std::sort(halo.begin(), halo.end());
    halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
    std::vector<int64_t> degrees(halo.size());
    for (size_t k = 0; k < halo.size(); ++k) degrees[k] = in.degree(r.order[0][halo[k]]);
    info.halo_ids = Tensor::FromVector(halo);
    info.halo_in_degrees = Tensor::FromVector(degrees);
  }
  return part;
}

absl::Status Invalid(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

}  // namespace

absl::Status WritePartitionedDataset(const graph::Dataset& dataset, const PartitionPlan& plan,
                                     const std::string& source, const std::string& dir) {
  FG_RETURN_IF_ERROR(CheckPlanMatches(plan, dataset));
  // Link prediction: the parts carry the split and only its training edges (what a run on the
  // source dataset trains on); node classification ignores edge splits.
  graph::Dataset links;
  if (dataset.PredictsLinks()) {
    if (dataset.edge_splits.size() != 1) {
      return absl::UnimplementedError(absl::StrCat(
          source, ": has ", dataset.edge_splits.size(),
          " link-prediction splits; a partitioned dataset carries one (keep one split)"));
    }
    links = dataset;
    FG_RETURN_IF_ERROR(graph::KeepTrainingEdges(&links, links.edge_splits.begin()->first));
  }
  const graph::Dataset& ds = dataset.PredictsLinks() ? links : dataset;
  for (const graph::Relation& r : ds.graph.relations) {
    if (r.edge_feat.defined()) {
      return absl::UnimplementedError(absl::StrCat(
          source, ": relation ", r.Key(), " has edge features, which partitioned datasets do not carry yet"));
    }
    if (r.by_dst.has_int64_indices()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": relation ", r.Key(),
                                                     " needs int32 ids (ToInt32Indices)"));
    }
  }
  std::error_code ec;
  FG_RETURN_IF_ERROR(graph::io::RequireNewOrEmptyDirectory("--out", dir));
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("--out ", dir, ": cannot create: ", ec.message()));
  const Renumbering r = Renumber(ds.graph, plan);
  flexgraph::PartitionedDataset meta;
  meta.set_format_version(kPartitionFormatVersion);
  meta.set_name(ds.name);
  meta.set_source(source);
  meta.set_split(ds.split_name);
  for (size_t t = 0; t < ds.graph.node_types.size(); ++t) {
    auto* nt = meta.add_node_types();
    nt->set_name(ds.graph.node_types[t]);
    nt->set_count(ds.graph.num_nodes[t]);
    nt->mutable_bounds()->Add(r.bounds[t].begin(), r.bounds[t].end());
  }
  for (const graph::Relation& rel : ds.graph.relations) {
    meta.add_relations(rel.Key());
    meta.add_relation_edges(rel.by_dst.nnz());
  }
  for (int p = 0; p < plan.num_parts; ++p) {
    int64_t in_edges = 0, cut = 0;
    const graph::Dataset part = MakePart(ds, r, p, &in_edges, &cut);
    FG_RETURN_IF_ERROR(graph::io::WriteCache(part, absl::StrCat(dir, "/", PartFile(p))));
    meta.add_part_files(PartFile(p));
    meta.add_part_in_edges(in_edges);
    meta.add_part_cut_in_edges(cut);
  }
  *meta.mutable_plan() = ToProto(plan);
  meta.mutable_plan()->clear_owner();
  std::string text;
  google::protobuf::TextFormat::PrintToString(meta, &text);
  return graph::io::WriteFileAtomically(absl::StrCat(dir, "/", graph::kPartitionedDatasetMeta), text);
}

bool IsPartitionedDataset(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(absl::StrCat(path, "/", graph::kPartitionedDatasetMeta), ec);
}

absl::StatusOr<flexgraph::PartitionedDataset> ReadPartitionMeta(const std::string& dir) {
  const std::string where = absl::StrCat(dir, "/", graph::kPartitionedDatasetMeta);
  FG_ASSIGN_OR_RETURN(const std::string text, graph::io::ReadFileToString(where));
  return ParsePartitionMeta(text, where);
}

absl::StatusOr<flexgraph::PartitionedDataset> ParsePartitionMeta(const std::string& text,
                                                                 const std::string& where) {
  flexgraph::PartitionedDataset meta;
  FG_RETURN_IF_ERROR(proto::ParseTextProto(text, where, &meta));
  if (meta.format_version() != kPartitionFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(where, ": format_version ", meta.format_version(),
                                                      ", this build reads version ",
                                                      kPartitionFormatVersion));
  }
  const int P = meta.part_files_size();
  if (P < 1) return Invalid(where, "part_files: no parts");
  if (meta.node_types_size() < 1) return Invalid(where, "node_types: none");
  for (const auto& nt : meta.node_types()) {
    bool ok = nt.count() >= 0 && nt.bounds_size() == P + 1 && nt.bounds(0) == 0 &&
              nt.bounds(P) == nt.count();
    for (int p = 0; ok && p < P; ++p) ok = nt.bounds(p) <= nt.bounds(p + 1);
    if (!ok) {
      return Invalid(where, absl::StrCat("node type '", nt.name(), "': bounds must be ", P + 1,
                                         " ascending ids from 0 to its count ", nt.count()));
    }
  }
  for (const std::string& f : meta.part_files()) {
    if (f.empty() || f.find('/') != std::string::npos || f[0] == '.') {
      return Invalid(where, absl::StrCat("part_files: '", f, "' is not a plain file name"));
    }
  }
  if (meta.part_in_edges_size() != P || meta.part_cut_in_edges_size() != P) {
    return Invalid(where, absl::StrCat("part_in_edges and part_cut_in_edges need one entry per part (", P, ")"));
  }
  if (meta.relation_edges_size() != meta.relations_size()) {
    return Invalid(where, "relation_edges needs one entry per relation");
  }
  return meta;
}

absl::StatusOr<graph::Dataset> LoadPart(const std::string& dir, int index) {
  FG_ASSIGN_OR_RETURN(const flexgraph::PartitionedDataset meta, ReadPartitionMeta(dir));
  if (index < 0 || index >= meta.part_files_size()) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": has ", meta.part_files_size(),
                                                   " parts; there is no part ", index));
  }
  const std::string file = absl::StrCat(dir, "/", meta.part_files(index));
  FG_ASSIGN_OR_RETURN(graph::Dataset part, graph::io::ReadCache(file));
  auto mismatch = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat(file, ": does not match ", dir, "/", graph::kPartitionedDatasetMeta,
                                            ": ", what));
  };
  if (!part.part) return mismatch("not a part");
  if (part.part->index != index) return mismatch(absl::StrCat("it is part ", part.part->index));
  if (part.part->num_parts() != meta.part_files_size()) {
    return mismatch(absl::StrCat("it is one of ", part.part->num_parts(), " parts"));
  }
  const graph::HeteroGraph& g = part.graph;
  if (static_cast<int>(g.node_types.size()) != meta.node_types_size()) return mismatch("node types");
  for (int t = 0; t < meta.node_types_size(); ++t) {
    const auto& nt = meta.node_types(t);
    if (g.node_types[t] != nt.name() || g.num_nodes[t] != nt.count() ||
        !std::equal(part.part->bounds[t].begin(), part.part->bounds[t].end(), nt.bounds().begin(),
                    nt.bounds().end())) {
      return mismatch(absl::StrCat("node type '", nt.name(), "' (name, count or bounds)"));
    }
  }
  if (static_cast<int>(g.relations.size()) != meta.relations_size()) return mismatch("relations");
  for (int i = 0; i < meta.relations_size(); ++i) {
    if (g.relations[i].Key() != meta.relations(i)) return mismatch(absl::StrCat("relation ", i));
  }
  part.part->relation_edges.assign(meta.relation_edges().begin(), meta.relation_edges().end());
  return part;
}

std::string DescribePartitioned(const flexgraph::PartitionedDataset& meta) {
  const int P = meta.part_files_size();
  std::string out = absl::StrFormat("%s: partitioned dataset, %d parts (method %s, model %s), from %s\n",
                                    meta.name(), P, meta.plan().method(), meta.plan().model(),
                                    meta.source());
  for (const auto& nt : meta.node_types()) {
    absl::StrAppendFormat(&out, "  node type %-12s %lld vertices\n", nt.name(),
                          static_cast<long long>(nt.count()));
  }
  for (int i = 0; i < meta.relations_size(); ++i) {
    absl::StrAppendFormat(&out, "  relation %s: %lld edges\n", meta.relations(i),
                          static_cast<long long>(meta.relation_edges(i)));
  }
  absl::StrAppendFormat(&out, "  %-6s %12s %12s %14s  %s\n", "part", "vertices", "in-edges",
                        "cut in-edges", "file");
  int64_t edges = 0, cut = 0;
  for (int p = 0; p < P; ++p) {
    int64_t vertices = 0;
    for (const auto& nt : meta.node_types()) vertices += nt.bounds(p + 1) - nt.bounds(p);
    edges += meta.part_in_edges(p);
    cut += meta.part_cut_in_edges(p);
    absl::StrAppendFormat(&out, "  %-6d %12lld %12lld %14lld  %s\n", p, static_cast<long long>(vertices),
                          static_cast<long long>(meta.part_in_edges(p)),
                          static_cast<long long>(meta.part_cut_in_edges(p)), meta.part_files(p));
  }
  absl::StrAppendFormat(&out, "  edge cut: %lld of %lld in-edges (%.1f%%); estimated imbalance %.3f\n",
                        static_cast<long long>(cut), static_cast<long long>(edges),
                        edges > 0 ? 100.0 * cut / edges : 0.0, meta.plan().imbalance());
  return out;
}

}  // namespace fg::partition
