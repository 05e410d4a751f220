// Collectives over point-to-point messages, the default implementations of Communicator's
// collectives (a backend with native ones overrides those; callers use the Communicator methods):
// a ring all-reduce over one flattened float buffer (gradients), a small all-reduce of doubles
// (metrics), a barrier, a broadcast and an all-to-all. Every worker must call the
// same collectives in the same order with the same `epoch` (< 2^22) and `step` (< 2^10). The
// collective, `epoch` and `step` name one call; its messages differ only in their round number,
// which has a tag field of its own (layout in communicator.h). Reuse a name only once every
// worker has returned from the earlier call with it. Errors name the peer.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/comm/communicator.h"

namespace fg::runtime {

// Sums `data` (n floats) across workers in place: reduce-scatter then all-gather around the ring,
// 2(P-1) steps of about n/P floats per worker, each step's chunk cut into segments of about
// kRingSegmentFloats that travel as messages of their own (round = step x segments + segment), so
// that a segment is passed on while the next one arrives. Every worker ends with identical values.
// At most kMaxRingWorkers workers.
inline constexpr int kMaxRingWorkers = 1 << 16;
inline constexpr int64_t kRingSegmentFloats = int64_t{1} << 18;  // 1 MiB
static_assert(2 * kMaxRingWorkers - 3 <= kMaxTagRound);
absl::Status RingAllReduce(Communicator& comm, float* data, int64_t n, int epoch, int step);

// Sums a short vector of doubles across workers (each sends its vector to every peer; every
// worker adds them in rank order, so all get bitwise identical sums).
absl::Status AllReduceDoubles(Communicator& comm, std::vector<double>* values, int epoch, int step);

absl::Status BarrierOverMessages(Communicator& comm, int epoch, int step);

// Worker `root`'s payload sent to every other worker.
absl::Status BroadcastOverMessages(Communicator& comm, std::string* payload, int root, int epoch, int step,
                                   TrafficKind kind = TrafficKind::kControl);

// Every worker sends send[q] to worker q, then receives from each in rank order.
absl::StatusOr<std::vector<std::string>> AllToAllVOverMessages(Communicator& comm,
                                                              std::vector<std::string> send,
                                                              uint64_t tag);
// StartAllToAllV (communicator.h) as one Send per peer with bytes for it and one Recv per peer
// with bytes to receive (at Finish).
std::unique_ptr<Communicator::PendingAllToAllV> StartAllToAllVOverMessages(Communicator& comm,
                                                                           const Communicator::PartFn& part,
                                                                           std::vector<int64_t> recv_bytes,
                                                                           uint64_t tag);

}  // namespace fg::runtime
