// Coordinator: one per distributed run. Partitions a dataset that every worker loads whole (or
// reads the metadata of a partitioned dataset, whose parts the workers load), registers the
// workers and tells each its rank, peers and owner table, watches their heartbeats, and collects their
// metrics into the run summary. A worker that misses heartbeats for `heartbeat_timeout` seconds,
// or reports a failure, stops the run with an error naming it; so does a worker whose heartbeats go
// on while its training has communicated with nobody for `stall_timeout` seconds and another worker
// waits for it (a hung training thread), or that has neither moved on nor communicated for that
// long while it waits for no peer (hung before its first message, or alone). A worker that registers with another configuration is
// refused and logged; the run goes on. Never relays features.
// Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/train/config.h"
#include "runtime/comm/grpc_communicator.h"
#include "runtime/grid/grid_spec.h"

namespace fg::runtime {

struct CoordinatorOptions {
  int workers = 1;
  std::string host = "127.0.0.1";
  int port = 0;  // 0: ephemeral
  std::string token;
  Tls tls;
  double heartbeat_timeout_seconds = 10;
  double register_timeout_seconds = 120;
  // Once training has communicated: how long a worker may go without sending or receiving while
  // another waits for it before it is named as stalled (its peers' receives wait 10 s longer).
  double stall_timeout_seconds = 300;
  std::string partition_method = "metis";  // hash, range, metis or balanced
  grid::GridSpec grid;                     // the workers' process grid (--exchange 2d ...), if any
};

class Coordinator {
 public:
  static absl::StatusOr<std::unique_ptr<Coordinator>> Start(const CoordinatorOptions& options,
                                                            const flexgraph::RunConfig& train);
  ~Coordinator();
  int port() const;
  // Blocks until every worker reported its final metrics (OK, summary written when asked) or the
  // run failed (the error names the worker).
  absl::Status Wait();

 private:
  class Impl;
  explicit Coordinator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fg::runtime
