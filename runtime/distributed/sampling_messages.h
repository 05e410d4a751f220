// Internal to the distributed samplers (distributed_sampling.cc, layer_wise_sampling.cc): the tags
// of their messages and their all-to-all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/comm/communicator.h"
#include "runtime/distributed/exchange.h"
#include "runtime/distributed/remote_caches.h"
#include "sampling/sampler.h"

namespace fg::runtime::sampling_messages {

// Tags: the selection phase (distributed_selection.cc uses steps 0 to 5), the bulk in the round.
inline constexpr int kPhaseSampling = 13;
inline constexpr int kStepRowRequest = 8, kStepRowReply = 9, kStepInputRequest = 10, kStepInputReply = 11,
                     kStepGather = 12, kStepLeaderSeeds = 13, kStepLeaderRows = 14;

uint64_t Tag(int epoch, int layer, TrafficKind kind, int step, int64_t bulk);

// Whether a peer's per-batch counts split exactly `items` items: none negative, `batches` of them.
inline bool CountsSplit(const std::vector<int64_t>& counts, size_t batches, size_t items) {
  if (counts.size() != batches) return false;
  uint64_t total = 0;
  for (int64_t c : counts) {
    if (c < 0 || static_cast<uint64_t>(c) > items) return false;
    total += static_cast<uint64_t>(c);
  }
  return total == items;
}

// AllToAllVOverMessages (point to point only, beside the training thread's collectives), its
// errors (which name the worker) prefixed with `what`.
absl::StatusOr<std::vector<std::string>> Exchange(Communicator& comm, std::vector<std::string> parts,
                                                  uint64_t tag, const std::string& what);

// The rows of `a` (this worker's part) of every vertex of `frontier`, from their owners (this
// worker's from `a`, and those `cache` keeps from it; null: none), gathered: rows[i][j] is
// frontier[i][j]'s row there. `epoch`, `layer` and `bulk` name the messages. Collective.
absl::Status FetchRows(Communicator& comm, const Ownership& owners, const sampling::NeighbourhoodMatrix& a,
                       int epoch, int layer, int64_t bulk, const std::vector<std::vector<int64_t>>& frontier,
                       RemoteNeighbourhoodCache* cache, sampling::GatheredRows* gathered,
                       std::vector<std::vector<int64_t>>* rows);

}  // namespace fg::runtime::sampling_messages
