// Edge-state layers that aggregate each edge into both of its ends (ag::EdgeSide::kBoth, the
// interaction model's edges=once) across workers. An edge's state is computed where its
// destination lives (row fetch of the source's row), so the states of the edges whose source
// another worker owns travel to that worker, which reduces them together with its own edges'
// states at each of its vertices. Thread-compatible; planning is collective.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/autograd/edge_functions.h"
#include "flexgraph/autograd/var.h"
#include "hdg/hdg.h"
#include "runtime/distributed/exchange.h"

namespace fg::runtime {

struct EdgeReturn {
  // The states sent and received (PostRows / ReceiveRows): an owned row is one of my entries;
  // ghost slots are the peers' entries whose source I own, peer by peer in rank order.
  LayerExchange rows;
  // Per owned vertex, the rows of [my entries' states | received states] whose source it is:
  // rows order[offsets[v] .. offsets[v + 1]) (my entries first, in entry order).
  Tensor offsets, order;
};

// For a layer's local HDG (LayerExchange::local_hdg: one level, children in [owned | ghosts],
// num_owned owned rows with sorted global ids `owned_ids`, ghosts' ids `ghost_ids`), the states'
// way back to their sources' owners. `layer` and `epoch` name its messages (the tags' step 1).
// Errors: a peer's damaged list, named by the worker. Collective: every worker plans the layer.
absl::StatusOr<EdgeReturn> BuildEdgeReturn(Communicator& comm, const hdg::Hdg& local_hdg, int64_t num_owned,
                                           const Tensor& owned_ids, const Tensor& ghost_ids,
                                           const Ownership& owners, int layer, int epoch);

// The source side of a both-ends aggregation: `states` [my entries, d] reduced by `reduce` at
// each owned vertex over the edges it is the source of, wherever their states were computed
// ([num_owned, R d]); differentiable. Collective: every worker calls it for the layer.
ag::Var AggregateAtSources(ExchangeContext& ctx, const EdgeReturn& r, const ag::Var& states,
                           const std::vector<ag::EdgeReduce>& reduce);

}  // namespace fg::runtime
