// The union graph of a dataset: every relation's edges as one undirected graph over the unified
// vertex space (nau::VertexSpace: node types laid out one after the other), without self loops or
// duplicates. It is what METIS partitions and what edge cuts and per-part edge counts refer to.
// Thread-safe: functions have no shared state.
//
//   FG_ASSIGN_OR_RETURN(Csr g, BuildUnionGraph(dataset.graph));  // symmetric, rows sorted
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/hetero_graph.h"

namespace fg::partition {

// Offsets of each node type in the unified vertex space (size num_types + 1).
std::vector<int64_t> TypeOffsets(const graph::HeteroGraph& g);

// The symmetric union graph [N x N], N = total nodes; each undirected edge {u, v} appears as u -> v
// and v -> u, rows sorted. No values. Errors when N or the entry count exceed int32 (METIS idx_t).
absl::StatusOr<Csr> BuildUnionGraph(const graph::HeteroGraph& g);

}  // namespace fg::partition
