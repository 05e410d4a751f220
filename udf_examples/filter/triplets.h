// Triplet features of a tracking graph set's edges, for the edge filter (filter.cc): how well the
// best edge continuing an edge through each of its hits agrees with it. Edges are stored inner ->
// outer (flexgraph/graph/tracking.h), so an edge k = (a, b) continues inwards in the stored edges
// (z, a) and outwards in the stored edges (b, c); of each side's edges the best is the one with
// the smallest (d_phi_slope / kSlopeScale)^2 + (d_dzdr / kDzdrScale)^2, where d_phi_slope is the
// difference of the edges' phi slopes (edge feature 4, rad/m) and d_dzdr that of their dz / dr
// (features 2 / 0). A true edge of a particle that left hits on three consecutive layers has a
// continuation that agrees within multiple scattering; a fake edge of a dense event mostly has
// none (the GNN4ITk module map's triplet cuts use the same quantities, as fixed windows).
// Thread-safe: a function of its arguments (parallel over edges).
#pragma once

#include "flexgraph/graph/dataset.h"
#include "flexgraph/tensor/tensor.h"

namespace fg::udf {

inline constexpr float kSlopeScale = 0.03f;  // rad/m
inline constexpr float kDzdrScale = 0.02f;
// A side without a continuing edge: its scaled differences are this, its flag 0; larger
// differences are clipped to it.
inline constexpr float kNoContinuation = 10.0f;
inline constexpr int64_t kTripletFeatures = 6;

// float [M, 6] for the M edges of `gs` (the union graph `a`, its in-edge Csr with reverse edges,
// and entry_edges): per edge, (inner d_phi_slope / kSlopeScale, inner d_dzdr / kDzdrScale, 1 when
// an inner continuation exists, then the same three for the outer side); the differences are the
// best continuation's value minus the edge's, clipped to +-kNoContinuation. Needs edge_feat of
// the tracking layout (6 columns); FG_CHECK otherwise.
Tensor TripletFeatures(const graph::GraphSet& gs, const Csr& a);

}  // namespace fg::udf
