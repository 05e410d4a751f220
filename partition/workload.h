// Workload: what a model's layers make each vertex compute and fetch on a dataset, taken from the
// HDGs the layers' NeighborSelection builds on the actual graph. It is the input of the cost model
// (partition/cost_model.h). A model registered in nau::ModelRegistry is built as the trainer builds
// it (ModelSpec, Roots, SelectNeighbors); for models not registered in this binary, built-in
// selections stand in with the published setups:
//   pinsage  top_k most visited vertices of `num_traces` random walks of `n_hops` steps (weighted
//            by visit counts); on heterogeneous graphs walks cross other types and keep the root's type
//   magnn    metapath instances T-X-T for every relation between the target type T and a type X
//            (T-T-T on homogeneous graphs), at most `max_instances` per metapath and root (sampled)
// Widths: GCN aggregates min(in, out) (it projects first when that narrows), PinSage and MAGNN
// hidden (MAGNN's upper levels hidden x heads), other models their input width.
// Immutable after building; thread-safe for reads. BuildWorkload runs selections in parallel and is
// deterministic (counter-based randomness keyed by seed and global vertex id).
//
//   FG_ASSIGN_OR_RETURN(Csr g, BuildUnionGraph(dataset.graph));
//   FG_ASSIGN_OR_RETURN(Workload w, BuildWorkload(dataset, g, {.model = "gcn"}));
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"

namespace fg::partition {

// One layer's dependency structure in the unified vertex space.
struct LayerWorkload {
  std::string schema;                // SchemaTree::ToString()
  std::vector<int32_t> roots;        // global ids of the layer's roots
  // The bottom (level-1) HDG nodes grouped by root: root k owns rows [root_nodes[k], root_nodes[k+1])
  // of `bottom`, whose columns are the global ids of the leaves.
  std::vector<int64_t> root_nodes;
  Csr bottom;
  int64_t in_width = 0, out_width = 0;
  int64_t message_width = 0;         // floats per leaf vector (what peers exchange)
  bool decomposable = false;         // bottom reduction may run as partial aggregation
  std::vector<int64_t> nodes_per_level, entries_per_level;  // HDG totals, levels 1..L
};

struct Workload {
  std::string model;
  std::string source;  // "registered" (the model's own layers) or "built-in"
  int64_t num_vertices = 0;
  std::vector<LayerWorkload> layers;
  // Per vertex, summed over the layers where it is a root or an input row, per forward pass:
  std::vector<double> entry_floats;  // HDG entries x width (sparse aggregation work)
  std::vector<double> row_floats;    // HDG nodes x width (per-node aggregation and update work)
  std::vector<double> gemm_flops;    // dense transforms
  // HDG entries over all layers and levels (reporting).
  int64_t hdg_entries = 0;
};

// Where a model's selections come from.
enum class WorkloadSource {
  kAuto,        // the registered model when there is one, else the built-in stand-in
  kRegistered,  // the registered model only
  kBuiltin,     // the built-in stand-in only (pinsage, magnn)
};

struct WorkloadOptions {
  std::string model = "gcn";
  WorkloadSource source = WorkloadSource::kAuto;
  int hidden = 0;   // 0: the model's default
  int layers = 0;   // 0: the model's default
  int heads = 0;    // 0: the model's default
  uint64_t seed = 0;
  std::string target_type;  // "": the dataset's labeled type
  std::map<std::string, std::string> options;  // model options (e.g. num_traces=10, max_instances=32)
};

// Builds the workload of `options.model` on `dataset`; `union_graph` is BuildUnionGraph(dataset.graph)
// (built-in selections walk it). Errors name the unknown model, option or target type.
absl::StatusOr<Workload> BuildWorkload(const graph::Dataset& dataset, const Csr& union_graph,
                                       const WorkloadOptions& options);

// Models BuildWorkload knows without a registration ("pinsage", "magnn").
std::vector<std::string> BuiltinWorkloadModels();

}  // namespace fg::partition
