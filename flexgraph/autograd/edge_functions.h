// Differentiable edge functions: the edge input of an edge-state layer and the aggregation of
// edge messages into vertices (DESIGN.md, "Edges are first-class"). `a` is an in-edge structure
// (rows = destinations, columns = sources); entry k of `a` is one edge. Thread-compatible.
//
//   Var in = ag::EdgeInput(adj, h, h, e);                       // [nnz, 2d + de]
//   Var m = edge_mlp.Forward(in);                               // [nnz, de']
//   Var agg = ag::AggregateEdges(adj, m, {EdgeReduce::kSum, EdgeReduce::kMax},
//                                EdgeSide::kDestination);      // [rows, 2 de']
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/autograd/var.h"
#include "flexgraph/tensor/csr.h"

namespace fg::ag {

// [xs[col(k)] | xd[row(k)] | e[k]] per entry k (ops::EdgeInput); e may be undefined. Gradients
// flow to xs (summed over each source's entries), xd (over each destination's) and e.
Var EdgeInput(const SparseMatrixPtr& a, const Var& xs, const Var& xd, const Var& e);

// Standard deviation of each segment's rows per column, sqrt(var + eps) (ops::SegmentStd).
Var SegmentStd(const Tensor& offsets, const Var& x, float eps = 1e-5f);

enum class EdgeReduce { kSum, kMean, kMax, kStd };
// Which end of its edge a message is aggregated into.
enum class EdgeSide { kDestination, kSource, kBoth };
const char* EdgeReduceName(EdgeReduce r);
// Parses a comma-separated list of "sum", "mean", "max", "std" (at least one, no repeats). Errors
// name the offending word and `what` (the option or field being parsed).
absl::StatusOr<std::vector<EdgeReduce>> ParseEdgeReductions(const std::string& text,
                                                            const std::string& what);

// Edge messages m [nnz, d] aggregated into vertices, one block of d columns per reduction in
// `reduce`, in order: kDestination, per row over its entries ([rows, R d]); kSource, per column
// over its entries ([cols, R d]); kBoth, the destination blocks then the source blocks
// ([rows, 2 R d]; requires rows == cols). Empty groups give 0 (std: sqrt(eps)).
Var AggregateEdges(const SparseMatrixPtr& a, const Var& m, const std::vector<EdgeReduce>& reduce,
                   EdgeSide side = EdgeSide::kDestination);

// Messages m [n, d] reduced in groups: group g holds rows order[offsets[g] .. offsets[g + 1]) of
// m (int32 order, int64 offsets [groups + 1]), one block of d columns per reduction ([groups, R d]);
// AggregateEdges' source side is the groups of a's transpose.
Var AggregateEdgeGroups(const Tensor& offsets, const Tensor& order, const Var& m,
                        const std::vector<EdgeReduce>& reduce);

}  // namespace fg::ag
