#include "partition/union_graph.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/builder.h"

namespace fg::partition {

std::vector<int64_t> TypeOffsets(const graph::HeteroGraph& g) {
  std::vector<int64_t> offsets{0};
  for (int64_t n : g.num_nodes) offsets.push_back(offsets.back() + n);
  return offsets;
}

absl::StatusOr<Csr> BuildUnionGraph(const graph::HeteroGraph& g) {
  const std::vector<int64_t> offsets = TypeOffsets(g);
  const int64_t n = offsets.back();
  constexpr int64_t kIdxMax = std::numeric_limits<int32_t>::max();
  if (n > kIdxMax) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph has ", n, " vertices; partitioning supports at most ", kIdxMax));
  }
  // Each undirected edge once (u < v); BuildCsr adds the reverse and drops duplicates.
  std::vector<int64_t> src, dst;
  for (const graph::Relation& rel : g.relations) {
    const int ts = g.TypeIndex(rel.src_type), td = g.TypeIndex(rel.dst_type);
    if (ts < 0 || td < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("relation ", rel.Key(), " names a node type the graph does not have"));
    }
    // Either direction holds every edge: by_src, or by_dst where a relation keeps only that one
    // (a batch of graphs).
    const bool by_src = rel.by_src.offsets.defined();
    const Csr& a = by_src ? rel.by_src : rel.by_dst;
    const int64_t row_base = offsets[by_src ? ts : td], col_base = offsets[by_src ? td : ts];
    const int64_t* rp = a.row_ptr();
    a.VisitIndices([&](const auto* col) {
      for (int64_t r = 0; r < a.num_rows; ++r) {
        const int64_t u = row_base + r;
        for (int64_t e = rp[r]; e < rp[r + 1]; ++e) {
          const int64_t v = col_base + col[e];
          if (u == v) continue;
          src.push_back(std::min(u, v));
          dst.push_back(std::max(u, v));
        }
      }
    });
  }
  graph::CsrBuildOptions options{.deduplicate = true, .remove_self_loops = true,
                                 .add_reverse_edges = true};
  FG_ASSIGN_OR_RETURN(Csr csr, graph::BuildCsr(n, n, src.data(), dst.data(),
                                               static_cast<int64_t>(src.size()), nullptr, options));
  if (csr.nnz() > kIdxMax) {
    return absl::InvalidArgumentError(absl::StrCat("union graph has ", csr.nnz(),
                                                   " adjacency entries; partitioning supports at most ",
                                                   kIdxMax, " (METIS idx_t is 32-bit)"));
  }
  return csr;
}

}  // namespace fg::partition
