#include "runtime/train/graph_batches.h"

#include <cmath>

#include "flexgraph/base/status.h"

namespace fg::runtime {

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
  nau::HybridExecutor executor;
  ag::Var h = model.Input(ctx, spec);
  ctx.edge_state = model.InitialEdgeState(ctx, spec, batch.entry_features);
  for (int i = 0; i < model.num_layers(); ++i) {
    nau::Layer& layer = model.layer(i);
    const std::vector<int32_t> roots = model.Roots(i, spec);
    FG_ASSIGN_OR_RETURN(hdg::Hdg hdg, nau::SelectHdg(layer, i, spec, epoch, roots));
    ctx.layer = i;
    std::vector<int64_t> ids(roots.begin(), roots.end());
    ctx.table_global_ids = ctx.root_global_ids = Tensor::FromVector(ids);
    h = executor.Run(hdg, executor.Plan(hdg, layer), layer, h, ctx);
  }
  return model.Head(ctx, spec, h);
}

absl::StatusOr<double> GraphBatchTraining::RunEpoch(int epoch) {
  const graph::GraphSet& gs = *parts_.task->dataset().graphs;
  double total = 0;
  int batches = 0;
  for (const std::vector<int64_t>& ids : ShuffledBatches(gs.train, batch_size_, seed_, epoch)) {
    const GraphBatch batch = BatchGraphs(parts_.task->dataset(), ids);
    FG_ASSIGN_OR_RETURN(ag::Var out, Forward(batch, epoch, true));
    ag::Var loss = parts_.task->BatchLoss(out, batch);
    loss.Backward();
    parts_.optimizer->Step();
    parts_.optimizer->ZeroGrad();
    total += loss.value().Item();
    ++batches;
  }
  return batches > 0 ? total / batches : std::nan("");
}

absl::StatusOr<std::map<std::string, double>> GraphBatchTraining::Evaluate(
    int split, int64_t batch_size) const {
  const graph::GraphSet& gs = *parts_.task->dataset().graphs;
  const Tensor& ids = split == 0 ? gs.train : split == 1 ? gs.valid : gs.test;
  ag::NoGradGuard guard;
  std::map<std::string, double> sum;
  double items = 0;
  for (const std::vector<int64_t>& b : OrderedBatches(ids, batch_size)) {
    const GraphBatch batch = BatchGraphs(parts_.task->dataset(), b);
    FG_ASSIGN_OR_RETURN(ag::Var out, Forward(batch, 0, false));
    std::map<std::string, double> m = parts_.task->Metrics(out.value(), batch);
    const double n = m["items"];
    for (const auto& [key, value] : m) {
      if (key != "items" && !std::isnan(value)) sum[key] += value * n;
    }
    items += n;
  }
  std::map<std::string, double> out;
  for (const auto& [key, value] : sum) out[key] = value / items;
  out["items"] = items;
  return out;
}

}  // namespace fg::runtime
