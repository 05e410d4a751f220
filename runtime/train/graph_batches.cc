#include "runtime/train/graph_batches.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flexgraph/autograd/checkpoint.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/graph/tracking.h"
#include "flexgraph/ops/ops.h"
#include "partition/partitioner.h"
#include "partition/union_graph.h"

namespace fg::runtime {
namespace {

// Collective step of the epoch's batch losses (the gradients' steps number the batches).
constexpr int kStepBatchLosses = 1;
// Vertex sharding: the broadcast of a batch's partition (its epoch field numbers the batch).
constexpr int kStepPartition = 3;
// Vertex sharding: whether any worker recomputes the batch's layers.
constexpr int kStepRecompute = 4;
// Vertex sharding: an evaluation batch's outputs, summed across the workers.
constexpr int kStepShardedOutputs = 5;

// The graphs of `ids` (a batch's, in batch order) that worker `rank` of `workers` takes.
std::vector<int64_t> Share(const std::vector<int64_t>& ids, int rank, int workers) {
  std::vector<int64_t> mine;
  for (size_t k = rank; k < ids.size(); k += workers) mine.push_back(ids[k]);
  return mine;
}

// One layer, run(ctx, h), under ag::Checkpoint: its inputs (h and ctx.edge_state) kept, its
// intermediates recomputed in the backward pass. Each call starts from the context as it is now
// (the recomputation sees what the first run saw); only the first call's stage times count.
// Returns the layer's output; ctx gets its edge state and matrix.
ag::Var Checkpointed(std::function<ag::Var(nau::LayerContext&, const ag::Var&)> run, const ag::Var& h,
                     nau::LayerContext& ctx) {
  struct Shared {
    nau::ExecStats* stats;
    SparseMatrixPtr edge_matrix;
  };
  auto shared = std::make_shared<Shared>(Shared{ctx.stats, nullptr});
  nau::LayerContext base = ctx;
  base.edge_state = ag::Var();
  auto fn = [run = std::move(run), base, shared](const std::vector<ag::Var>& in) {
    nau::LayerContext local = base;
    local.stats = shared->stats;
    shared->stats = nullptr;
    local.edge_state = in[1];
    ag::Var out = run(local, in[0]);
    shared->edge_matrix = local.edge_matrix;
    return std::vector<ag::Var>{out, local.edge_state};
  };
  std::vector<ag::Var> out = ag::Checkpoint(fn, {h, ctx.edge_state});
  ctx.edge_state = out[1];
  ctx.edge_matrix = shared->edge_matrix;
  return out[0];
}

// `hdg` where the executor reads it: on `device` unless the layer aggregates with a custom
// aggregator (which reads the host structure).
hdg::Hdg PlacedHdg(hdg::Hdg hdg, const nau::Layer& layer, Device device) {
  if (device == Device::kCpu) return hdg;
  std::vector<bool> normalized;
  for (int k = 1; k <= hdg.num_levels(); ++k) {
    if (layer.LevelAggregator(k).reduction() == nau::Reduction::kCustom) return hdg;
    normalized.push_back(layer.LevelAggregator(k).normalize_weights());
  }
  return hdg.OnDevice(device, normalized);
}

}  // namespace

absl::StatusOr<std::unique_ptr<GraphBatchTraining>> GraphBatchTraining::Create(Parts parts,
                                                                                int64_t batch_size,
                                                                                uint64_t seed,
                                                                                int epochs,
                                                                                bool shard_vertices,
                                                                                partition::Method method,
                                                                                bool reflect) {
  std::unique_ptr<GraphBatchTraining> t(new GraphBatchTraining(parts, batch_size, seed));
  if (reflect && !graph::HasTrackingLayout(parts.task->dataset())) {
    return absl::InvalidArgumentError(absl::StrCat("augment: reflect mirrors tracking events; dataset ",
                                                   parts.task->dataset().name,
                                                   " lacks their layout (node_info \"layer\", 3 node and 6 edge features)"));
  }
  t->reflect_ = reflect;
  t->shard_vertices_ = shard_vertices && t->workers() > 1;
  t->method_ = method == partition::Method::kBalanced ? partition::Method::kMetis : method;
  if (t->shard_vertices_ && parts.device != Device::kCpu) {
    return absl::UnimplementedError(absl::StrCat("batch_sharding: vertices runs on the CPU (dataset ",
                                                 parts.task->dataset().name, "); on a device, share whole graphs "
                                                 "(--batch_sharding graphs) or leave --device at cpu"));
  }
  if (shard_vertices && dynamic_cast<const EdgeClassificationTask*>(parts.task) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("batch_sharding: vertices shards edge classification; ",
                                                   parts.task->Describe(), " of dataset ",
                                                   parts.task->dataset().name, " shares whole graphs (graphs)"));
  }
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
  const Device device = parts_.device;
  // On a device the batch's features go there; its structure stays on the host (selection reads it).
  std::shared_ptr<graph::Dataset> placed;
  if (device != Device::kCpu) {
    placed = std::make_shared<graph::Dataset>(*batch.data);
    for (auto& [type, features] : placed->features) features = features.To(device);
    spec.dataset = placed.get();
  }
  nau::LayerContext ctx;
  ctx.training = training;
  ctx.epoch = epoch;
  ctx.seed = spec.seed;
  ctx.stats = training ? parts_.stats : nullptr;
  nau::HybridExecutor executor;
  ag::Var h = model.Input(ctx, spec);
  ctx.edge_state = model.InitialEdgeState(
      ctx, spec, batch.entry_features.defined() ? batch.entry_features.To(device) : Tensor());
  for (int i = 0; i < model.num_layers(); ++i) {
    nau::Layer& layer = model.layer(i);
    const std::vector<int32_t> roots = model.Roots(i, spec);
    Stopwatch watch;
    FG_ASSIGN_OR_RETURN(hdg::Hdg selected, nau::SelectHdg(layer, i, spec, epoch, roots));
    if (training && parts_.stats != nullptr) parts_.stats->selection += watch.Seconds();
    ctx.layer = i;
    std::vector<int64_t> ids(roots.begin(), roots.end());
    ctx.table_global_ids = ctx.root_global_ids = Tensor::FromVector(ids);
    if (device != Device::kCpu) ctx.placed_ids = {{ctx.table_global_ids, ctx.table_global_ids.To(device)}};
    const std::vector<nau::LevelPlan> plan = executor.Plan(selected, layer);
    auto hdg = std::make_shared<const hdg::Hdg>(PlacedHdg(std::move(selected), layer, device));
    if (!model.RecomputeLayers() || !ag::GradEnabled()) {
      h = executor.Run(*hdg, plan, layer, h, ctx);
      continue;
    }
    h = Checkpointed([executor, &layer, hdg, plan](nau::LayerContext& local,
                                                   const ag::Var& x) { return executor.Run(*hdg, plan, layer, x, local); },
                     h, ctx);
  }
  return model.Head(ctx, spec, h);
}

absl::StatusOr<std::vector<int32_t>> GraphBatchTraining::PartitionBatch(const GraphBatch& batch,
                                                                         int step) const {
  const int parts = workers();
  const int64_t n = batch.data->Adjacency().num_rows;
  if (n < parts) {
    return absl::InvalidArgumentError(absl::StrCat("batch_sharding: vertices: a batch of ", n, " vertices (graphs ",
                                                   absl::StrJoin(batch.graphs, ","), ") for ", parts,
                                                   " workers; use fewer workers or larger batches"));
  }
  // Worker 0 partitions and sends the owners to the others (METIS's draws are not the same in
  // every process): 'O' and the owners, or 'E' and why it could not.
  std::string payload;
  if (rank() == 0) {
    auto assign = [&]() -> absl::StatusOr<std::vector<int32_t>> {
      FG_ASSIGN_OR_RETURN(const Csr g, partition::BuildUnionGraph(batch.data->graph));
      const partition::Method method =
          g.nnz() > 0 || method_ != partition::Method::kMetis ? method_ : partition::Method::kRange;
      return partition::MakePartitioner(method)->Assign({.graph = &g, .seed = seed_}, parts);
    };
    const absl::StatusOr<std::vector<int32_t>> owners = assign();
    payload = owners.ok() ? "O" + std::string(reinterpret_cast<const char*>(owners->data()),
                                              owners->size() * sizeof(int32_t))
                          : "E" + std::string(owners.status().message());
  }
  FG_RETURN_IF_ERROR(parts_.exec->setup().comm->Broadcast(&payload, 0, step, kStepPartition));
  const std::string what = absl::StrCat("batch_sharding: vertices: the batch of graphs ", absl::StrJoin(batch.graphs, ","));
  if (!payload.empty() && payload[0] == 'E') {
    return absl::InternalError(absl::StrCat(what, ": worker 0 could not partition it: ", payload.substr(1)));
  }
  if (payload.size() != 1 + static_cast<size_t>(n) * sizeof(int32_t) || payload[0] != 'O') {
    return absl::DataLossError(absl::StrCat(what, " (", n, " vertices): worker 0 sent ", payload.size(),
                                            " bytes of owners"));
  }
  std::vector<int32_t> owners(n);
  std::memcpy(owners.data(), payload.data() + 1, payload.size() - 1);
  for (int32_t o : owners) {
    if (o < 0 || o >= parts) {
      return absl::DataLossError(absl::StrCat(what, ": worker 0 sent owner ", o, " of ", parts, " workers"));
    }
  }
  return owners;
}

absl::StatusOr<ag::Var> GraphBatchTraining::ShardedForward(const GraphBatch& batch, int epoch, int step,
                                                           bool training, ShardedPass* pass) const {
  FG_ASSIGN_OR_RETURN(std::vector<int32_t> owners, PartitionBatch(batch, step));
  nau::Model& model = *parts_.model;
  nau::ModelSpec spec = *parts_.spec;
  const nau::VertexSpace space(batch.data->graph);
  spec.dataset = batch.data;
  spec.vertices = &space;
  std::vector<int32_t>& mine = pass->vertices;
  mine.clear();
  for (size_t v = 0; v < owners.size(); ++v) {
    if (owners[v] == rank()) mine.push_back(static_cast<int32_t>(v));
  }
  const Tensor ids = Tensor::FromVector(std::vector<int64_t>(mine.begin(), mine.end()));
  const DistributedExecutor::Rows rows{ids, ids};
  const DistributedSetup& run = parts_.exec->setup();
  pass->exec = std::make_unique<DistributedExecutor>(
      DistributedSetup{.comm = run.comm, .owners = std::move(owners), .pipeline = run.pipeline});
  DistributedExecutor& exec = *pass->exec;
  nau::LayerContext ctx;
  ctx.training = training;
  ctx.epoch = epoch;
  ctx.seed = spec.seed;
  ctx.stats = training ? parts_.stats : nullptr;
  exec.BeginPass(&ctx, step, training);
  ag::Var h = model.InputRows(ctx, spec, ids);
  // My entries, in Csr order: my vertices' in-entries; where edges reach both ends (one state per
  // edge as stored), the entries of the edges stored into my vertices, both directions (the
  // reverse one lies in its source's row), and my vertices' added loops.
  const Csr& a = batch.data->Adjacency();
  const bool both_ends = model.num_layers() > 0 && model.layer(0).EdgeAggregationSide() == ag::EdgeSide::kBoth;
  std::vector<int32_t>& entries = pass->entries;
  entries.clear();
  const graph::GraphSet& gs = *batch.data->graphs;
  std::vector<char> is_mine(a.num_rows, 0);
  for (int32_t v : mine) is_mine[v] = 1;
  for (int64_t r = 0; r < a.num_rows; ++r) {
    for (int64_t k = a.row_ptr()[r]; k < a.row_ptr()[r + 1]; ++k) {
      const int64_t e = gs.entry_edges.i64()[k];
      const int64_t destination = both_ends && e >= gs.num_edges() ? a.col()[k] : r;
      if (is_mine[destination]) entries.push_back(static_cast<int32_t>(k));
    }
  }
  ctx.entries = Tensor::FromVector(entries);
  const Tensor features = batch.entry_features.defined() ? ops::GatherRows(batch.entry_features, ctx.entries)
                                                         : Tensor();
  ctx.edge_state = model.InitialEdgeState(ctx, spec, features);
  // Every layer planned before any runs (the exchanges' backward passes refer to the plans), and
  // one more for the head, which reads both ends of every entry: my rows, then the ghosts' fetched
  // over the last layer's exchange (its own tags).
  const int layers = model.num_layers();
  for (int i = 0; i < layers; ++i) {
    nau::Layer& layer = model.layer(i);
    if (static_cast<int64_t>(model.Roots(i, spec).size()) != a.num_rows) {
      return absl::UnimplementedError(absl::StrCat("batch_sharding: vertices: layer ", i,
                                                   " of the model does not root every vertex"));
    }
    const std::string key = layer.SelectionKey();
    const bool same = i > 0 && !key.empty() && key == model.layer(0).SelectionKey();
    std::shared_ptr<const hdg::Hdg> hdg;
    if (!same) {
      Stopwatch watch;
      FG_ASSIGN_OR_RETURN(hdg::Hdg selected, nau::SelectHdg(layer, i, spec, epoch, mine));
      if (training && parts_.stats != nullptr) parts_.stats->selection += watch.Seconds();
      hdg = std::make_shared<const hdg::Hdg>(std::move(selected));
    }
    FG_RETURN_IF_ERROR(exec.PlanLayer(i, layer, std::move(hdg), rows, rows, step, same ? 0 : -1));
  }
  FG_RETURN_IF_ERROR(exec.PlanLayer(layers, model.layer(layers - 1), nullptr, rows, rows, step, layers - 1));
  // Layers are recomputed where any worker's model asks (it decides on its own share of the
  // entries): the recomputation exchanges rows, so every worker must run it.
  std::vector<double> recompute = {model.RecomputeLayers() ? 1.0 : 0.0};
  parts_.exec->SumDoubles(&recompute, step, kStepRecompute);
  FG_RETURN_IF_ERROR(parts_.exec->status());
  for (int i = 0; i < layers; ++i) {
    ctx.layer = i;
    nau::Layer& layer = model.layer(i);
    if (recompute[0] == 0 || !ag::GradEnabled()) {
      h = exec.RunLayer(i, layer, h, ctx);
      continue;
    }
    // The recomputation in the backward pass runs the layer's exchange again, on every worker in
    // the same order (its messages reuse the forward's names, taken by then).
    h = Checkpointed([&exec, &layer, i](nau::LayerContext& local,
                                        const ag::Var& x) { return exec.RunLayer(i, layer, x, local); },
                     h, ctx);
  }
  return model.Head(ctx, spec, exec.GatherTable(layers, h));
}

absl::StatusOr<double> GraphBatchTraining::ShardedStep(const GraphBatch& batch, int epoch, int step,
                                                       double items) const {
  ShardedPass pass;  // lives until the backward pass has run: the exchange's gradients travel through it
  FG_ASSIGN_OR_RETURN(ag::Var out, ShardedForward(batch, epoch, step, true, &pass));
  ag::Var loss;
  {
    ScopedTimer t(parts_.stats != nullptr ? &parts_.stats->loss : nullptr);
    loss = static_cast<const EdgeClassificationTask*>(parts_.task)->RowsLoss(out, batch, &pass.entries, items);
  }
  {
    ScopedTimer t(parts_.stats != nullptr ? &parts_.stats->backward : nullptr);
    loss.Backward();
  }
  FG_RETURN_IF_ERROR(pass.exec->status());
  return static_cast<double>(loss.value().Item());
}

absl::StatusOr<Tensor> GraphBatchTraining::ShardedOutput(const GraphBatch& batch, int step) const {
  ag::NoGradGuard guard;
  ShardedPass pass;
  FG_ASSIGN_OR_RETURN(ag::Var mine, ShardedForward(batch, 0, step, false, &pass));
  FG_RETURN_IF_ERROR(pass.exec->status());
  // Every worker's entries into one table, summed across the workers (each entry is one worker's).
  const Tensor rows = mine.value().To(Device::kCpu);
  const int64_t width = rows.row_width();
  Tensor all = Tensor::Zeros({batch.data->Adjacency().nnz(), width});
  for (size_t j = 0; j < pass.entries.size(); ++j) {
    std::copy(rows.f32() + j * width, rows.f32() + (j + 1) * width, all.f32() + int64_t{pass.entries[j]} * width);
  }
  FG_RETURN_IF_ERROR(parts_.exec->setup().comm->AllReduce(all.f32(), all.numel(), step, kStepShardedOutputs));
  return all;
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
    const int step = static_cast<int>(int64_t{epoch} * batches_per_epoch_ + b);
    const std::vector<int64_t> mine = Share(batches[b], rank(), workers());
    // The batch as drawn, or its mirror images.
    auto batch_of = [&](const std::vector<int64_t>& ids) {
      GraphBatch batch = BatchGraphs(ds, ids);
      return reflect_ ? ReflectEvents(batch, seed_, epoch) : batch;
    };
    if (shard_vertices_) {
      FG_ASSIGN_OR_RETURN(losses[b], ShardedStep(batch_of(batches[b]), epoch, step, items));
    } else if (!mine.empty()) {
      const GraphBatch batch = batch_of(mine);
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
      exec->AllReduceGradients(parts_.optimizer->params(), step);
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
  if (shard_vertices_) {
    FG_ASSIGN_OR_RETURN(const Tensor out, ShardedOutput(batch, 0));
    return static_cast<double>(parts_.task->BatchLoss(ag::Var(out), batch).value().Item());
  }
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
  int step = split << 20;  // vertex sharding: the batch's messages, distinct per split
  for (const std::vector<int64_t>& b : OrderedBatches(ids, batch_size)) {
    if (b.empty()) continue;
    const GraphBatch batch = BatchGraphs(parts_.task->dataset(), b);
    Tensor out;
    if (shard_vertices_) {
      FG_ASSIGN_OR_RETURN(out, ShardedOutput(batch, step++));
    } else {
      FG_ASSIGN_OR_RETURN(ag::Var run, Forward(batch, 0, false));
      out = run.value();
    }
    std::map<std::string, double> m = parts_.task->Metrics(out, batch);
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
