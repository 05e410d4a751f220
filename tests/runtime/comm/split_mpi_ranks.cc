// One MPI rank of Split.OverMpiRanksWithMpiCommSplit (split_test.cc): `split_mpi_ranks PR PC` under
// mpirun -np PR*PC runs split_checks.h over MPI_COMM_WORLD and prints "rank R of P: groups ok", or
// the failure and exits 1.
#include <cstdio>
#include <cstdlib>

#include "runtime/comm/mpi_communicator.h"
#include "tests/runtime/comm/split_checks.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: split_mpi_ranks PR PC (under mpirun -np PR*PC)\n");
    return 2;
  }
  auto comm = fg::runtime::MakeMpiCommunicator();
  if (!comm.ok()) {
    std::fprintf(stderr, "%s\n", std::string(comm.status().message()).c_str());
    return 1;
  }
  (*comm)->set_timeout(std::chrono::seconds(60));
  const absl::Status s = fg::testing::CheckSubCommunicators(**comm, std::atoi(argv[1]), std::atoi(argv[2]));
  const int rank = (*comm)->rank(), size = (*comm)->size();
  if (!s.ok()) {
    std::fprintf(stderr, "rank %d of %d: %s\n", rank, size, std::string(s.message()).c_str());
    std::fflush(stderr);
    fg::runtime::AbortMpi(1);
  }
  std::printf("rank %d of %d: groups ok\n", rank, size);
  std::fflush(stdout);
  return fg::runtime::FinishMpi(std::move(*comm)).ok() ? 0 : 1;
}
