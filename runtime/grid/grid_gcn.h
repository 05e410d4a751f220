// A two-layer GCN trained over a process grid, its aggregations the grid products (2D: Spmm2D; 1.5D:
// Spmm15D; 3D: Spmm3D): logits = A relu(A X W1) W2 with A the GCN-normalised adjacency, the aggregation first
// in each layer, full-batch gradient descent on the mean negative log-likelihood of the training
// vertices. The dense products and the loss run on each worker's rows (2D, 3D: the layer's
// aggregate gathered along the grid row first; every copy of a row weighs 1/copies in the loss);
// the weights' gradients are summed over the whole run (world AllReduce at step 1000, the loss at
// step 1001 of the epoch: blocks.h kGridSteps) and every worker takes the same step.
// Collective over `world`; no dropout, no bias. Thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/tensor/csr.h"
#include "flexgraph/tensor/tensor.h"
#include "runtime/comm/communicator.h"
#include "runtime/grid/grid_spec.h"

namespace fg::grid {

struct GridGcnOptions {
  GridScheme scheme = GridScheme::kTwoD;
  int pr = 1, pc = 1;  // 2D grid (3D: with pf)
  int pf = 1;          // 3D fibres
  int c = 1;           // 1.5D replication
  bool aware = true;   // sparsity-aware products
  int epochs = 10;
  float lr = 0.5f;
  uint64_t permutation_seed = 1;  // the random vertex permutation of the blocks
};

// The whole problem, the same on every worker.
struct GcnProblem {
  Csr a;           // n x n, rows are outputs (GcnNormalized)
  Tensor features; // float [n, f]
  Tensor labels;   // int64 [n]
  Tensor train;    // int64 vertex ids
  Tensor w1, w2;   // initial weights [f, h], [h, classes]
};

// A + I normalised as Kipf & Welling: entry (v, u) of the in-edges (self loops dropped) and (v, v)
// weigh 1 / sqrt(d_v d_u), d = in-degree + 1 (udf_examples/gcn's weights).
Csr GcnNormalized(const Csr& in_edges);

// Trains and returns each epoch's loss over all training vertices (before that epoch's step),
// identical on every worker. Errors name the grid or the worker whose messages failed.
absl::StatusOr<std::vector<double>> TrainGridGcn(runtime::Communicator& world, const GcnProblem& problem,
                                                 const GridGcnOptions& options);

}  // namespace fg::grid
