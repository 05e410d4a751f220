// DistributedExecutor: runs a model's layers on this worker's rows, the same way for one process and
// many. Alone it is the HybridExecutor. With peers it wraps the HybridExecutor in the exchange
// (per peer, row fetch or partial aggregation at the owner, the sends posted before the interior
// aggregation so that they overlap), and performs the cross-worker reductions the framework owns:
// the parameter gradients (a ring all-reduce over one flattened buffer), the declared reductions of
// layers (LayerContext::SumOverRoots) and metric sums. Models never call a collective.
// Communication errors are recorded (autograd closures cannot return a Status) and reported by
// status(). Thread-compatible; every worker makes the same calls in the same order.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/nn/module.h"
#include "nau/executor.h"
#include "runtime/comm/communicator.h"
#include "runtime/distributed/edge_return.h"
#include "runtime/distributed/exchange.h"
#include "runtime/grid/grid_aggregation.h"

namespace fg::runtime {

// A worker's place in a distributed run: its communicator and, when every worker loads the whole
// dataset, the partition plan (the owning rank of every global vertex, moved into the executor's
// Ownership; empty for a partitioned dataset, whose parts carry their bounds). Null
// communicator: single process.
// This worker's traffic and time split over a run (zero in single-process runs).
struct Traffic {
  int world_size = 1;
  // distributed runs: "1d auto", "1d rows", "1d partial" or the grid ("2d 2x2 aware"); sets of
  // graphs: "data-parallel graphs" or "vertex-sharded batches (1d rows)"
  std::string exchange;
  int64_t bytes_features = 0, bytes_partials = 0, bytes_gradients = 0, bytes_allreduce = 0;
  int64_t bytes_control = 0;  // sampling's requests and rows, and other control messages
  int64_t bytes_setup = 0;    // once per run: a grid's matrix blocks (TrafficKind::kSetup)
  // wait_seconds: blocked in receives over the whole run (set-up and evaluation included);
  // compute_seconds: the training steps' wall time not spent in those waits (the trainer's).
  double compute_seconds = 0, wait_seconds = 0, overlap = 0;
  // Vectors received per forward pass (all layers): as chosen per peer, and the alternatives.
  int64_t vectors_chosen = 0, vectors_rows_only = 0, vectors_partial_only = 0, vectors_naive = 0;
};

struct DistributedSetup {
  Communicator* comm = nullptr;
  std::vector<int32_t> owners;
  ExchangeMode exchange = ExchangeMode::kAuto;
  bool pipeline = true;  // overlap sends with local aggregation
  // A process grid instead of the per-peer exchange (`--exchange 2d` ...; runtime/grid): every
  // worker loads the whole dataset or its block's part, holds the rows of its grid block and owns a
  // share of them.
  grid::GridSpec grid;
  // With exchange kAuto: a grid where runtime/plan predicts it sends fewer bytes than the 1D
  // exchange (runtime/train/exchange_choice.h; the command line's --exchange auto).
  bool auto_grid = false;
};

class DistributedExecutor {
 public:
  explicit DistributedExecutor(DistributedSetup setup = {});

  bool distributed() const { return setup_.comm != nullptr && setup_.comm->size() > 1; }
  int rank() const { return distributed() ? setup_.comm->rank() : 0; }
  // True when this worker owns global vertex `v` (always alone): the task reads its output row.
  bool Owns(int64_t v) const {
    return !distributed() || (grid_ ? grid_->Owns(v) : owners_.Of(v) == rank());
  }
  // True when this worker computes v's rows in the layers: its owned vertices, or over a grid the
  // rows of its block, which it shares with the block's other copies.
  bool Holds(int64_t v) const { return grid_ ? grid_->Holds(v) : Owns(v); }
  // Trains over the grid `spec` (resolved for the run's workers): builds it for `n` vertices, the
  // blocks' permutation from `seed`, or the id ranges `bounds` (a partitioned dataset's parts);
  // `automatic`: chosen by --exchange auto (the summary says so).
  // Collective; call once, before Holds and Owns are asked, in a distributed run.
  absl::Status StartGrid(const grid::GridSpec& spec, int64_t n, uint64_t seed, bool automatic,
                         std::vector<int64_t> bounds = {});
  bool grid() const { return grid_ != nullptr; }
  const DistributedSetup& setup() const { return setup_; }
  // Who owns what (set from the setup's table, or by the trainer from a part's bounds).
  void SetOwnership(Ownership owners) { owners_ = std::move(owners); }
  const Ownership& ownership() const { return owners_; }
  void SetOverride(std::optional<nau::Strategy> s) { executor_.SetOverride(s); }
  // Where the layers run: a planned layer's HDG and row keys are placed there (one process).
  void SetDevice(Device device) { device_ = device; }

  // The ids (int64) of a layer's rows: global ids in this run's vertex space, and the keys its
  // randomness (dropout masks) uses — the source dataset's ids, which a partitioned dataset
  // renumbers; the keys are the ids otherwise.
  struct Rows {
    Tensor ids, keys;
  };
  // Plans layer `i` over `hdg` (level-1 children are global vertex ids). `input` and `roots` are
  // this worker's input rows and roots, ids sorted. Collective in a distributed run (index lists
  // are exchanged with the peers), unless `same_as` names an earlier layer with the same HDG,
  // rows and bottom reduction, whose exchange it shares (every worker must pass the same).
  // Over a grid, `hdg` selects at least this worker's owned vertices, `input` are the held rows and
  // `roots` the held rows or, for the model's last layer, the owned ones (the layer's output rows).
  // Plan every layer of a pass before running it: the pass's backward refers to the plans.
  absl::Status PlanLayer(int i, const nau::Layer& layer, std::shared_ptr<const hdg::Hdg> hdg,
                         const Rows& input, const Rows& roots, int epoch, int same_as = -1);

  // Drops the global-id HDGs of the planned layers (distributed: the exchanges hold what the
  // layers run on). A layer planned later keeps its own until the next call.
  void ReleaseHdgs();

  // Starts a forward pass: sets the context's cross-worker reduction and the exchange tags.
  void BeginPass(nau::LayerContext* ctx, int epoch, bool training);
  // Layer `i` on this worker's input rows `h` (rows in input_ids order); one output row per root.
  ag::Var RunLayer(int i, nau::Layer& layer, const ag::Var& h, nau::LayerContext& ctx);

  // The table layer `i` (planned for row fetch: an edge-state layer) aggregates over, for rows `rows`
  // in its input order: [rows | its ghosts' rows, fetched from their owners], differentiably. Alone: `rows`.
  ag::Var GatherTable(int i, const ag::Var& rows);

  // Every worker's output rows, for tasks that pair rows of different workers
  // (Task::NeedsAllRows). PlanAllRows exchanges the output roots' ids once (collective);
  // AllRows returns [every root, d] in ascending global id order, differentiably (gradients
  // return to the rows' owners). all_keys(): those roots' keys, in the same order.
  absl::Status PlanAllRows(const Rows& roots, int epoch);
  ag::Var AllRows(const ag::Var& mine);
  const Tensor& all_keys() const { return all_keys_; }

  // Sums the parameters' gradients across workers (after backward).
  void AllReduceGradients(const std::vector<nn::NamedParameter>& params, int epoch);
  // Sums across workers in place; `step` distinguishes the reductions of one epoch.
  void SumDoubles(std::vector<double>* values, int epoch, int step);

  // The first error of the run (OK otherwise); RecordError keeps the first one.
  absl::Status status() const;
  void RecordError(const absl::Status& s);
  // The plan of layer `i`: its exchange (distributed) and the HybridExecutor's level plans.
  std::string Explain(int i) const;
  // World size, traffic and the compute / wait split of the run so far, whose stages `stats` timed.
  Traffic ReportTraffic(const nau::ExecStats& stats) const;

 private:
  struct LayerPlan {
    std::shared_ptr<const hdg::Hdg> hdg;
    std::vector<nau::LevelPlan> levels;
    LayerExchange exchange;  // distributed runs
    std::optional<EdgeReturn> edge_return;  // edge states aggregated into both ends (edge_return.h)
    Rows input, roots;
    Tensor self_rows;  // int32 rows of the roots in the input (undefined: the identity)
    int grid_matrix = -1;  // over a grid: the key of its matrix (GridAggregation::AddMatrix)
    Tensor table_keys;  // dropout's keys of the aggregated table's rows (distributed: owned, then ghosts)
    std::shared_ptr<const hdg::Hdg>
        source;  // the host HDG that `hdg` was placed from (device runs)
    std::vector<std::pair<Tensor, Tensor>> placed_keys;  // device runs: host keys and their copies
  };
  // Sets p's table keys and, on a device, places them, the input's and the roots' keys there.
  void PlaceKeys(LayerPlan* p, Tensor table_keys);
  ag::Var RunExchanged(int i, nau::Layer& layer, const ag::Var& h, nau::LayerContext& ctx);
  // Over a grid: the layer's level 1 as its roots' rows of one weighted matrix over every vertex
  // (GridAggregation::AddMatrix gathers each block's rows), the aggregation as its grid product.
  absl::Status PlanGridLayer(int i, const nau::Layer& layer, int same_as);
  ag::Var RunGridLayer(int i, nau::Layer& layer, const ag::Var& h, nau::LayerContext& ctx);
  // Layer 0's message of a constant input (features that are not trained, no dropout in this
  // pass) is the same in every pass: its remote part is received once and kept, when training
  // passes reuse it too. Where only evaluation would (dropout on the input in training), it is
  // received again per evaluation rather than held through training's peak (a 128-wide row per
  // root on RMAT). Every worker runs the same model, so all decide alike.
  struct ConstantRemote {
    Tensor source;  // the message it was received for (held: its storage is never reused meanwhile)
    Tensor remote;                 // partial path: the remote rows' and partials' sum per root
    Tensor ghosts;                 // other layers: the ghost rows
  };

  DistributedSetup setup_;
  Ownership owners_;
  nau::HybridExecutor executor_;
  ExchangeContext xctx_;
  std::vector<LayerPlan> layers_;
  ConstantRemote constant_remote_;
  Device device_ = Device::kCpu;
  bool constant_in_training_ = false;  // the last training pass's layer-0 message was constant
  LayerExchange all_rows_;
  std::unique_ptr<grid::GridAggregation> grid_;
  bool grid_automatic_ = false;
  Tensor all_rows_order_, all_keys_;
};

}  // namespace fg::runtime
