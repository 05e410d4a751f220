// PartitionPlan: the owner part of every global vertex (unified vertex space, nau::VertexSpace)
// plus the cost model's per-part summary — what `flexgraph partition` writes and the distributed
// runtime reads. Partition() runs a request end to end: hash, range, METIS, or METIS followed by
// the Rebalancer ("balanced"). A plan is applied by writing a partitioned dataset
// (partition/partitioned_dataset.h). Thread-safety: plans are values; functions share no state.
//
//   FG_ASSIGN_OR_RETURN(CostModel cost, CostModel::Create(ds, {.model = config.model().name()}, coefficients));
//   FG_ASSIGN_OR_RETURN(PartitionPlan plan,
//                       Partition(ds, cost, {.num_parts = 4, .method = Method::kBalanced}));
//   std::vector<int32_t> mine = plan.OwnedVertices(rank);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"
#include "partition/cost_model.h"
#include "partition/partitioner.h"
#include "partition/rebalancer.h"

namespace flexgraph {
class PartitionPlan;
}

namespace fg::partition {

struct PartitionRequest {
  int num_parts = 1;
  Method method = Method::kMetis;
  uint64_t seed = 0;
  // METIS: refuse when its estimated memory exceeds this (0: the memory available).
  int64_t metis_memory_limit_bytes = 0;
  RebalanceOptions rebalance;  // kBalanced only
};

struct PartitionPlan {
  int num_parts = 0;
  Method method = Method::kHash;
  std::string dataset, model;
  uint64_t seed = 0;
  std::vector<std::string> node_types;  // the vertex space the owners refer to
  std::vector<int64_t> type_sizes;
  std::vector<int32_t> owners;          // per global vertex, in [0, num_parts)
  PartitionStats stats;                 // per-part summary, as estimated when partitioning
  double seconds = 0;                   // time Partition() took (not stored)

  int64_t num_vertices() const { return static_cast<int64_t>(owners.size()); }
  // Global ids owned by `part`, ascending.
  std::vector<int32_t> OwnedVertices(int part) const;
};

// Partitions `dataset` with the request's method; the plan's stats come from `cost`. Errors:
// parts < 1, more parts than vertices, METIS refusing for lack of memory.
absl::StatusOr<PartitionPlan> Partition(const graph::Dataset& dataset, const CostModel& cost,
                                        const PartitionRequest& request);

// Checks that the plan was made for this dataset's vertex space (types and sizes) and that every
// owner lies in [0, num_parts).
absl::Status CheckPlanMatches(const PartitionPlan& plan, const graph::Dataset& dataset);

// The plan as stored in a partitioned dataset's metadata (partition/partitioned_dataset.h).
flexgraph::PartitionPlan ToProto(const PartitionPlan& plan);

// The plan's summary as one JSON object: dataset, model, method, parts, num_vertices, edge_cut,
// ghosts_total, imbalance, max/mean cost (seconds), seconds (partitioning time), and per part
// owned_vertices, edges, ghosts_per_peer, compute_seconds, comm_seconds.
std::string SummaryJson(const PartitionPlan& plan);

}  // namespace fg::partition
