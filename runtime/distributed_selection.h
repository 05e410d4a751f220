// Random-walk selections over a partitioned dataset (nau/walk.h), run bulk-synchronously across
// the workers: in every step each worker advances the walkers standing on its own vertices until
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
#include "runtime/communicator.h"
#include "runtime/exchange.h"

namespace fg::runtime {

// The HDG of `roots` (this worker's, ascending global ids) for a layer whose selection is
// `walks`. `ctx` is the layer's selection context on this worker's part. Collective: every worker
// calls it for the same layer and round at the same time.
absl::StatusOr<hdg::Hdg> SelectByWalks(Communicator& comm, const Ownership& owners,
                                       const nau::WalkSelection& walks,
                                       const nau::SelectContext& ctx, const hdg::SchemaTree& schema,
                                       int64_t num_vertices, const std::vector<int32_t>& roots);

}  // namespace fg::runtime
