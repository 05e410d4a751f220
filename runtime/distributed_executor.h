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
#include "runtime/communicator.h"
#include "runtime/exchange.h"
#include "runtime/summary.h"

namespace fg::runtime {

// A worker's place in a distributed run: its communicator and the partition plan (the owning
// rank of every global vertex). Null communicator: single process.
struct DistributedSetup {
  Communicator* comm = nullptr;
  std::vector<int32_t> owners;
  ExchangeMode exchange = ExchangeMode::kAuto;
  bool pipeline = true;  // overlap sends with local aggregation
};

class DistributedExecutor {
 public:
  explicit DistributedExecutor(DistributedSetup setup = {});

  bool distributed() const { return setup_.comm != nullptr && setup_.comm->size() > 1; }
  int rank() const { return distributed() ? setup_.comm->rank() : 0; }
  // True when this worker owns global vertex `v` (always alone).
  bool Owns(int64_t v) const { return !distributed() || setup_.owners[v] == rank(); }
  const DistributedSetup& setup() const { return setup_; }
  void SetOverride(std::optional<nau::Strategy> s) { executor_.SetOverride(s); }

  // Plans layer `i` over `hdg` (level-1 children are global vertex ids). `input_ids` and
  // `root_ids` are the sorted global ids (int64) of this worker's input rows and roots. Collective
  // in a distributed run (index lists are exchanged with the peers).
  absl::Status PlanLayer(int i, const nau::Layer& layer, std::shared_ptr<const hdg::Hdg> hdg,
                         const Tensor& input_ids, const Tensor& root_ids, int epoch);

  // Starts a forward pass: sets the context's cross-worker reduction and the exchange tags.
  void BeginPass(nau::LayerContext* ctx, int epoch, bool training);
  // Layer `i` on this worker's input rows `h` (rows in input_ids order); one output row per root.
  ag::Var RunLayer(int i, nau::Layer& layer, const ag::Var& h, nau::LayerContext& ctx);

  // Sums the parameters' gradients across workers (after backward).
  void AllReduceGradients(const std::vector<nn::NamedParameter>& params, int epoch);
  // Sums across workers in place; `step` distinguishes the reductions of one epoch.
  void SumDoubles(std::vector<double>* values, int epoch, int step);

  // The first error of the run (OK otherwise); RecordError keeps the first one.
  absl::Status status() const { return *xctx_.error; }
  void RecordError(const absl::Status& s);
  // The plan of layer `i`: its exchange (distributed) and the HybridExecutor's level plans.
  std::string Explain(int i) const;
  // World size, traffic and the compute / wait split (distributed runs).
  void ReportTraffic(const nau::ExecStats& stats, TrainResult* r) const;

 private:
  struct LayerPlan {
    std::shared_ptr<const hdg::Hdg> hdg;
    std::vector<nau::LevelPlan> levels;
    LayerExchange exchange;  // distributed runs
    Tensor input_ids, root_ids;
    Tensor self_rows;  // int32 rows of the roots in the input (undefined: the identity)
  };
  ag::Var RunExchanged(const LayerPlan& p, nau::Layer& layer, const ag::Var& h,
                       nau::LayerContext& ctx);

  DistributedSetup setup_;
  nau::HybridExecutor executor_;
  ExchangeContext xctx_;
  std::vector<LayerPlan> layers_;
};

}  // namespace fg::runtime
