// The leader's part of a distributed run, whoever plays it: the gRPC coordinator, or rank 0 of an
// MPI run. It plans who owns which vertices, and folds the workers' metrics into the run summary.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"
#include "partition/cost_model.h"
#include "partition/plan.h"
#include "proto/flexgraph.pb.h"
#include "runtime/grid/grid_spec.h"
#include "runtime/train/config.h"
#include "runtime/train/trainer.h"

namespace fg::runtime {

struct OwnerPlan {
  std::vector<int32_t> owners;  // per vertex; empty for a partitioned dataset (its parts own) or a grid
  std::string description;      // one line for the leader's log
  std::string summary;          // the partition's table, for the workers' logs
};

// The cost model a run of `train` partitions `ds` with (loaded whole, int32 indices, the run's view
// applied): the workload of its model's HDGs.
absl::StatusOr<partition::CostModel> CostModelForRun(const graph::Dataset& ds, const flexgraph::RunConfig& train);
// The partition a run of `train` over `workers` uses for `ds`: `method` on the union graph, METIS
// weighted by `cost` (CostModelForRun). `flexgraph plan` rebuilds a run's partition with it.
absl::StatusOr<partition::PartitionPlan> PartitionForRun(const graph::Dataset& ds, const partition::CostModel& cost,
                                                        const flexgraph::RunConfig& train, int workers,
                                                        partition::Method method);

// A dataset loaded whole is partitioned here with `method` (hash, range, metis or balanced), unless
// the run has a process grid `grid` (--exchange 2d ...: no owners, the grid has its blocks); a
// partitioned dataset's metadata is read, and its part count must equal `workers` or the grid's row
// blocks (each block's workers read its part).
absl::StatusOr<OwnerPlan> PlanOwners(const flexgraph::RunConfig& train, int workers, const std::string& method,
                                     const grid::GridSpec& grid = {});

// What a worker reports when it ends: its traffic, time split and (rank 0) its summary, or its error.
flexgraph::MetricsRequest WorkerMetrics(int rank, const absl::StatusOr<TrainResult>& result);

// Writes the run summary (train.output().summary_json(), if set): rank 0's summary plus every
// worker's traffic and time split, the world size and `leader_peak_rss_bytes`.
absl::Status WriteRunSummary(const flexgraph::RunConfig& train,
                             const std::vector<flexgraph::MetricsRequest>& metrics,
                             double leader_peak_rss_bytes);

}  // namespace fg::runtime
