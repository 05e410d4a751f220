// The NCCL backend's entry points in a build without NCCL.
#include "runtime/comm/nccl_communicator.h"

namespace fg::runtime {

bool NcclBuilt() { return false; }

absl::StatusOr<std::unique_ptr<Communicator>> MakeNcclCommunicator(std::unique_ptr<Communicator>) {
  return absl::FailedPreconditionError(
      "this flexgraph was built without NCCL (it comes with the CUDA toolkit: configure where nvcc and NCCL are found)");
}

}  // namespace fg::runtime
