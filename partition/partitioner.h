// Partitioners: assign every vertex of the union graph (partition/union_graph.h) to one of P parts.
//   hash      owner = hash(seed, v) mod P — no locality, the baseline;
//   range     contiguous ranges of global ids with equal vertex counts;
//   metis     METIS_PartGraphKway with vertex weights (estimated compute, and estimated memory as a
//             second constraint) and edge weights (dependencies), minimising the edge cut under a
//             3% imbalance of each weight.
// The application-driven refinement on top of METIS is partition/rebalancer.h. METIS's memory need
// is estimated before it runs; a request that will not fit is refused with the numbers.
// Thread-safety: partitioners are stateless; Assign may run concurrently (METIS calls take turns:
// its random state is process-wide).
//
//   PartitionInput in{.graph = &union_graph, .vertex_weights = MetisVertexWeights(cost)};
//   FG_ASSIGN_OR_RETURN(std::vector<int32_t> owners, MakePartitioner(Method::kMetis)->Assign(in, 8));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/tensor/csr.h"

namespace fg::partition {

class CostModel;

enum class Method { kHash, kRange, kMetis, kBalanced };
// "hash", "range", "metis", "balanced".
const char* MethodName(Method m);
// Errors list the valid names.
absl::StatusOr<Method> ParseMethod(const std::string& name);

struct PartitionInput {
  const Csr* graph = nullptr;           // symmetric, no self loops
  std::vector<int32_t> vertex_weights;  // per vertex, >= 1 (empty: all 1)
  std::vector<int32_t> memory_weights;  // per vertex, >= 1: a second balance constraint (empty: none)
  std::vector<int32_t> edge_weights;    // per adjacency entry, symmetric, >= 1 (empty: all 1)
  uint64_t seed = 0;
  int64_t memory_limit_bytes = 0;       // METIS: refuse above this (0: the available memory)
};

class Partitioner {
 public:
  virtual ~Partitioner() = default;
  virtual Method method() const = 0;
  // Owner part of every vertex, in [0, num_parts). Requires 1 <= num_parts <= vertices.
  virtual absl::StatusOr<std::vector<int32_t>> Assign(const PartitionInput& input,
                                                      int num_parts) const = 0;
};

// kHash, kRange or kMetis (kBalanced is METIS followed by the Rebalancer; see plan.h).
std::unique_ptr<Partitioner> MakePartitioner(Method method);

// Bytes METIS_PartGraphKway needs, roughly, for a graph of n vertices and nnz adjacency entries
// (our copies of the arrays plus METIS's coarsening hierarchy and work space; conservative).
int64_t EstimateMetisBytes(int64_t n, int64_t nnz, int num_parts);

// METIS weights from the cost model: vertex weight = estimated compute scaled to integers with
// the mean vertex at 64 units (at least 1); edge weight = 1 + the number of layers in which one
// endpoint is an HDG leaf of the other.
std::vector<int32_t> MetisVertexWeights(const CostModel& cost);
// The second constraint: a vertex's activation rows (its HDG nodes' and transforms' floats over the
// layers), scaled the same way. A worker's memory is mostly these rows, so parts balanced in
// compute alone can differ in memory by a third (RMAT: high-degree vertices cost compute, the
// many low-degree ones memory).
std::vector<int32_t> MetisMemoryWeights(const CostModel& cost);
std::vector<int32_t> MetisEdgeWeights(const CostModel& cost);

}  // namespace fg::partition
