// Workload: what a model's layers make each vertex compute and fetch on a dataset, taken from the
// HDGs the layers' NeighborSelection builds on the actual graph. It is the input of the cost model
// (partition/cost_model.h). The model is the one registered in nau::ModelRegistry, built and
// selected exactly as the trainer does it at epoch 0 (ModelSpec, Model::Build, Roots,
// nau::SelectHdg, HDGs shared by nau::SharedSelectionKey), so the cost model balances the HDGs
// training computes. Widths and dense flops come from each layer's nau::Layer::Cost.
// Immutable after building; thread-safe for reads. BuildWorkload runs selections in parallel and is
// deterministic (counter-based randomness keyed by seed and global vertex id).
//
//   FG_ASSIGN_OR_RETURN(Workload w, BuildWorkload(dataset, runtime::WorkloadOptionsFrom(config)));
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"
#include "hdg/hdg.h"
#include "nau/model.h"

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
  // The layer's HDG as training builds it (roots and leaves are global ids; layers may share one).
  hdg::HdgPtr hdg;
};

struct Workload {
  std::string model;
  int64_t num_vertices = 0;
  std::vector<LayerWorkload> layers;
  // Per vertex, summed over the layers where it is a root or an input row, per forward pass:
  std::vector<double> entry_floats;  // HDG entries x width (sparse aggregation work)
  std::vector<double> row_floats;    // HDG nodes x width (per-node aggregation and update work)
  std::vector<double> gemm_flops;    // dense transforms
  // HDG entries over all layers and levels (reporting).
  int64_t hdg_entries = 0;
};

struct WorkloadOptions {
  std::string model;  // the name of a model registered in nau::ModelRegistry
  // Hyperparameters, seed, options and target type ("": the dataset's labelled type) as the run
  // resolves them (runtime::WorkloadOptionsFrom); BuildWorkload sets the data fields.
  nau::ModelSpec spec;
};

// Builds the workload of `options.model` on `dataset`. Errors name the unregistered model (and
// list the registered ones), the target type, or what the model's Build rejects.
absl::StatusOr<Workload> BuildWorkload(const graph::Dataset& dataset, const WorkloadOptions& options);

}  // namespace fg::partition
