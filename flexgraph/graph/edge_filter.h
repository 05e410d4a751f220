// The filter stage of an edge-classification pipeline (Exa.TrkX: a cheap edge classifier keeps
// the candidate edges above a low cut before the GNN): a graph set reduced to the edges a filter
// keeps, with everything else carried over, and the cut that keeps a chosen fraction of the true
// edges. Thread-safe: functions of their arguments.
//
// What the filtered dataset keeps: every graph, vertex, feature, node_info column, particle and
// the split of whole graphs as they are; of the edges, those kept (in their order) with their
// features and labels; the union graph rebuilt as the source's was (reverse edges when it has
// them). The true edges (label 1) the filter dropped are not forgotten: node_info column
// kHitDroppedTrueEdges counts, per vertex, the dropped true edges whose source (edge[k][0]; for
// tracking, the inner hit) it is, added to the column's earlier counts when the source was
// itself filtered. Edge efficiency over the whole pipeline is then kept true edges over (true
// edges + the column's sum) (track_building.h's MeasureTracks counts it so).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"

namespace fg::graph {

// node_info column (int64 per vertex): true edges dropped by earlier filter stages, counted at
// their source vertex.
inline constexpr char kHitDroppedTrueEdges[] = "dropped_true_edges";

// The graph set `ds` with only the edges k whose keep[k] is non-zero (keep: one entry per
// original edge). Errors: not a graph set, `keep` of the wrong size, or edge labels not binary
// (one task, classes 0 and 1; -1 unlabeled) when there are labels. Validated (ValidateGraphSet).
absl::StatusOr<Dataset> FilterGraphSetEdges(const Dataset& ds, const std::vector<uint8_t>& keep);

// Per graph: the true edges dropped by earlier stages (the column's sum over its vertices; 0
// without the column).
std::vector<int64_t> DroppedTrueEdgesPerGraph(const GraphSet& gs);

// The highest cut c such that, over the edges of `graphs` labelled 1 with a defined score, the
// fraction with score > c is at least `efficiency` (in (0, 1]); scores: one per edge of `ds`.
// Errors: no true edges among those graphs (naming the count of graphs), efficiency out of range.
absl::StatusOr<double> CutForEfficiency(const GraphSet& gs, const std::vector<float>& scores,
                                        const std::vector<int64_t>& graphs, double efficiency);

}  // namespace fg::graph
