// What `--exchange auto` runs in a distributed full-graph run: FlexGraph's 1D exchange (per peer,
// rows or partial sums) or a process grid (1.5D at each c with c^2 dividing P, every 2D and 3D
// shape with sides of 2 or more; sparsity-aware), whichever runtime/plan predicts to send the fewest bytes per
// worker and epoch for this graph, this partition, this model and P workers (ties: 1D), among the
// grids predicted to fit the workers' memory (GridSetupBytes included). Runs where
// a grid cannot train (see runtime/train/trainer_grid.cc StartGrid) and models runtime/plan does not
// describe (only gcn, sage, gin and sgc) keep the 1D exchange. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/tensor/csr.h"
#include "runtime/grid/grid_spec.h"

namespace fg::runtime {

// No grid below 4 workers (1.5D needs c^2 | P, 2D and 3D a side of 2): fewer keep the 1D exchange.
inline constexpr int kMinGridWorkers = 4;

struct ExchangeChoiceInput {
  const Csr* adjacency = nullptr;     // in-edges, rows are destinations, the whole graph
  std::vector<int32_t> owners;        // the 1D partition of the run
  int workers = 1;
  std::string model;                  // registered name
  int64_t features = 0, hidden = 0, classes = 0;
  int layers = 2;
  int evaluations_per_epoch = 1;      // forward-only passes per epoch
  // Each worker's memory: a grid the plan predicts to need more per worker is not chosen (0: no
  // limit).
  double memory_bytes = 0;
};

struct ExchangeChoice {
  grid::GridSpec grid;  // inactive: the 1D exchange
  std::string reason;   // e.g. "3d 2x2x2 aware: 5.50 MB per worker and epoch predicted, 1d partial 7.59 MB"
};

ExchangeChoice ChooseExchange(const ExchangeChoiceInput& in);

// What this implementation's grid set-up allocates beyond the scheme's own memory (runtime/plan's
// prediction) on a grid of `blocks` row blocks, each cut into `slices` (3D: the fibres; else 1):
// a layer's HDG over the worker's held rows, as a matrix's rows (24 bytes per held entry;
// distributed_executor.cc PlanGridLayer), and while the matrix is gathered the entries sent and
// received and the block's rows of A and A^T (64 bytes per entry of a block's rows;
// grid/grid_aggregation.cc AddMatrix), with the blocks' permutation (16 bytes per vertex). Entries
// are the adjacency's (`self_loops`: one more per vertex), spread evenly. ChooseExchange adds it to
// each grid's.
double GridSetupBytes(const Csr& adjacency, bool self_loops, int blocks, int slices);

// The memory each worker plans with, the same on every worker: worker r's host (hosts[r], a key)
// has available[r] bytes, shared by the workers with that key; the least share over the workers.
// Requires hosts.size() == available.size() > 0.
double MemoryPerWorker(const std::vector<double>& hosts, const std::vector<double>& available);

}  // namespace fg::runtime
