// Builders that turn edge lists into Csr matrices and relations: deduplicate, drop or add self
// loops, add reverse edges, sort each row's neighbours. Parallel and deterministic: the output
// never depends on the thread count (entries are ordered by (column, original edge id)).
// Column ids are int32 unless a node type has more than 2^31 - 1 nodes or int64 ids are asked for;
// int32 builds handle fewer than 2^32 entries (including reverse edges), int64 builds any number.
// Thread-safe: no shared state.
//
//   // in-edge Csr of an undirected graph listed once per edge: rows = destinations
//   CsrBuildOptions opt{.deduplicate = true, .remove_self_loops = true, .add_reverse_edges = true};
//   FG_ASSIGN_OR_RETURN(Csr adj, BuildCsr(n, n, dst.data(), src.data(), m, nullptr, opt));
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/hetero_graph.h"

namespace fg::graph {

struct CsrBuildOptions {
  bool deduplicate = true;          // keep the first of equal (row, column) entries
  bool remove_self_loops = false;   // drop entries with row == column
  bool add_self_loops = false;      // then give every row exactly one loop (square only)
  bool add_reverse_edges = false;   // also insert (column, row) for every edge (square only)
  bool int64_indices = false;       // int64 column ids even when int32 would do
};

// The options LoadOptions imply for homogeneous graphs (deduplicate, self loops, reverse edges).
CsrBuildOptions HomogeneousBuildOptions(const LoadOptions& options);

// Entry ids recorded by BuildCsr: for edge k of m, k itself; for its reverse, m + k; added self
// loops get kAddedLoop.
inline constexpr int64_t kAddedLoop = -1;

// Builds a num_rows x num_cols Csr from m entries (rows[k], cols[k]) with optional weights
// (values of reverse entries copy their edge's weight; added loops weigh 1). Ids outside the
// matrix are an InvalidArgument error naming the edge. `entry_ids` (optional) receives int64 [nnz]
// original entry ids as described above.
absl::StatusOr<Csr> BuildCsr(int64_t num_rows, int64_t num_cols, const int64_t* rows,
                             const int64_t* cols, int64_t m, const float* weights,
                             const CsrBuildOptions& options, Tensor* entry_ids = nullptr);

// Builds a relation from m edges src[k] -> dst[k]: by_src (rows = sources) and by_dst (rows =
// destinations, the transpose). With add_reverse_edges (src_type == dst_type) both directions are
// the same symmetric Csr and share storage. `edge_feat` ([m, f] float, optional) is permuted into
// by_src entry order (reverse entries copy their edge's row; added loops get zeros).
absl::StatusOr<Relation> BuildRelation(const std::string& src_type, const std::string& name,
                                       const std::string& dst_type, int64_t num_src,
                                       int64_t num_dst, const int64_t* src, const int64_t* dst,
                                       int64_t m, const float* weights, const Tensor& edge_feat,
                                       const CsrBuildOptions& options);

// A homogeneous graph: node type "node" with n nodes and relation "node___edge___node" built from
// m edges src[k] -> dst[k] as BuildRelation does.
absl::StatusOr<HeteroGraph> BuildHomogeneousGraph(int64_t n, const int64_t* src, const int64_t* dst,
                                                  int64_t m, const Tensor& edge_feat,
                                                  const CsrBuildOptions& options);

// Gathers rows of `table` ([m, f] float) by entry ids from BuildCsr (id mod m; kAddedLoop -> 0).
Tensor GatherEntryRows(const Tensor& table, const Tensor& entry_ids, int64_t m);

}  // namespace fg::graph
