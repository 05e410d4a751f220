// MPI backend of the Communicator (built where MPI is found, FLEXGRAPH_MPI=AUTO|ON|OFF): ranks are
// MPI_COMM_WORLD's. Point-to-point messages carry their 64-bit tag in a header under one MPI tag
// (MPI guarantees tags only up to 32767) and are received by a progress thread into a Mailbox, so
// Recv has the same timeout and error semantics as every other backend. The collectives are MPI's
// own (MPI_Allreduce, MPI_Bcast, MPI_Barrier, MPI_Alltoallv) on a communicator of their own; they
// have no timeout: a rank that dies makes mpirun (or srun) end the others. Split is MPI_Comm_split:
// a group is an MpiCommunicator of its own over the new MPI communicator (its own progress thread;
// destroy groups before FinishMpi).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "runtime/comm/communicator.h"

namespace fg::runtime {

// Whether this build has the MPI backend.
bool MpiBuilt();

// Initialises MPI (MPI_THREAD_MULTIPLE) once per process and returns a communicator over
// MPI_COMM_WORLD. Fails with the reason when MPI is not built in or lacks thread support.
absl::StatusOr<std::unique_ptr<Communicator>> MakeMpiCommunicator();

// Completes this rank's outstanding sends (every rank calls it: it ends with a barrier), stops the
// communicator and finalises MPI. Call after the last collective of a successful run.
absl::Status FinishMpi(std::unique_ptr<Communicator> comm);

// Ends every rank of the run now (MPI_Abort) with `exit_code`: the way a failed rank stops the others.
[[noreturn]] void AbortMpi(int exit_code);

}  // namespace fg::runtime
