// Mini-batch sampling over a partitioned dataset: each worker samples the batches of its own
// training vertices while holding only its part. Per layer, every frontier vertex is drawn by its
// owner — one batched request and one reply per peer — with the keys a single process uses (the
// source dataset's ids), so that every sampled row equals the single-process one; then the input
// rows' features and keys come from their owners in one all-to-all per bulk.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/communicator.h"
#include "runtime/exchange.h"
#include "sampling/sampler.h"

namespace fg::runtime {

// This worker's vertices of a partitioned homogeneous dataset, as the other workers' samplers read
// them.
struct OwnedRows {
  int64_t begin = 0;  // global id of the first owned vertex (owned ids are contiguous)
  Tensor features;    // float [owned, f]
  Tensor keys;        // int64 [owned]: randomness keys (source-dataset ids)
};

// sampling::SampleBulk (node-wise) across the parts: batches first_index, first_index + 1, ...
// of `epoch`, whose seeds on this worker are `seeds` (global ids, any owner). `layers` hold this
// worker's rows (its own vertices, keyed by source ids). The batches carry MiniBatch::inputs and
// ::keys. `bulk` numbers the call within the epoch (message tags). Errors name the worker, layer
// or vertex. Collective: every worker calls it for the same bulk at the same time, from one
// thread at a time; it sends point-to-point messages only, so it may run beside the training
// thread's collectives.
absl::StatusOr<std::vector<sampling::MiniBatch>> SampleAcrossParts(
    Communicator& comm, const Ownership& owners, const OwnedRows& mine,
    const std::vector<const sampling::NeighbourhoodMatrix*>& layers,
    const sampling::SamplerOptions& options, int epoch, int64_t bulk, int64_t first_index,
    const std::vector<Tensor>& seeds);

// Every worker's `mine` (int64), joined in rank order: what a worker learns of the others'
// training items. Collective, on the calling thread.
absl::StatusOr<std::vector<int64_t>> GatherInt64(Communicator& comm, const std::vector<int64_t>& mine);

}  // namespace fg::runtime
