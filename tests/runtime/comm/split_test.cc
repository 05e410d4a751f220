// Sub-communicators (Communicator::Split) and process grids over every backend: in-process threads
// (2 x 3 and 3 x 3 grids), gRPC servers on loopback (2 x 2) and MPI ranks under mpirun (2 x 3, the
// native MPI_Comm_split), each running split_checks.h on every worker. Also 3D and 1.5D grids'
// coordinates and groups, and the errors of a grid that does not cover the run or a negative colour.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "runtime/comm/grpc_communicator.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/comm/process_grid.h"
#include "tests/runtime/comm/split_checks.h"
#include "tests/runtime/process_util.h"

namespace fg::runtime {
namespace {

// Runs body(comm) on one thread per worker of `comms`; returns each worker's status.
template <typename Body>
std::vector<absl::Status> RunEach(const std::vector<Communicator*>& comms, Body body) {
  std::vector<absl::Status> status(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r) threads.emplace_back([&, r] { status[r] = body(*comms[r]); });
  for (auto& t : threads) t.join();
  return status;
}

std::vector<absl::Status> RunInProcess(int parts, const std::function<absl::Status(Communicator&)>& body) {
  auto group = MakeInProcessGroup(parts);
  std::vector<Communicator*> comms;
  for (auto& c : group) {
    c->set_timeout(std::chrono::seconds(30));
    comms.push_back(c.get());
  }
  return RunEach(comms, body);
}

void ExpectAllOk(const std::vector<absl::Status>& status) {
  for (size_t r = 0; r < status.size(); ++r) EXPECT_TRUE(status[r].ok()) << "worker " << r << ": " << status[r];
}

TEST(Split, InProcessGridGroupsRunTheirOwnCollectivesConcurrently) {
  ExpectAllOk(RunInProcess(6, [](Communicator& c) { return fg::testing::CheckSubCommunicators(c, 2, 3); }));
  ExpectAllOk(RunInProcess(9, [](Communicator& c) { return fg::testing::CheckSubCommunicators(c, 3, 3); }));
}

TEST(Split, GroupTrafficIsCountedByTheGroupAndItsParent) {
  std::vector<int64_t> group_bytes(4), world_bytes(4);
  ExpectAllOk(RunInProcess(4, [&](Communicator& c) -> absl::Status {
    FG_ASSIGN_OR_RETURN(ProcessGrid g, ProcessGrid::Make2D(c, 2, 2));
    std::string payload(100, 'x');
    FG_RETURN_IF_ERROR(g.row().Broadcast(&payload, 0, 0, 0, TrafficKind::kFeatures));
    group_bytes[c.rank()] = g.row().bytes_sent(TrafficKind::kFeatures);
    world_bytes[c.rank()] = c.bytes_sent(TrafficKind::kFeatures);
    return absl::OkStatus();
  }));
  EXPECT_EQ(group_bytes, (std::vector<int64_t>{100, 0, 100, 0}));  // the roots (i, 0) send to (i, 1)
  EXPECT_EQ(world_bytes, group_bytes);
}

TEST(Split, ThreeDAndOnePointFiveDGridsHaveTheirGroups) {
  ExpectAllOk(RunInProcess(12, [](Communicator& c) -> absl::Status {
    FG_ASSIGN_OR_RETURN(ProcessGrid g, ProcessGrid::Make3D(c, 2, 3, 2));
    const int r = c.rank();
    if (g.i() != r / 6 || g.j() != (r / 2) % 3 || g.l() != r % 2 || g.RankOf(g.i(), g.j(), g.l()) != r) {
      return fg::testing::Failed(c, "3D coordinates");
    }
    if (g.row().size() != 3 || g.row().rank() != g.j() || g.column().size() != 2 || g.column().rank() != g.i() ||
        g.fibre().size() != 2 || g.fibre().rank() != g.l()) {
      return fg::testing::Failed(c, "3D group sizes or ranks");
    }
    std::vector<int> fibre = {g.RankOf(g.i(), g.j(), 0), g.RankOf(g.i(), g.j(), 1)};
    FG_RETURN_IF_ERROR(fg::testing::ExerciseGroup(c, g.fibre(), fibre, 2));
    std::vector<int> row, column = {g.RankOf(0, g.j(), g.l()), g.RankOf(1, g.j(), g.l())};
    for (int q = 0; q < 3; ++q) row.push_back(g.RankOf(g.i(), q, g.l()));
    FG_RETURN_IF_ERROR(fg::testing::ExerciseGroup(c, g.row(), row, 2));
    return fg::testing::ExerciseGroup(c, g.column(), column, 2);
  }));
  ExpectAllOk(RunInProcess(8, [](Communicator& c) -> absl::Status {
    FG_ASSIGN_OR_RETURN(ProcessGrid g, ProcessGrid::Make15D(c, 2));  // 4 blocks x 2 replicas
    if (g.rows() != 4 || g.columns() != 2 || g.replicas().size() != 2 || g.layer().size() != 4 ||
        g.replicas().rank() != c.rank() % 2 || g.layer().rank() != c.rank() / 2) {
      return fg::testing::Failed(c, "1.5D groups");
    }
    std::vector<int> replicas = {g.RankOf(g.i(), 0), g.RankOf(g.i(), 1)}, layer;
    for (int b = 0; b < 4; ++b) layer.push_back(g.RankOf(b, g.j()));
    FG_RETURN_IF_ERROR(fg::testing::ExerciseGroup(c, g.replicas(), replicas, 2));
    return fg::testing::ExerciseGroup(c, g.layer(), layer, 2);
  }));
}

TEST(Split, BadShapesAndColoursAreClearErrors) {
  const auto status = RunInProcess(6, [](Communicator& c) -> absl::Status {
    auto g = ProcessGrid::Make2D(c, 2, 2);
    EXPECT_FALSE(g.ok());
    EXPECT_NE(g.status().message().find("2 x 2 does not cover the run's 6 workers"), std::string::npos) << g.status();
    auto h = ProcessGrid::Make15D(c, 4);
    EXPECT_NE(h.status().message().find("c=4 does not divide the run's 6 workers"), std::string::npos) << h.status();
    auto s = c.Split(-1, 0);
    EXPECT_TRUE(absl::IsInvalidArgument(s.status()));
    EXPECT_NE(s.status().message().find("colour -1 of worker"), std::string::npos) << s.status();
    return absl::OkStatus();
  });
  ExpectAllOk(status);
}

TEST(Split, AGroupsSilentPeerIsNamedByBothRanks) {
  const auto status = RunInProcess(4, [](Communicator& c) -> absl::Status {
    c.set_timeout(std::chrono::milliseconds(300));
    FG_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> odd, c.Split(c.rank() % 2, c.rank()));
    if (c.rank() != 1) return absl::OkStatus();
    auto got = odd->Recv(1, MakeTag(0, 0, 1, TrafficKind::kFeatures));  // worker 3 sends nothing
    EXPECT_TRUE(absl::IsDeadlineExceeded(got.status())) << got.status();
    EXPECT_NE(got.status().message().find("group worker 1 (worker 3 of the run)"), std::string::npos)
        << got.status();
    return absl::OkStatus();
  });
  ExpectAllOk(status);
}

TEST(Split, OverGrpcOnLoopback) {
  constexpr int kParts = 4;
  constexpr char kToken[] = "split-test-token";
  std::vector<std::unique_ptr<WorkerServer>> servers;
  std::vector<std::string> peers;
  for (int r = 0; r < kParts; ++r) {
    auto s = WorkerServer::Start("127.0.0.1", 0, kToken, Tls{});
    ASSERT_TRUE(s.ok()) << s.status();
    peers.push_back("127.0.0.1:" + std::to_string((*s)->port()));
    servers.push_back(std::move(*s));
  }
  std::vector<std::unique_ptr<GrpcCommunicator>> owned;
  std::vector<Communicator*> comms;
  for (int r = 0; r < kParts; ++r) {
    owned.push_back(MakeGrpcCommunicator(r, peers, kToken, Tls{}, servers[r].get()));
    owned.back()->set_timeout(std::chrono::seconds(30));
    comms.push_back(owned.back().get());
  }
  ExpectAllOk(RunEach(comms, [](Communicator& c) { return fg::testing::CheckSubCommunicators(c, 2, 2); }));
  owned.clear();
  for (auto& s : servers) s->Shutdown();
}

TEST(Split, OverMpiRanksWithMpiCommSplit) {
  if (!MpiBuilt()) GTEST_SKIP() << "built without MPI";
  ASSERT_EQ(std::system("command -v mpirun > /dev/null 2>&1"), 0)
      << "built with MPI but mpirun is not on PATH (Debian: openmpi-bin)";
  const std::string ranks = std::string(FG_BINARY_DIR) + "/tests/runtime/comm/split_mpi_ranks";
  std::string out;
  const int rc = fg::testing::Shell(
      "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none "
      "mpirun --oversubscribe -np 6 " + ranks + " 2 3",
      &out);
  EXPECT_EQ(rc, 0) << out;
  for (int r = 0; r < 6; ++r) {
    EXPECT_NE(out.find("rank " + std::to_string(r) + " of 6: groups ok"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace fg::runtime
