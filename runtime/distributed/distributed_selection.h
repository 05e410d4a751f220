// Selections that reach other parts of a partitioned dataset, run bulk-synchronously across the
// workers, one batched message per peer and step.
//
// Random walks (nau/walk.h): in every step each worker advances the walkers standing on its own vertices until
// they leave them, then sends every peer, in one message, the walkers that now stand on the
// peer's vertices and the visits of the peer's roots. The walks end when no walker moved; the
// roots' owners then learn the source ids of the foreign vertices their roots visited (which order
// ties) and write the HDG. Walkers carry their place in their root's random stream, so the HDG is
// the one a single process would select on the source dataset.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "hdg/hdg.h"
#include "nau/layer.h"
#include "runtime/comm/communicator.h"
#include "runtime/distributed/exchange.h"

namespace fg::runtime {

// The HDG of `roots` (this worker's, ascending global ids) for a layer whose selection is
// `walks`. `ctx` is the layer's selection context on this worker's part. Collective: every worker
// calls it for the same layer and round at the same time.
absl::StatusOr<hdg::Hdg> SelectByWalks(Communicator& comm, const Ownership& owners,
                                       const nau::WalkSelection& walks,
                                       const nau::SelectContext& ctx, const hdg::SchemaTree& schema,
                                       int64_t num_vertices, const std::vector<int32_t>& roots);

// Metapath instances (nau/metapath.h): first every worker counts, for each metapath and position,
// the instance suffixes at its own vertices (a sparse-matrix product per position over the
// row-partitioned adjacency, the foreign neighbours' counts fetched from their owners); then each
// root's owner picks instance indices (all, or a sample drawn from the root's stream) and every
// instance is decoded step by step at the owner of its current vertex, travelling as a partial
// path. The instances return to the root's owner in the single-process order.
absl::StatusOr<hdg::Hdg> SelectByMetapaths(Communicator& comm, const Ownership& owners,
                                           const nau::MetapathSelection& selection,
                                           const nau::SelectContext& ctx,
                                           const hdg::SchemaTree& schema, int64_t num_vertices,
                                           const std::vector<int32_t>& roots);

}  // namespace fg::runtime
