// Mini-batch sampling over a partitioned dataset: each worker samples the batches of its own
// training vertices while holding only its part (node-wise, LADIES and ShaDow). Per layer, every frontier vertex is drawn by its
// owner — one batched request and one reply per peer — with the keys a single process uses (the
// source dataset's ids), so that every sampled row equals the single-process one; then the input
// rows' features and keys come from their owners in one all-to-all per bulk.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/comm/communicator.h"
#include "runtime/distributed/exchange.h"
#include "runtime/distributed/remote_caches.h"
#include "sampling/sampler.h"

namespace fg::runtime {

// This worker's vertices of a partitioned homogeneous dataset, as the other workers' samplers read
// them.
struct OwnedRows {
  int64_t begin = 0;  // global id of the first owned vertex (owned ids are contiguous)
  Tensor features;    // float [owned, f]
  Tensor keys;        // int64 [owned]: randomness keys (source-dataset ids)
};

// sampling::SampleBulk across the parts (layer-wise: SampleLayerWiseAcrossWorkers): batches
// first_index, first_index + 1, ... of `epoch`, whose seeds on this worker are `seeds` (global
// ids, any owner; ShaDow: this worker's own, each subgraph's hops drawn by the frontier's owners,
// the induced subgraphs' rows fetched from theirs). A negative `epoch` (ShaDow's evaluation draws)
// keys the draws; its messages are named as epoch 0's. `layers` hold this worker's rows (its own vertices, keyed by source ids). The
// batches carry MiniBatch::inputs and ::keys. `bulk` numbers the call within the epoch (message tags). Errors name the worker, layer
// or vertex. Collective: every worker calls it for the same bulk at the same time, from one
// thread at a time; it sends point-to-point messages only, so it may run beside the training
// thread's collectives. Input rows in `cache` (null: none) are read from it, and it keeps rows it
// chose; so does `neighbourhoods` (null: none) with the rows LADIES leaders fetch.
absl::StatusOr<std::vector<sampling::MiniBatch>> SampleAcrossParts(
    Communicator& comm, const Ownership& owners, const OwnedRows& mine,
    const std::vector<const sampling::NeighbourhoodMatrix*>& layers,
    const sampling::SamplerOptions& options, int epoch, int64_t bulk, int64_t first_index,
    const std::vector<Tensor>& seeds, RemoteRowCache* cache = nullptr,
    RemoteNeighbourhoodCache* neighbourhoods = nullptr);

// Layer-wise (LADIES) sampling across workers; it draws each layer over all of a batch's rows.
// Batch first_index + k is drawn whole by its leader, worker (first_index + k) % P, over every
// worker's seeds of it (this worker's: seeds[k], whose randomness keys seed_keys[k] give the order
// a single process gives them); the leader sends every worker the rows it drew, and each keeps what
// its own seeds reach: its batches are the single-process ones cut to its seeds. The leader reads
// its frontier's rows from `layers` where `owners` is null (every worker holds the whole graph),
// else from their owners (a partitioned dataset; `layers` hold this worker's rows), except those
// `cache` (null: none) keeps, which it also counts and keeps. Collective, as SampleAcrossParts;
// errors name the worker, layer or vertex.
absl::StatusOr<std::vector<sampling::MiniBatch>> SampleLayerWiseAcrossWorkers(
    Communicator& comm, const Ownership* owners, const std::vector<const sampling::NeighbourhoodMatrix*>& layers,
    const sampling::SamplerOptions& options, int epoch, int64_t bulk, int64_t first_index,
    const std::vector<Tensor>& seeds, const std::vector<Tensor>& seed_keys,
    RemoteNeighbourhoodCache* cache = nullptr);

// Every worker's `mine` (int64), joined in rank order: what a worker learns of the others'
// training items. Collective, on the calling thread.
absl::StatusOr<std::vector<int64_t>> GatherInt64(Communicator& comm, const std::vector<int64_t>& mine);

}  // namespace fg::runtime
