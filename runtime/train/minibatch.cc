#include "runtime/train/minibatch.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <future>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/ops/ops.h"
#include "runtime/comm/communicator.h"

namespace fg::runtime {
namespace {

// Tag step of the epoch's loss sum across workers (the trainer's full-batch step uses the same
// value; the two never run in one epoch).
constexpr int kStepEpochLoss = 1;
// Tag step of the threads' sum across workers (epoch 0, at the start).
constexpr int kStepBulkThreads = 6;
// The most bytes of input rows, with their dropouts, read ahead per bulk.
constexpr int64_t kPrefetchBytes = int64_t{256} << 20;
// Batches a bulk samples where train.bulk is 0 (automatic).
constexpr int kAutomaticBulk = 8;
// ShaDow evaluation: the epoch that keys its subgraphs (no training epoch's), and the least
// vertices per batch.
constexpr int kInferenceEpoch = -1;
// ShaDow evaluation over parts: the workers' chunk counts (a collective step of the epoch).
constexpr int kStepShadowChunks = 7;
constexpr int64_t kInferenceBatch = 1024;

}  // namespace

absl::StatusOr<std::vector<int>> ParseFanouts(const std::string& text, int layers, sampling::SamplerKind kind) {
  std::vector<int> fanouts;
  const bool shadow = kind == sampling::SamplerKind::kShadow;
  if (text.empty() && shadow) return std::vector<int>{10, 5};  // ShaDow-GNN's 2 hops
  if (text.empty()) {
    for (int hop = 0; hop < layers; ++hop) fanouts.push_back(hop == 0 ? 25 : 10);
    return fanouts;
  }
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int f;
    if (!absl::SimpleAtoi(part, &f) || f < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fanouts: expected non-negative integers separated by commas, got '", text, "'"));
    }
    fanouts.push_back(f);
  }
  if (static_cast<int>(fanouts.size()) != layers && !shadow) {
    return absl::InvalidArgumentError(absl::StrCat("fanouts: '", text, "' gives ", fanouts.size(),
                                                   " fanouts for a model of ", layers,
                                                   " layers (one per layer, from the seeds down)"));
  }
  return fanouts;
}

absl::StatusOr<std::unique_ptr<MiniBatchTraining>> MiniBatchTraining::Create(
    const flexgraph::RunConfig& config, Parts parts) {
  const flexgraph::TrainConfig& tc = config.train();
  std::unique_ptr<MiniBatchTraining> m(new MiniBatchTraining());
  // Batch steps alternate with full-graph evaluations, whose blocks are many times theirs.
  SetHostCacheForAlternatingPhases(true);
  m->parts_ = parts;
  m->batch_size_ = tc.batch_size();
  int64_t n = parts.task->NumTrainingItems();
  if (parts.owned != nullptr) {
    // Items over all parts, numbered by source id as a single process numbers them: every worker
    // learns every other's training vertices' keys (a part may hold none).
    std::vector<int64_t> local(n);
    std::iota(local.begin(), local.end(), 0);
    const Tensor roots = parts.task->BatchRoots(Tensor::FromVector(local), 0);  // item i: roots[i]
    std::vector<int64_t> keys(n);
    for (int64_t i = 0; i < n; ++i) keys[i] = parts.owned->keys.i64()[roots.i64()[i] - parts.owned->begin];
    FG_ASSIGN_OR_RETURN(std::vector<int64_t> all, GatherInt64(*parts.exec->setup().comm, keys));
    std::sort(all.begin(), all.end());
    m->local_item_.assign(all.size(), -1);
    for (int64_t i = 0; i < n; ++i) {
      m->local_item_[std::lower_bound(all.begin(), all.end(), keys[i]) - all.begin()] = static_cast<int32_t>(i);
    }
    n = static_cast<int64_t>(all.size());
  }
  if (n == 0) {
    return absl::UnimplementedError(absl::StrCat(
        "batch_size: mini-batch training of ", parts.task->Describe(),
        " is not supported; train on the whole graph (batch_size 0)"));
  }
  std::vector<int64_t> items(n);
  for (int64_t i = 0; i < n; ++i) items[i] = i;
  m->items_ = Tensor::FromVector(items);
  FG_CHECK(sampling::ParseSamplerKind(tc.sampler(), &m->options_.kind)) << "unresolved sampler";
  const int layers = parts.model->num_layers();
  FG_ASSIGN_OR_RETURN(m->options_.fanouts, ParseFanouts(tc.fanouts(), layers, m->options_.kind));
  FG_RETURN_IF_ERROR(sampling::ParseSamplerOptions(tc.sampler_opt(), &m->options_));
  m->options_.layer_size = tc.layer_size();
  // Automatic bulks: 8 batches; with LADIES (one thread a batch) at least one a thread, over all
  // workers where batches are led by the workers in turn (layer_wise_sampling.cc), so that every
  // worker samples the same bulks.
  m->bulk_ = tc.bulk() > 0 ? tc.bulk() : kAutomaticBulk;
  const bool distributed = parts.exec->distributed();
  if (tc.bulk() <= 0 && m->options_.kind == sampling::SamplerKind::kLayerWise) {
    std::vector<double> threads = {static_cast<double>(NumThreads())};
    if (distributed) FG_RETURN_IF_ERROR(parts.exec->setup().comm->AllReduce(&threads, 0, kStepBulkThreads));
    m->bulk_ = std::max<int64_t>(kAutomaticBulk, static_cast<int64_t>(threads[0]));
  }
  m->options_.seed = tc.seed();
  for (int i = 0; i < layers; ++i) {
    const hdg::SchemaTree schema = parts.model->layer(i).Schema();
    if (schema.kind() != hdg::SchemaKind::kFlat) {
      return absl::UnimplementedError(absl::StrCat(
          "batch_size: model ", config.model().name(), " selects ", schema.ToString(),
          " in layer ", i, "; mini-batch sampling takes flat neighbourhoods (GCN, SAGE, GIN, "
          "PinSage); train it on the whole graph (batch_size 0)"));
    }
  }
  if (m->options_.kind == sampling::SamplerKind::kShadow && tc.sample_on() == "device") {
    return absl::UnimplementedError("sample_on: the device draws neighbor and ladies batches; shadow batches are "
                                    "sampled on the host (--sample_on host)");
  }
  if (nau::Strategy s; nau::ParseStrategy(tc.exec(), &s)) m->executor_.SetOverride(s);
  // On the device where it can: training there, over the whole graph, and each batch on its worker.
  const bool device_can = parts.device == Device::kCuda && parts.owned == nullptr && !m->LeadersDrawBatches();
  if (tc.sample_on() == "device" && !device_can) {
    return absl::UnimplementedError(
        parts.owned != nullptr
            ? "sample_on: device samples a whole graph; a partitioned dataset's batches reach other workers' "
              "vertices, which are sampled on the host (--sample_on host)"
            : "sample_on: device samples each worker's own batches; a distributed run's ladies batches are "
              "drawn whole by one worker each, on the host (--sample_on host)");
  }
  // The device sampler has not yet passed its checks on a GPU (scripts/gpu_check.sh): the host
  // samples unless asked.
  m->sample_on_device_ = device_can && tc.sample_on() == "device";
  if (parts.owned != nullptr) {
    const int64_t f = parts.owned->features.dim(1);
    const int64_t own = parts.owned->features.nbytes() + parts.owned->keys.nbytes();
    const int64_t budget = tc.feature_cache_mb() >= 0 ? int64_t{tc.feature_cache_mb()} << 20
                                                      : std::min<int64_t>(int64_t{256} << 20, own);
    m->remote_rows_ = std::make_unique<RemoteRowCache>(budget, f);
    // The neighbourhood rows LADIES leaders fetch: the same budget where one is given.
    if (m->options_.kind == sampling::SamplerKind::kLayerWise) {
      m->remote_neighbourhoods_ = std::make_unique<RemoteNeighbourhoodCache>(
          tc.feature_cache_mb() >= 0 ? budget : int64_t{256} << 20);
    }
  }
  m->batches_per_epoch_ = (n + m->batch_size_ - 1) / m->batch_size_;
  // Distributed, every step's gradient sum is tagged with the step number (communicator.h).
  if (distributed && tc.epochs() * m->batches_per_epoch_ > kMaxTagEpoch + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch_size: ", tc.epochs(), " epochs of ", m->batches_per_epoch_, " batches make more than ",
        kMaxTagEpoch + 1, " steps, the most a distributed run numbers; use larger batches"));
  }
  return m;
}

std::string MiniBatchTraining::Describe() const {
  std::string how = options_.kind == sampling::SamplerKind::kLayerWise
                        ? absl::StrCat("layer size ", options_.layer_size)
                        : absl::StrCat("fanouts ", absl::StrJoin(options_.fanouts, ","));
  if (options_.kind == sampling::SamplerKind::kShadow) {
    absl::StrAppend(&how, " (hops), every layer on the induced subgraphs",
                    options_.pool == sampling::SamplerOptions::Pool::kMean ? ", read out root + mean" : "");
  }
  return absl::StrCat(sampling::SamplerKindName(options_.kind), " sampler, ", how, ", batches of ",
                      batch_size_, " in bulks of ", bulk_, sample_on_device_ ? " sampled on the device" : "",
                      LeadersDrawBatches() ? ", each drawn whole by one worker in turn" : "",
                      ": ", batches_per_epoch_, " batches per epoch");
}

void MiniBatchTraining::SparseInputViews(const ag::Var& h, int64_t roots, nau::LayerContext* ctx) {
  const Tensor& x = h.value();
  if (sparse_input_ < 0) {  // decided on the first batch, as the trainer does for the whole table
    const int64_t nonzero = std::count_if(x.f32(), x.f32() + x.numel(), [](float v) { return v != 0; });
    sparse_input_ = !h.requires_grad() && x.rank() == 2 && x.numel() > 0 && nonzero < x.numel() / 10;
  }
  if (sparse_input_ == 0) return;
  Csr table = ops::DenseToCsr(x);
  const int64_t nnz = table.row_ptr()[roots];
  Csr prefix;  // the roots: the table's first rows
  prefix.num_rows = roots;
  prefix.num_cols = table.num_cols;
  prefix.offsets = Tensor::FromVector(std::vector<int64_t>(table.row_ptr(), table.row_ptr() + roots + 1));
  prefix.indices = Tensor::FromVector(std::vector<int32_t>(table.col(), table.col() + nnz));
  prefix.values = Tensor::FromVector(std::vector<float>(table.val(), table.val() + nnz));
  ctx->input_sparse = std::make_shared<SparseMatrix>(std::move(table));
  ctx->roots_sparse = std::make_shared<SparseMatrix>(std::move(prefix));
}

nau::LayerContext MiniBatchTraining::StepContext(int64_t step) const {
  nau::LayerContext ctx;
  ctx.training = true;
  ctx.epoch = static_cast<int>(step);  // dropout masks differ per step
  ctx.seed = options_.seed;
  return ctx;
}

ag::Var MiniBatchTraining::RunLayers(const sampling::MiniBatch& batch, const DroppedInputs& dropped,
                                     nau::LayerContext* ctx) {
  nau::Model& model = *parts_.model;
  // Rows fetched from other parts come with their features and randomness keys; rows read ahead
  // (prefetch_inputs_) with their features.
  ag::Var h = batch.inputs.defined() ? ag::Var(batch.inputs.To(parts_.device))
                                     : model.InputRows(*ctx, *parts_.spec, batch.blocks[0].table);
  if (parts_.device == Device::kCpu) SparseInputViews(h, batch.blocks[0].hdg->num_roots(), &*ctx);
  const ag::Var input = h;
  const Tensor& keys = batch.keys.defined() ? batch.keys : batch.blocks[0].table;
  auto first = [&](int64_t n) {  // a block's table is a prefix of blocks[0].table
    return n == keys.numel() ? keys : Tensor::FromVector(std::vector<int64_t>(keys.i64(), keys.i64() + n));
  };
  for (int l = 0; l < model.num_layers(); ++l) {
    const sampling::Block& b = batch.blocks[l];
    nau::Layer& layer = model.layer(l);
    ctx->layer = l;
    if (l == 1) ctx->input_sparse = ctx->roots_sparse = nullptr;
    ctx->table_global_ids = first(b.table.numel());
    ctx->root_global_ids = first(b.hdg->num_roots());
    const std::vector<nau::LevelPlan> plan = executor_.Plan(*b.hdg, layer);
    if (parts_.device == Device::kCpu) {
      if (l == 0) {
        for (const auto& [d, t] : dropped) ctx->NoteDropped(input, d.p, d.site, ctx->table_global_ids, ag::Var(t));
      }
      h = executor_.Run(*b.hdg, plan, layer, h, *ctx);
      if (l == 0 && prefetch_inputs_ == 1 && !input_dropouts_known_ && ctx->training) {
        for (const auto& [p, site] : ctx->DropoutsOf(input, ctx->table_global_ids)) input_dropouts_.push_back({p, site});
        input_dropouts_known_ = true;
      }
      continue;
    }
    // On a device: the block's levels and its rows' dropout keys go there (once per batch); a
    // custom aggregator reads the host block.
    bool custom = false;
    std::vector<bool> normalized;
    for (int k = 1; k <= b.hdg->num_levels(); ++k) {
      custom = custom || layer.LevelAggregator(k).reduction() == nau::Reduction::kCustom;
      normalized.push_back(layer.LevelAggregator(k).normalize_weights());
    }
    ctx->placed_ids = {{ctx->table_global_ids, ctx->table_global_ids.To(parts_.device)},
                      {ctx->root_global_ids, ctx->root_global_ids.To(parts_.device)}};
    h = custom ? executor_.Run(*b.hdg, plan, layer, h, *ctx)
               : executor_.Run(b.hdg->OnDevice(parts_.device, normalized), plan, layer, h, *ctx);
  }
  if (batch.readout.num_rows > 0) {  // ShaDow, pooled: each seed's output from its subgraph's
    h = ag::Spmm(std::make_shared<const SparseMatrix>(batch.readout.To(parts_.device)), h, ops::SpmmReduce::kSum);
  }
  return h;
}

double MiniBatchTraining::TrainBatch(const sampling::MiniBatch& batch, const DroppedInputs& dropped,
                                     const Tensor& items, int64_t batch_total, int epoch, int64_t step) {
  NoteProgress();
  DistributedExecutor& exec = *parts_.exec;
  const int64_t mine = items.numel();
  if (mine == 0) {  // no seeds of this batch here: zero gradients to the sum, the same step
    ScopedTimer t(&parts_.stats->optimizer);
    exec.AllReduceGradients(parts_.optimizer->params(), static_cast<int>(step));
    if (exec.status().ok()) parts_.optimizer->Step();
    parts_.optimizer->ZeroGrad();
    return 0.0;
  }
  nau::LayerContext ctx = StepContext(step);
  ctx.stats = parts_.stats;
  ag::Var h = RunLayers(batch, dropped, &ctx);
  ag::Var loss;
  {
    ScopedTimer t(&parts_.stats->loss);
    loss = parts_.task->BatchLoss(h, batch.seeds, items, epoch);
    // Each worker's share of the batch mean: the shares and their gradients add up to it.
    if (mine != batch_total) loss = ag::Scale(loss, static_cast<float>(mine) / batch_total);
  }
  {
    ScopedTimer t(&parts_.stats->backward);
    loss.Backward();
    exec.AllReduceGradients(parts_.optimizer->params(), static_cast<int>(step));
  }
  ScopedTimer t(&parts_.stats->optimizer);
  if (exec.status().ok()) parts_.optimizer->Step();
  parts_.optimizer->ZeroGrad();
  return loss.value().Item();
}

absl::StatusOr<std::vector<const sampling::NeighbourhoodMatrix*>> MiniBatchTraining::Matrices(
    const std::vector<hdg::HdgPtr>& layer_hdgs, const std::vector<Tensor>& root_keys,
    std::vector<std::shared_ptr<const sampling::NeighbourhoodMatrix>>* held) {
  // The layers' neighbourhood matrices, rebuilt when selection has made new HDGs.
  std::map<const hdg::Hdg*, std::shared_ptr<const sampling::NeighbourhoodMatrix>> matrices;
  std::vector<const sampling::NeighbourhoodMatrix*> layers;
  for (size_t i = 0; i < layer_hdgs.size(); ++i) {
    const hdg::HdgPtr& h = layer_hdgs[i];
    auto& m = matrices[h.get()];
    if (m == nullptr) {
      auto it = matrices_.find(h.get());
      if (it != matrices_.end()) {
        m = it->second;
      } else {
        FG_ASSIGN_OR_RETURN(sampling::NeighbourhoodMatrix built,
                            sampling::NeighbourhoodMatrix::Create(
                                h, parts_.spec->vertices->size(), root_keys.empty() ? Tensor() : root_keys[i]));
        m = std::make_shared<const sampling::NeighbourhoodMatrix>(std::move(built));
      }
    }
    layers.push_back(m.get());
    held->push_back(m);
  }
  matrices_ = std::move(matrices);
  return layers;
}

absl::StatusOr<Tensor> MiniBatchTraining::InferOnSubgraphs(const Tensor& ids, const std::vector<hdg::HdgPtr>& layer_hdgs,
                                                           const std::vector<Tensor>& root_keys, int epoch) {
  std::vector<std::shared_ptr<const sampling::NeighbourhoodMatrix>> held;
  FG_ASSIGN_OR_RETURN(std::vector<const sampling::NeighbourhoodMatrix*> layers, Matrices(layer_hdgs, root_keys, &held));
  ag::NoGradGuard guard;
  std::vector<Tensor> rows;
  const int64_t n = ids.numel(), chunk = std::max<int64_t>(batch_size_, kInferenceBatch);
  int64_t chunks = (n + chunk - 1) / chunk;
  if (parts_.owned != nullptr) {  // every worker draws as many chunks as the one with the most
    Communicator& comm = *parts_.exec->setup().comm;
    std::vector<double> counts(comm.size(), 0.0);
    counts[comm.rank()] = static_cast<double>(chunks);
    FG_RETURN_IF_ERROR(comm.AllReduce(&counts, epoch, kStepShadowChunks));
    chunks = static_cast<int64_t>(*std::max_element(counts.begin(), counts.end()));
  }
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t at = std::min(n, c * chunk);
    const Tensor seeds = Tensor::FromVector(std::vector<int64_t>(ids.i64() + at, ids.i64() + std::min(n, at + chunk)));
    // Every chunk as batch 0 of the evaluation epoch: a vertex's subgraph is the same in every
    // evaluation, whatever the chunk it falls in and the worker that evaluates it.
    std::vector<sampling::MiniBatch> batch;
    if (parts_.owned != nullptr) {
      FG_ASSIGN_OR_RETURN(batch, SampleAcrossParts(*parts_.exec->setup().comm, parts_.exec->ownership(), *parts_.owned,
                                                   layers, options_, kInferenceEpoch, c, 0, {seeds}));
    } else {
      FG_ASSIGN_OR_RETURN(batch, sampling::SampleBulk(layers, options_, kInferenceEpoch, 0, {seeds}));
    }
    if (seeds.numel() == 0) continue;  // drawn with the others; nothing of this worker's
    nau::LayerContext ctx;
    ctx.training = false;
    ctx.seed = options_.seed;
    rows.push_back(RunLayers(batch[0], {}, &ctx).value().To(Device::kCpu));
  }
  if (rows.empty()) return Tensor::Empty({0, parts_.task->num_classes()}, DType::kFloat32);
  if (rows.size() == 1) return rows[0];
  Tensor out = Tensor::Empty({n, rows.empty() ? 0 : rows[0].dim(1)}, DType::kFloat32);
  int64_t at = 0;
  for (const Tensor& r : rows) {
    std::copy(r.f32(), r.f32() + r.numel(), out.f32() + at);
    at += r.numel();
  }
  return out;
}

absl::StatusOr<double> MiniBatchTraining::RunEpoch(int epoch, const std::vector<hdg::HdgPtr>& layer_hdgs,
                                                   const std::vector<Tensor>& root_keys) {
  std::vector<std::shared_ptr<const sampling::NeighbourhoodMatrix>> held;
  FG_ASSIGN_OR_RETURN(std::vector<const sampling::NeighbourhoodMatrix*> layers, Matrices(layer_hdgs, root_keys, &held));
  if (sample_on_device_ && (device_sampler_ == nullptr || device_layers_ != held)) {
    device_sampler_.reset();
    FG_ASSIGN_OR_RETURN(device_sampler_, sampling::DeviceSampler::Create(layers, options_));
    device_layers_ = std::move(held);
  }

  const std::vector<Tensor> batches = sampling::EpochBatches(items_, batch_size_, options_.seed, epoch);
  const int64_t num = static_cast<int64_t>(batches.size());
  // This worker's items of every batch: its own (a partitioned dataset), every P-th one (the
  // whole graph on every worker), all of them (a single process).
  std::vector<Tensor> mine = batches;
  if (parts_.owned != nullptr) {
    for (Tensor& b : mine) {
      std::vector<int64_t> share;
      for (int64_t k = 0; k < b.numel(); ++k) {
        if (const int32_t i = local_item_[b.i64()[k]]; i >= 0) share.push_back(i);
      }
      b = Tensor::FromVector(share);
    }
  } else if (parts_.exec->distributed()) {
    const int rank = parts_.exec->rank(), size = parts_.exec->setup().comm->size();
    for (Tensor& b : mine) {
      std::vector<int64_t> share;
      for (int64_t k = rank; k < b.numel(); k += size) share.push_back(b.i64()[k]);
      b = Tensor::FromVector(share);
    }
  }
  // Input rows that need no gradient (the dataset's features) are read with the samples: in the
  // background, a memory-bound gather beside training's compute-bound products; a bulk's first
  // batches only, up to kPrefetchBytes of rows (wide features and large batches would otherwise
  // hold gigabytes).
  if (prefetch_inputs_ < 0) {
    prefetch_inputs_ = 0;
    if (parts_.device == Device::kCpu && parts_.owned == nullptr) {
      nau::LayerContext probe = StepContext(0);
      const ag::Var row = parts_.model->InputRows(probe, *parts_.spec, Tensor::FromVector(std::vector<int64_t>{0}));
      prefetch_inputs_ = !row.requires_grad();
      input_row_bytes_ = row.value().nbytes();
    }
  }
  // Samples the bulk from batch `first` on; reads ahead its first batches' input rows and draws
  // their `dropouts` (layer 0's, as learned so far).
  auto sample = [&, epoch](int64_t first, std::vector<InputDropout> dropouts) -> absl::StatusOr<SampledBulk> {
    const int64_t end = std::min<int64_t>(num, first + bulk_);
    std::vector<Tensor> seeds;
    for (int64_t b = first; b < end; ++b) seeds.push_back(parts_.task->BatchRoots(mine[b], epoch));
    SampledBulk bulk;
    if (parts_.owned != nullptr) {
      FG_ASSIGN_OR_RETURN(bulk.batches, SampleAcrossParts(*parts_.exec->setup().comm, parts_.exec->ownership(),
                                                          *parts_.owned, layers, options_, epoch, first / bulk_,
                                                          first, seeds, remote_rows_.get(),
                                                          remote_neighbourhoods_.get()));
    } else if (LeadersDrawBatches()) {
      // The whole graph on every worker: its ids are a single process's, and so are the keys.
      FG_ASSIGN_OR_RETURN(bulk.batches,
                          SampleLayerWiseAcrossWorkers(*parts_.exec->setup().comm, nullptr, layers, options_, epoch,
                                                       first / bulk_, first, seeds, seeds));
    } else if (device_sampler_ != nullptr) {
      FG_ASSIGN_OR_RETURN(bulk.batches, device_sampler_->SampleBulk(epoch, first, seeds));
    } else {
      FG_ASSIGN_OR_RETURN(bulk.batches, sampling::SampleBulk(layers, options_, epoch, first, seeds));
    }
    bulk.dropped.resize(bulk.batches.size());
    int64_t budget = kPrefetchBytes;
    for (size_t k = 0; prefetch_inputs_ == 1 && k < bulk.batches.size(); ++k) {
      sampling::MiniBatch& b = bulk.batches[k];
      budget -= b.blocks[0].table.numel() * input_row_bytes_ * static_cast<int64_t>(1 + dropouts.size());
      if (budget < 0) break;
      nau::LayerContext ctx = StepContext(Step(epoch, b.index));  // layer 0's, as TrainBatch's
      b.inputs = parts_.model->InputRows(ctx, *parts_.spec, b.blocks[0].table).value();
      for (const InputDropout& d : dropouts) {
        bulk.dropped[k].push_back({d, ops::Dropout(b.inputs, d.p, ctx.DropoutSeed(d.site), b.blocks[0].table)});
      }
    }
    return bulk;
  };
  sampled_edges_ = 0;
  sampling_wait_ = 0;
  double loss_sum = 0;
  // [0]: the epoch's loss sum; [1 + b]: batch b's loss (this worker's share of it).
  std::vector<double> total(1 + num, 0.0);
  // The epoch's first bulk is sampled with every thread while training waits; each next one in
  // the background while the current one trains, on cycles the training leaves idle.
  auto sample_behind = [&](int64_t first, std::vector<InputDropout> dropouts) {
    BecomeBackground();  // a thread of its own (std::async)
    return sample(first, std::move(dropouts));
  };
  std::future<absl::StatusOr<SampledBulk>> next;
  for (int64_t first = 0; first < num; first += bulk_) {
    absl::StatusOr<SampledBulk> bulk;
    {
      Stopwatch wait;
      bulk = first == 0 ? sample(0, input_dropouts_) : next.get();
      sampling_wait_ += wait.Seconds();
      parts_.stats->selection += wait.Seconds();
    }
    if (first + bulk_ < num) next = std::async(std::launch::async, sample_behind, first + bulk_, input_dropouts_);
    if (!bulk.ok()) {
      if (next.valid()) next.wait();
      return bulk.status();
    }
    for (size_t k = 0; k < bulk->batches.size(); ++k) {
      const sampling::MiniBatch& b = bulk->batches[k];
      sampled_edges_ += b.sampled_edges;
      const double loss = TrainBatch(b, bulk->dropped[k], mine[b.index], batches[b.index].numel(),
                                     epoch, Step(epoch, b.index));
      loss_sum += loss;
      total[1 + b.index] = loss;
      if (!parts_.exec->status().ok()) {
        if (next.valid()) next.wait();
        return parts_.exec->status();
      }
    }
  }
  total[0] = loss_sum;
  parts_.exec->SumDoubles(&total, epoch, kStepEpochLoss);
  FG_RETURN_IF_ERROR(parts_.exec->status());
  batch_losses_.assign(total.begin() + 1, total.end());
  return total[0] / static_cast<double>(num);
}

}  // namespace fg::runtime
