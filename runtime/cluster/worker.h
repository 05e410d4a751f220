// A distributed worker process: serves its Worker service, registers with the coordinator (rank,
// peers and partition plan come back), sends heartbeats, trains its partition with the Trainer over
// a gRPC communicator, and reports metrics. A stop from the coordinator, a dead peer or an
// unreachable coordinator ends the run with an error naming who failed — never a hang: a worker
// whose training does not end within coordinator_timeout of the stop exits. Its heartbeats report
// its training's communication, so that the coordinator names a worker whose training hangs.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/distributed/exchange.h"
#include "runtime/comm/grpc_communicator.h"
#include "runtime/train/trainer.h"

namespace fg::runtime {

struct WorkerOptions {
  std::string coordinator;           // host:port
  std::string token;
  Tls tls;
  std::string host = "127.0.0.1";    // interface the Worker service listens on
  std::string advertise_host;        // address peers use ("" = host)
  int rank_hint = -1;                // -1: from SLURM_PROCID / OMPI_COMM_WORLD_RANK, else any
  double register_timeout_seconds = 300;  // waiting for the coordinator and the other workers
  double heartbeat_interval_seconds = 1.0;
  double coordinator_timeout_seconds = 30;  // give up when the coordinator is silent this long
  // The coordinator's stall timeout (coordinator.h); a receive waits 10 s longer, so that the
  // coordinator names a stalled peer before this worker's receive from it times out.
  double stall_timeout_seconds = 300;
  ExchangeMode exchange = ExchangeMode::kAuto;
  // Active: a process grid instead of the per-peer exchange. With auto_grid (--exchange auto), the
  // trainer may choose one (runtime/train/exchange_choice.h); without (--exchange 1d), kAuto is the
  // per-peer 1D choice.
  grid::GridSpec grid;
  bool auto_grid = true;
  bool pipeline = true;
};

struct MpiWorkerOptions {
  std::string partition_method = "metis";  // how rank 0 partitions a dataset loaded whole
  double recv_timeout_seconds = 300;  // a receive from a peer that sends nothing this long fails, naming it
  ExchangeMode exchange = ExchangeMode::kAuto;
  // Active: a process grid instead of the per-peer exchange. With auto_grid (--exchange auto), the
  // trainer may choose one (runtime/train/exchange_choice.h); without (--exchange 1d), kAuto is the
  // per-peer 1D choice.
  grid::GridSpec grid;
  bool auto_grid = true;
  bool pipeline = true;
};

// A worker of an MPI run (`mpirun -np P flexgraph worker --comm mpi -- train ...`, or srun): the
// ranks are MPI's, no port is opened, and rank 0 also does the leader's work (runtime/cluster/leader.h):
// it checks that every rank runs its configuration, plans the owners and writes the summary. A
// failure on any rank is printed and ends every rank (MPI_Abort), never a hang.
absl::StatusOr<TrainResult> RunMpiWorker(const MpiWorkerOptions& options, const flexgraph::RunConfig& train);

// The rank a scheduler assigned through the environment, or -1.
int RankFromEnvironment();

// A Slurm job step's layout (srun): this task's rank and the task count (SLURM_PROCID,
// SLURM_NTASKS), the step's first node (SLURM_STEP_NODELIST or SLURM_NODELIST), where rank 0 runs the
// coordinator, and this node's name (SLURMD_NODENAME).
struct SlurmStep {
  int rank = 0, tasks = 1;
  std::string first_node, this_node;
};
// The step from the environment; nullopt outside Slurm; an error naming the variable when one is malformed.
absl::StatusOr<std::optional<SlurmStep>> SlurmStepFromEnvironment();
// The first host of a Slurm host list: "node[07-09,12],gpu1" -> "node07".
absl::StatusOr<std::string> FirstHostOf(const std::string& nodelist);

// `train` is the run's resolved configuration (runtime/train/config.h).
absl::StatusOr<TrainResult> RunWorker(const WorkerOptions& options,
                                      const flexgraph::RunConfig& train);

}  // namespace fg::runtime
