#include "runtime/train/graph_batches.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/checkpoint.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"

namespace fg::runtime {
namespace {

// Collective step of the epoch's batch losses (the gradients' steps number the batches).
constexpr int kStepBatchLosses = 1;

// The graphs of `ids` (a batch's, in batch order) that worker `rank` of `workers` takes.
std::vector<int64_t> Share(const std::vector<int64_t>& ids, int rank, int workers) {
  std::vector<int64_t> mine;
  for (size_t k = rank; k < ids.size(); k += workers) mine.push_back(ids[k]);
  return mine;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GraphBatchTraining>> GraphBatchTraining::Create(Parts parts,
                                                                                int64_t batch_size,
                                                                                uint64_t seed,
                                                                                int epochs) {
  std::unique_ptr<GraphBatchTraining> t(new GraphBatchTraining(parts, batch_size, seed));
  const Tensor& train = parts.task->dataset().graphs->train;
  const int64_t n = train.defined() ? train.numel() : 0;
  t->batches_per_epoch_ = batch_size > 0 ? (n + batch_size - 1) / batch_size : 1;
  // Distributed, every step's gradient sum is tagged with the step number (communicator.h).
  if (t->workers() > 1 && int64_t{epochs} * t->batches_per_epoch_ > kMaxTagEpoch + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch_size: ", epochs, " epochs of ", t->batches_per_epoch_, " batches make more than ",
        kMaxTagEpoch + 1, " steps, the most a distributed run numbers; use larger batches"));
  }
  return t;
}

absl::StatusOr<ag::Var> GraphBatchTraining::Forward(const GraphBatch& batch, int epoch,
                                                    bool training) const {
  nau::Model& model = *parts_.model;
  nau::ModelSpec spec = *parts_.spec;
  const nau::VertexSpace space(batch.data->graph);
  spec.dataset = batch.data;
  spec.vertices = &space;
  nau::LayerContext ctx;
  ctx.training = training;
  ctx.epoch = epoch;
  ctx.seed = spec.seed;
  ctx.stats = training ? parts_.stats : nullptr;
  nau::HybridExecutor executor;
  ag::Var h = model.Input(ctx, spec);
  ctx.edge_state = model.InitialEdgeState(ctx, spec, batch.entry_features);
  for (int i = 0; i < model.num_layers(); ++i) {
    nau::Layer& layer = model.layer(i);
    const std::vector<int32_t> roots = model.Roots(i, spec);
    Stopwatch watch;
    FG_ASSIGN_OR_RETURN(hdg::Hdg hdg, nau::SelectHdg(layer, i, spec, epoch, roots));
    if (training && parts_.stats != nullptr) parts_.stats->selection += watch.Seconds();
    ctx.layer = i;
    std::vector<int64_t> ids(roots.begin(), roots.end());
    ctx.table_global_ids = ctx.root_global_ids = Tensor::FromVector(ids);
    if (!model.RecomputeLayers() || !ag::GradEnabled()) {
      h = executor.Run(hdg, executor.Plan(hdg, layer), layer, h, ctx);
      continue;
    }
    // Each call starts from the context as it is now (the recomputation sees what the first run
    // saw); only the first call's stage times count.
    struct Shared {
      nau::ExecStats* stats;
      SparseMatrixPtr edge_matrix;
    };
    auto shared = std::make_shared<Shared>(Shared{ctx.stats, nullptr});
    nau::LayerContext base = ctx;
    base.edge_state = ag::Var();
    auto hdg_kept = std::make_shared<const hdg::Hdg>(std::move(hdg));
    auto run = [executor, &layer, hdg_kept, base, shared](const std::vector<ag::Var>& in) {
      nau::LayerContext local = base;
      local.stats = shared->stats;
      shared->stats = nullptr;
      local.edge_state = in[1];
      ag::Var out = executor.Run(*hdg_kept, executor.Plan(*hdg_kept, layer), layer, in[0], local);
      shared->edge_matrix = local.edge_matrix;
      return std::vector<ag::Var>{out, local.edge_state};
    };
    std::vector<ag::Var> out = ag::Checkpoint(run, {h, ctx.edge_state});
    h = out[0];
    ctx.edge_state = out[1];
    ctx.edge_matrix = shared->edge_matrix;
  }
  return model.Head(ctx, spec, h);
}

absl::StatusOr<double> GraphBatchTraining::RunEpoch(int epoch) {
  const graph::Dataset& ds = parts_.task->dataset();
  const std::vector<std::vector<int64_t>> batches =
      ShuffledBatches(ds.graphs->train, batch_size_, seed_, epoch);
  DistributedExecutor* exec = parts_.exec;
  nau::ExecStats* stats = parts_.stats;
  std::vector<double> losses(batches.size(), 0.0);
  for (size_t b = 0; b < batches.size(); ++b) {
    double items = 0;  // the whole batch's, over every worker
    for (int64_t g : batches[b]) items += static_cast<double>(parts_.task->TrainingItems(g));
    if (items == 0) continue;  // nothing to learn from, on any worker
    const std::vector<int64_t> mine = Share(batches[b], rank(), workers());
    if (!mine.empty()) {
      const GraphBatch batch = BatchGraphs(ds, mine);
      FG_ASSIGN_OR_RETURN(ag::Var out, Forward(batch, epoch, true));
      ag::Var loss;
      {
        ScopedTimer t(stats != nullptr ? &stats->loss : nullptr);
        loss = parts_.task->BatchLoss(out, batch, items);
      }
      ScopedTimer t(stats != nullptr ? &stats->backward : nullptr);
      loss.Backward();
      losses[b] = loss.value().Item();
    }
    ScopedTimer t(stats != nullptr ? &stats->optimizer : nullptr);
    if (exec != nullptr) {
      exec->AllReduceGradients(parts_.optimizer->params(),
                               static_cast<int>(int64_t{epoch} * batches_per_epoch_ + b));
      FG_RETURN_IF_ERROR(exec->status());
    }
    parts_.optimizer->Step();
    parts_.optimizer->ZeroGrad();
  }
  if (exec != nullptr) {
    exec->SumDoubles(&losses, epoch, kStepBatchLosses);
    FG_RETURN_IF_ERROR(exec->status());
  }
  batch_losses_ = losses;
  double total = 0;
  for (double l : losses) total += l;
  return batches.empty() ? std::nan("") : total / static_cast<double>(batches.size());
}

absl::StatusOr<double> GraphBatchTraining::TrainingLoss() const {
  const graph::Dataset& ds = parts_.task->dataset();
  ag::NoGradGuard guard;
  const std::vector<std::vector<int64_t>> all = OrderedBatches(ds.graphs->train, 0);
  if (all.empty() || all[0].empty()) return std::nan("");
  const GraphBatch batch = BatchGraphs(ds, all[0]);
  FG_ASSIGN_OR_RETURN(ag::Var out, Forward(batch, 0, false));
  return static_cast<double>(parts_.task->BatchLoss(out, batch).value().Item());
}

absl::StatusOr<std::map<std::string, double>> GraphBatchTraining::Evaluate(
    int split, int64_t batch_size) const {
  const graph::GraphSet& gs = *parts_.task->dataset().graphs;
  const Tensor& ids = split == 0 ? gs.train : split == 1 ? gs.valid : gs.test;
  ag::NoGradGuard guard;
  std::map<std::string, double> sum;
  double items = 0;
  for (const std::vector<int64_t>& b : OrderedBatches(ids, batch_size)) {
    if (b.empty()) continue;
    const GraphBatch batch = BatchGraphs(parts_.task->dataset(), b);
    FG_ASSIGN_OR_RETURN(ag::Var out, Forward(batch, 0, false));
    std::map<std::string, double> m = parts_.task->Metrics(out.value(), batch);
    const double n = m["items"];
    for (const auto& [key, value] : m) {
      if (key == "items") continue;
      double& total = sum.try_emplace(key, std::nan("")).first->second;
      if (!std::isnan(value)) total = (std::isnan(total) ? 0 : total) + value * n;
    }
    items += n;
  }
  // A metric no batch defines (e.g. the AUC of a split of one class) stays NaN.
  std::map<std::string, double> out;
  for (const auto& [key, value] : sum) out[key] = value / items;
  out["items"] = items;
  return out;
}

absl::StatusOr<std::vector<float>> GraphBatchTraining::EdgeScores(const std::vector<int64_t>& graphs,
                                                                  int64_t batch_size) const {
  const auto* task = dynamic_cast<const EdgeClassificationTask*>(parts_.task);
  if (task == nullptr || !task->binary()) {
    return absl::InvalidArgumentError(absl::StrCat("edge scores: ", parts_.task->Describe(),
                                                   " of dataset ", parts_.task->dataset().name,
                                                   " is not binary edge classification"));
  }
  const graph::GraphSet& gs = *task->dataset().graphs;
  std::vector<float> scores(gs.num_edges(), std::nanf(""));
  ag::NoGradGuard guard;
  const int64_t step = batch_size > 0 ? batch_size : static_cast<int64_t>(graphs.size());
  for (size_t begin = 0; begin < graphs.size(); begin += step) {
    const std::vector<int64_t> ids(graphs.begin() + begin,
                                   graphs.begin() + std::min(graphs.size(), begin + step));
    const GraphBatch batch = BatchGraphs(task->dataset(), ids);
    FG_ASSIGN_OR_RETURN(ag::Var out, Forward(batch, 0, false));
    const std::vector<double> s = task->EdgeScores(out.value(), batch);
    const graph::GraphSet& bs = *batch.data->graphs;
    for (int64_t i = 0; i < batch.num_graphs(); ++i) {
      const int64_t offset = gs.EdgeBegin(ids[i]) - bs.EdgeBegin(i);
      for (int64_t e = bs.EdgeBegin(i); e < bs.EdgeEnd(i); ++e) scores[e + offset] = static_cast<float>(s[e]);
    }
  }
  return scores;
}

}  // namespace fg::runtime
