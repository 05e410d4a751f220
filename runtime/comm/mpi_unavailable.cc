// The MPI backend's entry points in a build without MPI: each says how to get it.
#include <cstdlib>

#include "runtime/comm/mpi_communicator.h"

namespace fg::runtime {

bool MpiBuilt() { return false; }

absl::StatusOr<std::unique_ptr<Communicator>> MakeMpiCommunicator() {
  return absl::FailedPreconditionError(
      "this flexgraph was built without MPI: install libopenmpi-dev and configure with -DFLEXGRAPH_MPI=ON");
}

absl::Status FinishMpi(std::unique_ptr<Communicator>) { return absl::OkStatus(); }

void AbortMpi(int exit_code) { std::_Exit(exit_code); }

}  // namespace fg::runtime
