// One MPI rank of GridGcn.MpiRanksMatchOneProcess (grid_gcn_test.cc): `grid_gcn_mpi_ranks SCHEME
// A B aware|oblivious` under mpirun (SCHEME 2d: an A x B grid; 1.5d: replication c = A, B unused)
// trains gcn_problem.h's GCN over MPI_COMM_WORLD; rank 0 prints "epoch E loss L" per epoch, every
// rank "rank R done"; a failure is printed and exits 1.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/comm/mpi_communicator.h"
#include "tests/runtime/grid/gcn_problem.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: grid_gcn_mpi_ranks 2d|1.5d A B aware|oblivious (under mpirun)\n");
    return 2;
  }
  auto comm = fg::runtime::MakeMpiCommunicator();
  if (!comm.ok()) {
    std::fprintf(stderr, "%s\n", std::string(comm.status().message()).c_str());
    return 1;
  }
  (*comm)->set_timeout(std::chrono::seconds(60));
  fg::grid::GridGcnOptions o;
  o.scheme = std::string(argv[1]) == "2d" ? fg::grid::GridScheme::kTwoD : fg::grid::GridScheme::kOnePointFiveD;
  o.pr = o.c = std::atoi(argv[2]);
  o.pc = std::atoi(argv[3]);
  o.aware = std::string(argv[4]) == "aware";
  o.epochs = fg::grid::testing::kEpochs;
  o.lr = fg::grid::testing::kLr;
  auto losses = fg::grid::TrainGridGcn(**comm, fg::grid::testing::Problem(), o);
  const int rank = (*comm)->rank();
  if (!losses.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, std::string(losses.status().message()).c_str());
    std::fflush(stderr);
    fg::runtime::AbortMpi(1);
  }
  if (rank == 0) {
    for (size_t e = 0; e < losses->size(); ++e) std::printf("epoch %zu loss %.9g\n", e, (*losses)[e]);
  }
  std::printf("rank %d done\n", rank);
  std::fflush(stdout);
  return fg::runtime::FinishMpi(std::move(*comm)).ok() ? 0 : 1;
}
