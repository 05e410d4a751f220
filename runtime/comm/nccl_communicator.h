// NCCL backend for GPU buffers (built where the CUDA toolkit ships NCCL: FLEXGRAPH_HAVE_NCCL).
// It wraps a host communicator (gRPC or MPI), which bootstraps it — rank 0's ncclUniqueId is
// broadcast through it — and keeps carrying the point-to-point messages and host collectives;
// AllReduceOnDevice runs ncclAllReduce on the caller's stream. Split returns the host's groups,
// each with its own NCCL communicator (ncclCommSplit; before NCCL 2.18 one bootstrapped through
// the group), so that device collectives run per group too. NCCL needs one GPU per rank: a
// worker uses device rank % device count, and two ranks on one device are refused by name.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "runtime/comm/communicator.h"

namespace fg::runtime {

// Whether this build has the NCCL backend.
bool NcclBuilt();

// Collective over `host`'s workers (every worker calls it, after `host` is connected).
absl::StatusOr<std::unique_ptr<Communicator>> MakeNcclCommunicator(std::unique_ptr<Communicator> host);

}  // namespace fg::runtime
