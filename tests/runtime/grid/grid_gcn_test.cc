// A two-layer GCN trained over process grids of in-process workers (2D 2 x 2 and 3 x 3; 1.5D with
// c = 2 at P = 4 and 8; 3D 2 x 2 x 2; sparsity-aware and oblivious) against one process's training of the same
// model (a reference loop here: the same normalised adjacency, initial weights and steps on the
// whole graph): every epoch's loss equals the reference's within 1e-4 relative, and falls; and the
// same with real processes, MPI ranks under mpirun at P = 4 (2D 2 x 2, 1.5D c = 2).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <random>
#include <thread>
#include <vector>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/graph/dataset.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/grid/grid_gcn.h"
#include "tests/runtime/grid/gcn_problem.h"
#include "tests/runtime/process_util.h"

namespace fg::grid {
namespace {

using namespace fg::grid::testing;  // NOLINT: the shared problem

void ExpectGridTrainingMatches(int parts, const GridGcnOptions& options, const GcnProblem& p,
                               const std::vector<double>& want) {
  auto world = runtime::MakeInProcessGroup(parts);
  std::vector<absl::StatusOr<std::vector<double>>> got(parts, std::vector<double>{});
  std::vector<std::thread> threads;
  for (int r = 0; r < parts; ++r) {
    threads.emplace_back([&, r] {
      world[r]->set_timeout(std::chrono::seconds(60));
      got[r] = TrainGridGcn(*world[r], p, options);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < parts; ++r) {
    ASSERT_TRUE(got[r].ok()) << "worker " << r << ": " << got[r].status();
    ASSERT_EQ(got[r]->size(), want.size());
    for (size_t e = 0; e < want.size(); ++e) {
      EXPECT_NEAR((*got[r])[e], want[e], 1e-4 * std::fabs(want[e])) << "worker " << r << " epoch " << e;
    }
  }
}

TEST(GridGcn, TwoDLossesEqualOneProcess) {
  const GcnProblem p = Problem();
  const std::vector<double> want = Reference(p);
  EXPECT_LT(want.back(), want.front());  // it trains
  for (bool aware : {false, true}) {
    GridGcnOptions o;
    o.scheme = GridScheme::kTwoD;
    o.aware = aware;
    o.epochs = kEpochs;
    o.lr = kLr;
    o.pr = o.pc = 2;
    ExpectGridTrainingMatches(4, o, p, want);
    o.pr = o.pc = 3;
    ExpectGridTrainingMatches(9, o, p, want);
  }
}

TEST(GridGcn, OnePointFiveDLossesEqualOneProcess) {
  const GcnProblem p = Problem();
  const std::vector<double> want = Reference(p);
  for (bool aware : {false, true}) {
    GridGcnOptions o;
    o.scheme = GridScheme::kOnePointFiveD;
    o.aware = aware;
    o.epochs = kEpochs;
    o.lr = kLr;
    o.c = 2;
    ExpectGridTrainingMatches(4, o, p, want);
    ExpectGridTrainingMatches(8, o, p, want);
  }
}

TEST(GridGcn, ThreeDLossesEqualOneProcess) {
  const GcnProblem p = Problem();
  const std::vector<double> want = Reference(p);
  for (bool aware : {false, true}) {
    GridGcnOptions o;
    o.scheme = GridScheme::kThreeD;
    o.aware = aware;
    o.epochs = kEpochs;
    o.lr = kLr;
    o.pr = o.pc = o.pf = 2;
    ExpectGridTrainingMatches(8, o, p, want);
  }
}

// Real processes: MPI ranks (native MPI_Comm_split groups and collectives) at P = 4.
TEST(GridGcn, MpiRanksMatchOneProcess) {
  if (!runtime::MpiBuilt()) GTEST_SKIP() << "built without MPI";
  ASSERT_EQ(std::system("command -v mpirun > /dev/null 2>&1"), 0)
      << "built with MPI but mpirun is not on PATH (Debian: openmpi-bin)";
  const std::vector<double> want = Reference(Problem());
  const std::string ranks = std::string(FG_BINARY_DIR) + "/tests/runtime/grid/grid_gcn_mpi_ranks";
  for (const char* run : {"2d 2 2 aware", "2d 2 2 oblivious", "1.5d 2 0 aware"}) {
    SCOPED_TRACE(run);
    std::string out;
    const int rc = fg::testing::Shell(
        "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none "
        "mpirun --oversubscribe -np 4 " + ranks + " " + run, &out);
    ASSERT_EQ(rc, 0) << out;
    for (int r = 0; r < 4; ++r) EXPECT_NE(out.find("rank " + std::to_string(r) + " done"), std::string::npos) << out;
    for (size_t e = 0; e < want.size(); ++e) {
      const std::string key = "epoch " + std::to_string(e) + " loss ";
      const size_t at = out.find(key);
      ASSERT_NE(at, std::string::npos) << out;
      EXPECT_NEAR(std::stod(out.substr(at + key.size())), want[e], 1e-4 * std::fabs(want[e])) << "epoch " << e;
    }
  }
}

TEST(GridGcn, AGridThatDoesNotCoverTheRunIsAClearError) {
  const GcnProblem p = Problem();
  auto world = runtime::MakeInProcessGroup(1);
  GridGcnOptions o;
  o.pr = 2, o.pc = 2;
  auto got = TrainGridGcn(*world[0], p, o);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("2 x 2 does not cover the run's 1 workers"), std::string::npos) << got.status();
}

}  // namespace
}  // namespace fg::grid
