// A distributed worker process: serves its Worker service, registers with the coordinator (rank,
// peers and partition plan come back), sends heartbeats, trains its partition with the Trainer over
// a gRPC communicator, and reports metrics. A stop from the coordinator, a dead peer or an
// unreachable coordinator ends the run with an error naming who failed — never a hang.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "runtime/exchange.h"
#include "runtime/trainer.h"

namespace fg::runtime {

struct WorkerOptions {
  std::string coordinator;           // host:port
  std::string token;
  std::string host = "127.0.0.1";    // interface the Worker service listens on
  std::string advertise_host;        // address peers use ("" = host)
  int rank_hint = -1;                // -1: from SLURM_PROCID / OMPI_COMM_WORLD_RANK, else any
  double register_timeout_seconds = 300;  // waiting for the coordinator and the other workers
  double heartbeat_interval_seconds = 1.0;
  double coordinator_timeout_seconds = 30;  // give up when the coordinator is silent this long
  double recv_timeout_seconds = 300;
  ExchangeMode exchange = ExchangeMode::kAuto;
  bool pipeline = true;
};

// The rank a scheduler assigned through the environment, or -1.
int RankFromEnvironment();

// `train` is the run's resolved configuration (runtime/config.h).
absl::StatusOr<TrainResult> RunWorker(const WorkerOptions& options,
                                      const flexgraph::RunConfig& train);

}  // namespace fg::runtime
