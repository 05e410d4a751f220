// Multi-process tests: the real `flexgraph` binary started by `flexgraph launch` on loopback with
// ephemeral ports. Distributed runs match single-process training; a killed worker stops the run
// within seconds naming it, leaving no processes or ports behind; --restart_on_failure finishes
// with the uninterrupted result; a wrong token and an unreachable coordinator are clear errors; a
// registration with another configuration is refused and a hung worker is named. TLS:
// launch_tls_test.cc.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/runtime/cluster/launch_util.h"

namespace {

using namespace fg::testing;  // NOLINT: the process helpers

TEST(Launch, TwoAndThreeWorkersMatchSingleProcess) {
  const std::string d = Dir("fg_launch_match");
  ASSERT_EQ(Shell(kFlexgraph + " train --dataset " + kCora +
                " --epochs 8 --threads 1 --quiet --summary_json " + d + "/single.json"), 0);
  const auto base = Losses(Read(d + "/single.json"));
  ASSERT_EQ(base.size(), 8u);
  for (int p : {2, 3}) {
    const std::string json = d + "/p" + std::to_string(p) + ".json";
    std::string out;
    ASSERT_EQ(Shell(kFlexgraph + " launch --quiet --workers " + std::to_string(p) + " --log_dir " + d +
                  "/logs" + std::to_string(p) + kTrain + " --summary_json " + json, &out), 0) << out;
    const std::string summary = Read(json);
    const auto losses = Losses(summary);
    ASSERT_EQ(losses.size(), base.size()) << summary;
    for (size_t e = 0; e < base.size(); ++e) {
      EXPECT_NEAR(losses[e], base[e], 1e-4 * base[e]) << "P=" << p << " epoch " << e + 1;
    }
    EXPECT_EQ(Field(summary, "test_accuracy"), Field(Read(d + "/single.json"), "test_accuracy"));
    // Same keys as `train`, plus per-worker traffic.
    for (const char* key : {"final_loss", "test_macro_f1", "epoch_seconds_median", "peak_rss_bytes"}) {
      EXPECT_NE(summary.find(std::string("\"") + key + "\""), std::string::npos) << key;
    }
    EXPECT_NE(summary.find("\"bytes_gradients_per_epoch\""), std::string::npos);
    EXPECT_EQ(Field(summary, "world_size"), p);
  }
}

TEST(Launch, WorkersOfAPartitionedDatasetReadOnlyTheirPartAndMatchSingleProcess) {
  const std::string d = Dir("fg_launch_parts");
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " partition --quiet --dataset " + kCora +
                " --parts 3 --method metis --model gcn --out " + d + "/cora-3", &out), 0) << out;
  ASSERT_EQ(Shell(kFlexgraph + " info " + d + "/cora-3", &out), 0) << out;
  EXPECT_NE(out.find("3 parts"), std::string::npos) << out;
  EXPECT_NE(out.find("edge cut"), std::string::npos) << out;
  ASSERT_EQ(Shell(kFlexgraph + " train --dataset " + kCora +
                " --epochs 8 --threads 1 --quiet --summary_json " + d + "/single.json"), 0);
  ASSERT_EQ(Shell(kFlexgraph + " launch --workers 3 --log_dir " + d + "/logs -- train --dataset " +
                d + "/cora-3 --epochs 8 --threads 1 --summary_json " + d + "/parts.json", &out), 0)
      << out;
  const auto base = Losses(Read(d + "/single.json"));
  const auto losses = Losses(Read(d + "/parts.json"));
  ASSERT_EQ(losses.size(), base.size());
  for (size_t e = 0; e < base.size(); ++e) EXPECT_NEAR(losses[e], base[e], 1e-4 * base[e]);
  // Mini-batches sampled across the worker processes are the single-process ones: node-wise,
  // LADIES (each batch drawn whole by one worker, over rows fetched from the others) and ShaDow
  // (each seed's subgraph drawn hop by hop by the frontier's owners).
  for (const std::string sampler :
       {"--fanouts 5,5", "--sampler ladies --layer_size 64", "--sampler shadow --fanouts 4,3"}) {
    const std::string batches = " --epochs 3 --batch_size 32 --bulk 2 --threads 1 --quiet " + sampler;
    ASSERT_EQ(Shell(kFlexgraph + " train --dataset " + kCora + batches + " --summary_json " + d +
                    "/single-mb.json", &out), 0) << out;
    ASSERT_EQ(Shell(kFlexgraph + " launch --workers 3 --log_dir " + d + "/logs-mb -- train --dataset " +
                    d + "/cora-3" + batches + " --summary_json " + d + "/parts-mb.json", &out), 0)
        << out;
    const auto mb_base = Losses(Read(d + "/single-mb.json"));
    const auto mb = Losses(Read(d + "/parts-mb.json"));
    ASSERT_EQ(mb.size(), mb_base.size()) << sampler;
    for (size_t e = 0; e < mb_base.size(); ++e) EXPECT_NEAR(mb[e], mb_base[e], 1e-4 * mb_base[e]) << sampler;
    EXPECT_EQ(Field(Read(d + "/parts-mb.json"), "test_accuracy"),
              Field(Read(d + "/single-mb.json"), "test_accuracy")) << sampler;
  }
  // The coordinator read the metadata, each worker its own part.
  EXPECT_NE(Read(d + "/logs/coordinator.log").find("partitioned dataset, 3 parts"), std::string::npos);
  const std::string log = Read(d + "/logs/worker-0.log");  // the other ranks log quietly
  EXPECT_NE(log.find("load part 0 of"), std::string::npos) << log;
  // Another worker count is refused before any worker trains.
  EXPECT_NE(Shell(kFlexgraph + " launch --workers 2 --log_dir " + d + "/logs2 -- train --dataset " +
                d + "/cora-3 --epochs 2 --quiet", &out), 0);
  EXPECT_NE(out.find("a partitioned dataset of 3 parts needs as many workers, not 2"), std::string::npos)
      << out;
}

// Pids of the processes of a run, from the coordinator log.
std::vector<pid_t> WorkerPids(const std::string& coordinator_log) {
  std::vector<pid_t> pids;
  std::string log = Read(coordinator_log);
  std::regex re("worker ([0-9]+) registered from [^ ]+ \\(pid ([0-9]+)\\)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it) {
    pids.push_back(std::stoi((*it)[2].str()));
  }
  return pids;
}


// Runs `flexgraph launch` with worker 1 killed (SIGKILL, by fault injection: flexgraph/base/fault.h)
// as it starts epoch `at_epoch`; with `once`, a restarted run is not killed again.
struct KilledRun {
  int exit_status = -1;
  double seconds = 0;
  std::vector<pid_t> pids;
  std::string output;
};

std::string Fault(const std::string& process_point, const std::string& mark) {
  return "env FG_FAULT=" + process_point + (mark.empty() ? "" : " FG_FAULT_MARK=" + mark) + " ";
}

KilledRun LaunchAndKill(const std::string& d, const std::string& extra_launch,
                        const std::string& extra_train, int at_epoch, bool once) {
  KilledRun k;
  const auto t0 = std::chrono::steady_clock::now();
  k.exit_status = Shell(Fault("worker1:epoch.start:" + std::to_string(at_epoch), once ? d + "/killed" : "") +
                        kFlexgraph + " launch --workers 2 --heartbeat_timeout 3 --log_dir " + d + "/logs " +
                        extra_launch + " -- train --dataset " + kCora + " --epochs 12 --threads 1 " + extra_train,
                        &k.output);
  k.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  k.pids = WorkerPids(d + "/logs/coordinator.log");
  return k;
}

// The restarted run in `log_dir` resumed from the checkpoint at epoch `epoch` (or at `or_epoch`,
// where the fault races the last checkpoint's write): its worker 0's log (the restart's) says so,
// and so does the summary.
void ExpectResumedFrom(const std::string& log_dir, const std::string& summary, int epoch, int or_epoch = -1) {
  const std::string log = Read(log_dir + "/worker-0.restart1.log");
  const double got = Field(Read(summary), "resumed_from_epoch");
  const int e = or_epoch >= 0 && got == or_epoch ? or_epoch : epoch;
  EXPECT_NE(log.find("resumed from checkpoint at epoch " + std::to_string(e) + " ("), std::string::npos)
      << log_dir << "/worker-0.restart1.log:\n" << log;
  EXPECT_EQ(got, e) << summary;
}

TEST(Launch, KilledWorkerStopsTheRunNamingItAndCleansUp) {
  const std::string d = Dir("fg_launch_kill");
  KilledRun k = LaunchAndKill(d, "", "", 3, false);
  EXPECT_NE(k.exit_status, 0);
  EXPECT_LT(k.seconds, 60.0);  // start-up, three epochs, detection and shutdown
  EXPECT_NE(k.output.find("worker 1"), std::string::npos) << k.output;
  EXPECT_NE(k.output.find("killed by signal 9"), std::string::npos) << k.output;
  // No process of the run survives.
  ASSERT_EQ(k.pids.size(), 2u);
  for (pid_t p : k.pids) EXPECT_NE(kill(p, 0), 0) << "process " << p << " still alive";
  // The coordinator's port is free again.
  const int port = std::stoi(Read(d + "/logs/coordinator.port"));
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << "port " << port;
  close(fd);
}

TEST(Launch, RestartOnFailureFinishesWithTheUninterruptedResult) {
  const std::string d = Dir("fg_launch_restart");
  const std::string ckpt = " --checkpoint_every 2 --checkpoint_dir " + d + "/ckpt";
  ASSERT_EQ(Shell(kFlexgraph + " launch --quiet --workers 2 --log_dir " + d + "/ref -- train --dataset " +
                kCora + " --epochs 12 --threads 1 --quiet --summary_json " + d + "/ref.json"), 0);
  KilledRun k = LaunchAndKill(d, "--restart_on_failure",
                              ckpt + " --summary_json " + d + "/restarted.json", 5, true);
  EXPECT_EQ(k.exit_status, 0) << k.output;
  EXPECT_NE(k.output.find("restarting from the last checkpoint"), std::string::npos) << k.output;
  const auto ref = Losses(Read(d + "/ref.json"));
  const auto got = Losses(Read(d + "/restarted.json"));
  ASSERT_EQ(ref.size(), 12u);
  EXPECT_EQ(got, ref);
  EXPECT_EQ(Field(Read(d + "/restarted.json"), "test_accuracy"), Field(Read(d + "/ref.json"), "test_accuracy"));
  // Killed as it started epoch 5: the restart resumed from the checkpoint after epoch 4, not from
  // scratch (which would give the same losses). Worker 1 may start epoch 5 while worker 0 still
  // writes that checkpoint, and the kill then stops the write: the one after epoch 2 is the last.
  ExpectResumedFrom(d + "/logs", d + "/restarted.json", 4, 2);
  EXPECT_EQ(Field(Read(d + "/ref.json"), "resumed_from_epoch"), 0);
}

// A process of a failed attempt (an ssh-started worker outlives its ssh until it misses the
// coordinator) may still hold the checkpoints as the launcher restarts: the restart waits for it.
// Here a foreign holder makes the first attempt fail and lets go 4 s later.
TEST(Launch, ARestartWaitsForTheCheckpointsOfTheFailedAttempt) {
  const std::string d = Dir("fg_launch_restart_waits");
  std::filesystem::create_directories(d + "/ckpt");
  const pid_t holder = fork();
  if (holder == 0) {
    execlp("flock", "flock", (d + "/ckpt/checkpoint.lock").c_str(), "sleep", "4", nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // flock has taken the lock
  std::string out;
  const int rc = Shell(kFlexgraph + " launch --quiet --workers 2 --heartbeat_timeout 3 --max_restarts 1 " +
                           "--restart_on_failure --log_dir " + d + "/logs" + kTrain +
                           " --checkpoint_every 2 --checkpoint_dir " + d + "/ckpt",
                       &out);
  int st = 0;
  waitpid(holder, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "flock";
  EXPECT_NE(out.find("is in use by another run"), std::string::npos) << out;  // the first attempt
  EXPECT_NE(out.find("restarting from the last checkpoint"), std::string::npos) << out;
  EXPECT_EQ(rc, 0) << out;
}

// Kills aimed at the moments a crash could lose or half-write something: inside a checkpoint write
// (half the bytes written; complete but not renamed), inside the summary's write, after training
// but before the results are reported, and after the summary while shutting down. Each run restarts
// from the last good checkpoint (the epoch it resumed from is checked: a restart from scratch gives
// the same losses) to the uninterrupted losses and leaves no temporary file behind.
TEST(Launch, KillsWhileWritingCheckpointsOrShuttingDownLoseNothing) {
  const std::string d = Dir("fg_launch_write_faults");
  const std::string train = " -- train --dataset " + kCora + " --epochs 12 --threads 1 --quiet";
  ASSERT_EQ(Shell(kFlexgraph + " launch --quiet --workers 2 --log_dir " + d + "/ref" + train +
                  " --summary_json " + d + "/ref.json"), 0);
  const auto ref = Losses(Read(d + "/ref.json"));
  ASSERT_EQ(ref.size(), 12u);
  int i = 0;
  // Checkpoints after epochs 2, 4, ..., 12 (written by worker 0, the only writer of files but
  // the coordinator's summary): a write cut short leaves the one before it.
  // Worker 1 killed once it has trained may take worker 0 down before or after worker 0 has
  // written the last checkpoint (12): the restart resumes from 12 or from 10, never earlier.
  struct Case {
    std::string fault;
    int resumed, or_resumed;
  };
  const std::vector<Case> faults = {
      {"worker0:file.partial_write:3", 4, -1},  {"worker0:file.before_rename:2", 2, -1},
      {"coordinator:file.partial_write", 12, -1}, {"worker1:worker.trained", 12, 10},
      {"coordinator:coordinator.summary_written", 12, -1}};
  for (const auto& [fault, resumed, or_resumed] : faults) {
    SCOPED_TRACE(fault);
    const std::string run = d + "/run" + std::to_string(i++);
    std::filesystem::create_directories(run);
    std::string out;
    const int rc = Shell(Fault(fault, run + ".fired") + kFlexgraph + " launch --workers 2 --heartbeat_timeout 3 " +
                             "--restart_on_failure --log_dir " + run + "/logs" + train + " --checkpoint_every 2 " +
                             "--checkpoint_dir " + run + "/ckpt --summary_json " + run + "/summary.json",
                         &out);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_TRUE(std::filesystem::exists(run + ".fired")) << out;
    EXPECT_NE(out.find("restarting from the last checkpoint"), std::string::npos) << out;
    EXPECT_EQ(Losses(Read(run + "/summary.json")), ref);
    ExpectResumedFrom(run + "/logs", run + "/summary.json", resumed, or_resumed);
    for (const std::string& dir : {run, run + "/ckpt"}) {
      for (const auto& f : std::filesystem::directory_iterator(dir)) {
        EXPECT_EQ(f.path().filename().string().find(".tmp."), std::string::npos) << f.path();
      }
    }
  }
}


TEST(Launch, TwoLaunchesCannotShareALogDirectory) {
  const std::string d = Dir("fg_launch_shared_logs");
  const pid_t first = fork();
  if (first == 0) {
    const std::string cmd = "exec " + kFlexgraph + " launch --quiet --workers 2 --log_dir " + d +
                            "/logs" + kTrain + " > " + d + "/first.out 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    _exit(127);
  }
  for (int i = 0; i < 600 && Read(d + "/logs/coordinator.port").empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string out;
  EXPECT_EQ(Shell(kFlexgraph + " launch --quiet --workers 2 --log_dir " + d + "/logs" + kTrain, &out), 2);
  EXPECT_NE(out.find("is in use by another launch"), std::string::npos) << out;
  int st = 0;
  waitpid(first, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Read(d + "/first.out");
  // Free again once the first has finished.
  EXPECT_EQ(Shell(kFlexgraph + " launch --quiet --workers 2 --log_dir " + d + "/logs" + kTrain, &out), 0) << out;
}

TEST(Launch, AWorkerThatRegistersLateIsNotPresumedDead) {
  // Heartbeats start once every worker is in: waiting for a latecomer longer than the heartbeat
  // timeout is not a missed heartbeat.
  const std::string d = Dir("fg_launch_late");
  std::string port;
  const pid_t coord = StartCoordinator(d, "t", "--workers 2 --heartbeat_timeout 1", kTrain, &port);
  ASSERT_FALSE(port.empty()) << Read(d + "/coord.log");
  const std::string worker = "env FG_RUN_TOKEN=t " + kFlexgraph + " worker --coordinator 127.0.0.1:" + port;
  const pid_t early = fork();
  if (early == 0) {
    const std::string cmd = "exec " + worker + kTrain + " > " + d + "/early.log 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  std::string out;
  EXPECT_EQ(Shell(worker + kTrain, &out), 0) << out << Read(d + "/coord.log");
  int st = 0;
  waitpid(early, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Read(d + "/early.log");
  waitpid(coord, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Read(d + "/coord.log");
}

TEST(Launch, WorkersOfAKilledCoordinatorFailNamingIt) {
  const std::string d = Dir("fg_launch_coord_killed");
  std::string port;
  const pid_t coord = StartCoordinator(d, "t", "--workers 2", kTrain, &port);
  ASSERT_FALSE(port.empty()) << Read(d + "/coord.log");
  std::vector<pid_t> workers;
  for (int w = 0; w < 2; ++w) {
    const pid_t p = fork();
    if (p == 0) {
      const std::string cmd = "FG_RUN_TOKEN=t exec " + kFlexgraph + " worker --coordinator 127.0.0.1:" +
                              port + kTrain + " > " + d + "/w" + std::to_string(w) + ".log 2>&1";
      execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
      _exit(127);
    }
    workers.push_back(p);
  }
  // Once both have registered, the coordinator dies.
  for (int i = 0; i < 600 && WorkerPids(d + "/coord.log").size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(coord, SIGKILL);
  waitpid(coord, nullptr, 0);
  for (int w = 0; w < 2; ++w) {
    int st = 0;
    waitpid(workers[w], &st, 0);
    const std::string log = Read(d + "/w" + std::to_string(w) + ".log");
    EXPECT_FALSE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "worker " << w << " exited 0:\n" << log;
    EXPECT_NE(log.find("coordinator at 127.0.0.1:" + port), std::string::npos) << log;
  }
}

TEST(Launch, AStoppedCoordinatorEndsTheRunNamingIt) {
  const std::string d = Dir("fg_launch_coord_stopped");
  const pid_t launch = fork();
  if (launch == 0) {
    const std::string cmd = "exec " + kFlexgraph + " launch --workers 2 --heartbeat_timeout 2 --log_dir " + d +
                            "/logs -- train --dataset " + kCora +
                            " --epochs 1000000 --threads 1 --quiet > " + d + "/launch.out 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    _exit(127);
  }
  for (int i = 0; i < 600 && WorkerPids(d + "/logs/coordinator.log").size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::vector<pid_t> workers = WorkerPids(d + "/logs/coordinator.log");
  ASSERT_EQ(workers.size(), 2u) << Read(d + "/logs/coordinator.log");
  // The coordinator's pid: the process listening as the run's coordinator.
  std::string ps;
  Shell("pgrep -f 'flexgraph coordinator .*" + d + "/logs/coordinator.port'", &ps);
  const pid_t coord = static_cast<pid_t>(std::atol(ps.c_str()));
  ASSERT_GT(coord, 0) << ps;
  const auto t0 = std::chrono::steady_clock::now();
  kill(coord, SIGSTOP);
  int st = 0;
  waitpid(launch, &st, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string out = Read(d + "/launch.out");
  EXPECT_FALSE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << out;
  EXPECT_LT(seconds, 20) << out;
  EXPECT_NE(out.find("the coordinator (pid " + std::to_string(coord) + ") has been stopped"),
            std::string::npos) << out;
  // Nothing is left behind.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (pid_t p : workers) EXPECT_NE(kill(p, 0), 0) << "worker pid " << p << " still running";
  EXPECT_NE(kill(coord, 0), 0) << "coordinator still running";
}


TEST(Launch, AWorkerWithAnotherConfigurationIsRefusedAndTheRunGoesOn) {
  // A registration with the run's token and another configuration is refused, naming the field, and
  // logged; the run, registering or running, goes on without it.
  const std::string d = Dir("fg_launch_config");
  const std::string train =
      " -- train --dataset " + kCora + " --epochs 300 --threads 1 --quiet --summary_json " + d + "/run.json";
  std::string port;
  const pid_t coord = StartCoordinator(d, "t", "--workers 2", train, &port);
  ASSERT_FALSE(port.empty()) << Read(d + "/coord.log");
  const std::string worker = "env FG_RUN_TOKEN=t " + kFlexgraph + " worker --coordinator 127.0.0.1:" + port + train;
  // One worker as configured, waiting for the other...
  Reaper reaper{{coord}};
  const pid_t good0 = Background(worker, d + "/good0.log");
  reaper.pids.push_back(good0);
  for (int i = 0; i < 600 && WorkerPids(d + "/coord.log").empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // ...one with another learning rate: refused, naming the field...
  std::string out;
  EXPECT_EQ(Shell(worker + " --lr 0.02", &out), 1);
  EXPECT_NE(out.find("runs another configuration"), std::string::npos) << out;
  EXPECT_NE(out.find("train.lr: 0.01 -> 0.02"), std::string::npos) << out;
  // ...and the second as configured: the run starts.
  const pid_t good1 = Background(worker, d + "/good1.log");
  reaper.pids.push_back(good1);
  for (int i = 0; i < 600 && WorkerPids(d + "/coord.log").size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(WorkerPids(d + "/coord.log").size(), 2u) << Read(d + "/coord.log");
  // While it trains, another registration with another configuration: refused; the run goes on.
  EXPECT_EQ(Shell(worker + " --lr 0.03", &out), 1);
  EXPECT_NE(out.find("train.lr: 0.01 -> 0.03"), std::string::npos) << out;
  EXPECT_TRUE(Running(good0) && Running(good1)) << "the run ended before the second refusal:\n" << Read(d + "/good0.log");
  EXPECT_EQ(ExitStatus(good0), 0) << Read(d + "/good0.log");
  EXPECT_EQ(ExitStatus(good1), 0) << Read(d + "/good1.log");
  EXPECT_EQ(ExitStatus(coord), 0) << Read(d + "/coord.log");
  EXPECT_EQ(Losses(Read(d + "/run.json")).size(), 300u);
  // Both refusals are in the coordinator's log, naming the worker.
  const std::string log = Read(d + "/coord.log");
  EXPECT_NE(log.find("coordinator: refused a registration: worker at 127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("train.lr: 0.01 -> 0.02"), std::string::npos) << log;
  EXPECT_NE(log.find("train.lr: 0.01 -> 0.03"), std::string::npos) << log;
}

TEST(Launch, WrongTokenAndUnreachableCoordinatorAreClearErrors) {
  const std::string d = Dir("fg_launch_token");
  // A coordinator expecting one worker, and a worker with the wrong token.
  std::string port;
  const pid_t coord = StartCoordinator(d, "right", "--workers 1", " -- train --dataset " + kCora, &port);
  ASSERT_FALSE(port.empty()) << Read(d + "/coord.log");
  std::string out;
  EXPECT_EQ(Shell("env FG_RUN_TOKEN=wrong " + kFlexgraph + " worker --coordinator 127.0.0.1:" + port +
                kTrain, &out), 1);
  EXPECT_NE(out.find("wrong run token"), std::string::npos) << out;
  // The token comes from a file or the environment, never the command line (ps shows it).
  { std::ofstream(d + "/token") << "wrong\n"; }
  EXPECT_EQ(Shell(kFlexgraph + " worker --token_file " + d + "/token --coordinator 127.0.0.1:" + port +
                kTrain, &out), 1);
  EXPECT_NE(out.find("wrong run token"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " worker --token right --coordinator 127.0.0.1:" + port + kTrain, &out), 2);
  EXPECT_NE(out.find("--token would show the run token to every user"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " worker --token_file " + d + "/none --coordinator 127.0.0.1:" + port +
                kTrain, &out), 2);
  EXPECT_NE(out.find("--token_file " + d + "/none: cannot read a token"), std::string::npos) << out;
  kill(coord, SIGTERM);
  waitpid(coord, nullptr, 0);
  // The coordinator logged the rejected calls with the caller's address.
  EXPECT_NE(Read(d + "/coord.log").find("coordinator: rejected a call from ipv4:127.0.0.1:"),
            std::string::npos) << Read(d + "/coord.log");
  // Nothing listens on this port any more: registration fails with a clear message.
  EXPECT_EQ(Shell("env FG_RUN_TOKEN=x " + kFlexgraph + " worker --coordinator 127.0.0.1:" +
                port + " --register_timeout 3" + kTrain, &out), 1);
  EXPECT_NE(out.find("cannot register with the coordinator at 127.0.0.1:" + port), std::string::npos)
      << out;
}

TEST(Launch, AWorkerWhoseTrainingHangsIsNamedWithinTheStallTimeout) {
  // Worker 1's training thread blocks at its third epoch (FG_FAULT's hang) while its heartbeats go
  // on: the coordinator names it once it has sent and received nothing for --stall_timeout seconds
  // while worker 0 waits for it (the peers' receives wait 10 s longer).
  const std::string d = Dir("fg_launch_stall");
  const std::string train = " -- train --dataset " + kCora + " --epochs 100000 --threads 1 --quiet";
  std::string out;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Shell(Fault("worker1:epoch.start:3:hang", "") + kFlexgraph + " launch --workers 2 --stall_timeout 4 --log_dir " +
                  d + "/logs" + train, &out), 1);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 30);  // start-up, two epochs, the stall timeout (never the 300 s default)
  EXPECT_NE(Read(d + "/logs/worker-1.log").find("fault injected: worker1 hangs at epoch.start"), std::string::npos);
  EXPECT_TRUE(std::regex_search(out, std::regex("flexgraph launch: coordinator \\(pid [0-9]+\\) exited with status 1")))
      << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("worker 1 \\(127.0.0.1:[0-9]+\\) stalled: its training has sent and "
                                                "received nothing for [0-9]+ s while its heartbeats go on, and worker 0 "
                                                "waits for it")))
      << out;
  const std::vector<pid_t> pids = WorkerPids(d + "/logs/coordinator.log");
  ASSERT_EQ(pids.size(), 2u);
  for (pid_t p : pids) EXPECT_NE(kill(p, 0), 0) << "process " << p << " still alive";
  // Started by hand, without a launcher to stop it, the hung worker ends itself once the
  // coordinator has stopped the run and its training has not ended within --coordinator_timeout.
  std::string port;
  const pid_t coord = StartCoordinator(d, "t", "--workers 2 --stall_timeout 4", train, &port);
  ASSERT_FALSE(port.empty()) << Read(d + "/coord.log");
  const std::string worker = "env FG_RUN_TOKEN=t " + kFlexgraph + " worker --coordinator_timeout 3 --stall_timeout 4 "
                             "--coordinator 127.0.0.1:" + port;
  const pid_t w0 = Background(worker + " --rank 0" + train, d + "/w0.log");
  const pid_t w1 = Background(Fault("worker1:epoch.start:3:hang", "") + worker + " --rank 1" + train, d + "/w1.log");
  Reaper reaper{{coord, w0, w1}};
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(ExitStatus(coord), 1) << Read(d + "/coord.log");
  EXPECT_EQ(ExitStatus(w0), 1) << Read(d + "/w0.log");
  EXPECT_EQ(ExitStatus(w1), 1) << Read(d + "/w1.log");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 30);
  EXPECT_NE(Read(d + "/coord.log").find("stalled"), std::string::npos) << Read(d + "/coord.log");
  EXPECT_NE(Read(d + "/w1.log").find("its training has not ended (hung?): exiting"), std::string::npos)
      << Read(d + "/w1.log");
}

TEST(Launch, AWorkerThatHangsBeforeItsFirstMessageOrAloneIsNamed) {
  // No peer waits for a hung worker in these runs: worker 1 hangs before its training is set up
  // (it has sent nothing, so worker 0 waits for nobody it has heard from), and a single worker has
  // no peer at all. The coordinator names the worker whose training neither moves on nor
  // communicates for --stall_timeout seconds.
  const std::string d = Dir("fg_launch_stall_quiet");
  const std::string train = " -- train --dataset " + kCora + " --epochs 100000 --threads 1 --quiet";
  const std::regex quiet("worker ([01]) \\(127.0.0.1:[0-9]+\\) stalled: its training has neither moved on nor "
                         "communicated for [0-9]+ s while its heartbeats go on \\(--stall_timeout 4\\)");
  for (const auto& [workers, fault] : std::vector<std::pair<int, std::string>>{
           {2, "worker1:worker.registered:1:hang"}, {1, "worker0:epoch.start:2:hang"}}) {
    SCOPED_TRACE(fault);
    std::string out;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(Shell(Fault(fault, "") + kFlexgraph + " launch --workers " + std::to_string(workers) +
                        " --stall_timeout 4 --log_dir " + d + "/logs" + std::to_string(workers) + train,
                    &out),
              1);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m, quiet)) << out;
    EXPECT_EQ(m[1].str(), workers == 2 ? "1" : "0") << out;
    const std::vector<pid_t> pids = WorkerPids(d + "/logs" + std::to_string(workers) + "/coordinator.log");
    ASSERT_EQ(pids.size(), static_cast<size_t>(workers));
    for (pid_t p : pids) EXPECT_NE(kill(p, 0), 0) << "process " << p << " still alive";
  }
}

TEST(Launch, UsageErrors) {
  std::string out;
  EXPECT_EQ(Shell(kFlexgraph + " launch --workers 0 -- train", &out), 2);
  EXPECT_EQ(Shell(kFlexgraph + " launch --bogus 1", &out), 2);
  EXPECT_NE(out.find("unknown flag '--bogus'"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " launch -- train --model nosuchmodel", &out), 2);
  EXPECT_NE(out.find("unknown model 'nosuchmodel'"), std::string::npos) << out;
  // More local workers than this machine's memory holds: refused before any process starts.
  EXPECT_EQ(Shell(kFlexgraph + " launch --workers 4000 -- train --dataset " + kCora, &out), 2);
  EXPECT_NE(out.find("4000 local workers and a coordinator need at least"), std::string::npos) << out;
}

}  // namespace
