// Runs started by cluster launchers, with real processes on this machine.
// MPI: `mpirun --oversubscribe` starts `flexgraph worker --comm mpi`. Runs match single-process
// training (a dataset loaded whole and a partitioned one); a killed rank ends the run within
// seconds with nothing left behind; ranks with different configurations are refused naming the
// field. Skipped where MPI is not built in or mpirun is missing.
// Slurm: workers started as srun would start them (SLURM_* variables) find each other through the
// coordinator that task 0 runs, and match single-process training.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <tuple>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "proto/flexgraph.grpc.pb.h"
#include "runtime/cluster/coordinator.h"
#include "runtime/cluster/worker.h"
#include "runtime/comm/auth.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/train/config.h"
#include "tests/runtime/process_util.h"
#include "tests/runtime/scratch_dir.h"

namespace {

using namespace fg::testing;  // NOLINT: the process helpers


// A build without MPI skips the MPI tests (CI configures with -DFLEXGRAPH_MPI=ON and fails on any
// skip but a GPU test's, scripts/check_skips.py); a build with MPI and no mpirun is a failure.
#define SKIP_WITHOUT_MPI()                                                       \
  if (!fg::runtime::MpiBuilt()) GTEST_SKIP() << "built without MPI";             \
  ASSERT_EQ(std::system("command -v mpirun > /dev/null 2>&1"), 0)                \
      << "built with MPI but mpirun is not on PATH (Debian: openmpi-bin)"

// mpirun with `np` ranks on this machine (as root too, as in containers).
std::string Mpirun(const std::string& ranks) {
  return "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none "
         "mpirun --oversubscribe " + ranks;
}

std::string Np(int p) { return "-np " + std::to_string(p) + " "; }

TEST(Mpi, RanksMatchSingleProcess) {
  SKIP_WITHOUT_MPI();
  const std::string d = fg::testing::ScratchDir("fg_mpi_match");
  for (const std::string model : {"gcn", "sage", "gin"}) {
    const std::string train = " train --dataset " + kCora + " --model " + model + " --epochs 8 --threads 1 --quiet";
    const std::string single = d + "/" + model + ".json";
    ASSERT_EQ(Shell(kFlexgraph + train + " --summary_json " + single), 0);
    const auto base = Losses(Read(single));
    ASSERT_EQ(base.size(), 8u);
    for (int p : model == "gcn" ? std::vector<int>{2, 3} : std::vector<int>{2}) {
      SCOPED_TRACE(model + " P=" + std::to_string(p));
      const std::string json = d + "/" + model + std::to_string(p) + ".json";
      std::string out;
      ASSERT_EQ(Shell(Mpirun(Np(p) + kFlexgraph + " worker --comm mpi --" + train + " --summary_json " + json), &out), 0)
          << out;
      const std::string summary = Read(json);
      const auto losses = Losses(summary);
      ASSERT_EQ(losses.size(), base.size()) << summary;
      for (size_t e = 0; e < base.size(); ++e) EXPECT_NEAR(losses[e], base[e], 1e-4 * base[e]) << "epoch " << e + 1;
      EXPECT_EQ(Field(summary, "test_accuracy"), Field(Read(single), "test_accuracy"));
      EXPECT_EQ(Field(summary, "world_size"), p);
      EXPECT_GT(Field(summary, "bytes_total"), 0);
      EXPECT_NE(out.find("worker " + std::to_string(p - 1) + " of " + std::to_string(p) + " (MPI)"), std::string::npos)
          << out;
    }
  }
}

// Four ranks over a process grid (each rank's groups split by MPI_Comm_split) match one process.
TEST(Mpi, RanksOverAProcessGridMatchSingleProcess) {
  SKIP_WITHOUT_MPI();
  const std::string d = fg::testing::ScratchDir("fg_mpi_grid");
  for (const auto& [model, exchange, described] : {std::tuple<std::string, std::string, std::string>{"gin", "2d", "2d 2x2 aware"},
                                                   {"sage", "3d:2x1x2", "3d 2x1x2 aware"}}) {
    SCOPED_TRACE(model + " " + exchange);
    const std::string train = " train --dataset " + kCora + " --model " + model + " --epochs 5 --threads 1 --quiet";
    const std::string single = d + "/" + model + ".json", json = d + "/" + model + "_grid.json";
    ASSERT_EQ(Shell(kFlexgraph + train + " --summary_json " + single), 0);
    const auto base = Losses(Read(single));
    std::string out;
    ASSERT_EQ(Shell(Mpirun(Np(4) + kFlexgraph + " worker --comm mpi --exchange " + exchange + " --" + train +
                           " --summary_json " + json),
                    &out),
              0)
        << out;
    const std::string summary = Read(json);
    const auto losses = Losses(summary);
    ASSERT_EQ(losses.size(), base.size()) << summary;
    for (size_t e = 0; e < base.size(); ++e) EXPECT_NEAR(losses[e], base[e], 1e-4 * base[e]) << "epoch " << e + 1;
    EXPECT_EQ(Field(summary, "test_accuracy"), Field(Read(single), "test_accuracy"));
    EXPECT_NE(summary.find("\"exchange\": \"" + described + "\""), std::string::npos) << summary;
  }
}

TEST(Mpi, RanksOfAPartitionedDatasetReadOnlyTheirPartAndMatchSingleProcess) {
  SKIP_WITHOUT_MPI();
  const std::string d = fg::testing::ScratchDir("fg_mpi_parts");
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " partition --quiet --dataset " + kCora + " --parts 2 --method metis --model gcn --out " +
                  d + "/cora-2", &out), 0) << out;
  ASSERT_EQ(Shell(kFlexgraph + " train --dataset " + kCora + " --epochs 8 --threads 1 --quiet --summary_json " + d +
                  "/single.json"), 0);
  ASSERT_EQ(Shell(Mpirun(Np(2) + kFlexgraph + " worker --comm mpi -- train --dataset " + d +
                         "/cora-2 --epochs 8 --threads 1 --summary_json " + d + "/parts.json"), &out), 0)
      << out;
  const auto base = Losses(Read(d + "/single.json"));
  const auto losses = Losses(Read(d + "/parts.json"));
  ASSERT_EQ(losses.size(), base.size());
  for (size_t e = 0; e < base.size(); ++e) EXPECT_NEAR(losses[e], base[e], 1e-4 * base[e]);
  EXPECT_NE(out.find("partitioned dataset, 2 parts"), std::string::npos) << out;
  EXPECT_NE(out.find("load part 0 of"), std::string::npos) << out;
  // Four ranks on a 2 x 2 grid: each grid row's two ranks read the same part (its row block).
  ASSERT_EQ(Shell(Mpirun(Np(4) + kFlexgraph + " worker --comm mpi --exchange 2d -- train --dataset " + d +
                         "/cora-2 --epochs 8 --threads 1 --summary_json " + d + "/grid.json"), &out), 0)
      << out;
  const auto grid = Losses(Read(d + "/grid.json"));
  ASSERT_EQ(grid.size(), base.size());
  for (size_t e = 0; e < base.size(); ++e) EXPECT_NEAR(grid[e], base[e], 1e-4 * base[e]);
  EXPECT_NE(Read(d + "/grid.json").find("\"exchange\": \"2d 2x2 aware\""), std::string::npos);
  // Another rank count is refused, naming the reason, on every rank.
  EXPECT_NE(Shell(Mpirun(Np(3) + kFlexgraph + " worker --comm mpi -- train --dataset " + d + "/cora-2 --epochs 2"), &out),
            0);
  EXPECT_NE(out.find("a partitioned dataset of 2 parts needs as many workers, not 3"), std::string::npos) << out;
}

TEST(Mpi, AKilledRankEndsTheRunWithinSecondsNamingIt) {
  SKIP_WITHOUT_MPI();
  const std::string d = fg::testing::ScratchDir("fg_mpi_kill");
  std::string out;
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = Shell("env FG_FAULT=worker1:epoch.start:3 " + Mpirun(Np(2) + kFlexgraph) +
                           " worker --comm mpi -- train --dataset " + kCora + " --epochs 500 --threads 1 --quiet " +
                           "--summary_json " + d + "/summary.json",
                       &out);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(rc, 0);
  EXPECT_LT(seconds, 30.0);
  EXPECT_NE(out.find("rank 1"), std::string::npos) << out;
  EXPECT_NE(out.find("signal 9"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(d + "/summary.json"));
  // No rank survives (the summary path names this run's processes; "[f]" keeps pgrep's own shell out).
  EXPECT_NE(std::system(("pgrep -f '[f]lexgraph worker.*" + d + "/summary.json' > /dev/null").c_str()), 0);
}

TEST(Mpi, ARankWithAnotherConfigurationIsRefusedNamingTheField) {
  SKIP_WITHOUT_MPI();
  const std::string train = " worker --comm mpi -- train --dataset " + kCora + " --epochs 3 --threads 1 --quiet";
  std::string out;
  EXPECT_NE(Shell(Mpirun(Np(1) + kFlexgraph + train + " --lr 0.01 : " + Np(1) + kFlexgraph + train + " --lr 0.02"),
                  &out),
            0);
  EXPECT_NE(out.find("train.lr: 0.01 -> 0.02"), std::string::npos) << out;
}

TEST(Mpi, UsageErrors) {
  std::string out;
  EXPECT_EQ(Shell(kFlexgraph + " worker --comm carrier-pigeon -- train --dataset " + kCora, &out), 2);
  EXPECT_NE(out.find("--comm takes grpc or mpi"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " worker --comm mpi --coordinator 127.0.0.1:1 -- train --dataset " + kCora, &out), 2);
  EXPECT_NE(out.find("no coordinator"), std::string::npos) << out;
}

TEST(Slurm, FirstHostOfAHostList) {
  using fg::runtime::FirstHostOf;
  EXPECT_EQ(FirstHostOf("node07").value(), "node07");
  EXPECT_EQ(FirstHostOf("node[07-09,12],gpu1").value(), "node07");
  EXPECT_EQ(FirstHostOf("gpu1,node[07-09]").value(), "gpu1");
  EXPECT_EQ(FirstHostOf("rack[3-4]-n[1-2]").value(), "rack3-n[1-2]");
  EXPECT_EQ(FirstHostOf("c[0012,0013]").value(), "c0012");
  for (const char* bad : {"", "node[", "node[x-2]", "node]1[", "[]"}) {
    EXPECT_FALSE(FirstHostOf(bad).ok()) << bad;
  }
}

// Two tasks of a Slurm step on this machine: task 0 runs the coordinator at --coordinator_port.
TEST(Slurm, TasksOfAStepTrainThroughTheCoordinatorOfTaskZero) {
  const std::string d = fg::testing::ScratchDir("fg_slurm");
  // A free port for the coordinator, as a job script would reserve one.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  close(fd);
  const std::string train = " -- train --dataset " + kCora + " --epochs 8 --threads 1 --quiet --summary_json " + d +
                            "/slurm.json";
  const std::string env = "env FG_RUN_TOKEN=slurm-test SLURM_NTASKS=2 SLURM_NODELIST=localhost SLURMD_NODENAME=localhost ";
  std::string out;
  const int rc = Shell("sh -c '" + env + "SLURM_PROCID=1 " + kFlexgraph + " worker --coordinator_port " + port + train +
                           " > " + d + "/task1.log 2>&1 & " + env + "SLURM_PROCID=0 " + kFlexgraph +
                           " worker --coordinator_port " + port + train + "; rc=$?; wait; exit $rc'",
                       &out);
  ASSERT_EQ(rc, 0) << out << Read(d + "/task1.log");
  EXPECT_NE(out.find("listening on port " + port + " for 2 Slurm tasks"), std::string::npos) << out;
  ASSERT_EQ(Shell(kFlexgraph + " train --dataset " + kCora + " --epochs 8 --threads 1 --quiet --summary_json " + d +
                  "/single.json"), 0);
  const auto base = Losses(Read(d + "/single.json"));
  const auto losses = Losses(Read(d + "/slurm.json"));
  ASSERT_EQ(losses.size(), base.size());
  for (size_t e = 0; e < base.size(); ++e) EXPECT_NEAR(losses[e], base[e], 1e-4 * base[e]);
  EXPECT_EQ(Field(Read(d + "/slurm.json"), "world_size"), 2);
  // A malformed Slurm environment names the variable.
  EXPECT_EQ(Shell("env SLURM_PROCID=0 SLURM_NTASKS=two SLURM_NODELIST=localhost FG_RUN_TOKEN=t " + kFlexgraph +
                  " worker" + train, &out), 2);
  EXPECT_NE(out.find("$SLURM_NTASKS is 'two'"), std::string::npos) << out;
}

// A final report the coordinator cannot use (worker 0's summary is not JSON) is refused to the
// worker that sent it, which then fails, instead of finishing with exit status 0 while the
// coordinator fails writing the summary.
TEST(Coordinator, AMalformedFinalReportIsRefusedToTheWorkerThatSentIt) {
  const std::string d = ScratchDir("fg_coordinator_report");
  flexgraph::RunConfig user;
  user.mutable_dataset()->set_path("sbm:nodes=100,classes=2,features=4");
  user.mutable_output()->set_summary_json(d + "/summary.json");
  auto train = fg::runtime::ResolveConfig(user);
  ASSERT_TRUE(train.ok()) << train.status();
  fg::runtime::CoordinatorOptions o;
  o.workers = 1;
  o.token = "t";
  o.partition_method = "hash";
  auto c = fg::runtime::Coordinator::Start(o, *train);
  ASSERT_TRUE(c.ok()) << c.status();
  auto stub = flexgraph::Coordinator::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string((*c)->port()), grpc::InsecureChannelCredentials()));
  flexgraph::RegisterRequest reg;
  reg.set_address("127.0.0.1:1");
  reg.set_rank_hint(0);
  reg.set_settings(fg::runtime::SharedSettings(*train).SerializeAsString());
  flexgraph::RegisterReply registered;
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata(fg::runtime::kTokenMetadata, "t");
    const grpc::Status s = stub->Register(&ctx, reg, &registered);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  flexgraph::MetricsRequest report;
  report.set_rank(0);
  report.set_final(true);
  report.set_summary_json("{\"losses\": [1.0,");
  flexgraph::MetricsReply reply;
  grpc::ClientContext ctx;
  ctx.AddMetadata(fg::runtime::kTokenMetadata, "t");
  const grpc::Status s = stub->ReportMetrics(&ctx, report, &reply);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error_message().find("summary of worker 0"), std::string::npos) << s.error_message();
  const absl::Status run = (*c)->Wait();
  EXPECT_FALSE(run.ok());
  EXPECT_NE(run.message().find("worker 0"), std::string::npos) << run;
  EXPECT_FALSE(std::filesystem::exists(d + "/summary.json"));
}

}  // namespace
