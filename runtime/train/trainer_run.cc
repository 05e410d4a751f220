// The Trainer's steps: forward passes, a training step (whole-graph or mini-batch), evaluation,
// inference, and the run loop with checkpoints, early stopping and the saved model. Setup (data,
// model, rows, HDG selection) is in trainer.cc.
#include "runtime/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "flexgraph/base/fault.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/tensor/device_alloc.h"
#include "runtime/tasks/graph_tasks.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/hooks.h"
#include "runtime/train/saved_model.h"
#include "runtime/train/tensorboard.h"

namespace fg::runtime {
namespace {

// Tag steps of the scalar reductions of one epoch (the gradients use 2).
// Collective steps; one evaluation's sums take consecutive steps from kStepMetrics; 7 is
// trainer_grid.cc's kStepWorkerMemory (at setup).
constexpr int kStepLoss = 1, kStepEvalLoss = 5, kStepWorkerFigures = 6, kStepMetrics = 64;

// The TensorBoard scalars of one epoch: tags group by their first component.
std::vector<std::pair<std::string, double>> EpochScalars(const EpochRecord& e) {
  std::vector<std::pair<std::string, double>> out = {
      {"loss/train", e.loss}, {"time/epoch_seconds", e.seconds}, {"learning_rate", e.lr}};
  for (const auto& [name, value] : e.stats.Named()) out.emplace_back(absl::StrCat("stage_seconds/", name), value);
  if (e.evaluated) {
    for (const auto& [key, value] : NamedMetrics(e.metrics)) out.emplace_back(absl::StrCat("metrics/", key), value);
  }
  for (size_t w = 0; w < e.worker_bytes_sent.size(); ++w) {
    out.emplace_back(absl::StrCat("worker_bytes_sent/rank_", w), e.worker_bytes_sent[w]);
    out.emplace_back(absl::StrCat("worker_wait_seconds/rank_", w), e.worker_wait_seconds[w]);
  }
  return out;
}

}  // namespace

ag::Var Trainer::Forward(int epoch, bool training, int last, ag::Var* capture) {
  if (last == -2) last = model_->num_layers() - 1;
  nau::LayerContext ctx;
  ctx.training = training;
  ctx.epoch = epoch;
  ctx.seed = config_.train().seed();
  ctx.stats = training ? &stats_ : nullptr;
  exec_.BeginPass(&ctx, epoch, training);
  ag::Var h = model_->Input(ctx, spec_);
  if (h.rows() != table_.ids.numel()) {  // a model that lays out every vertex: keep our rows
    Tensor idx = Tensor::Empty({table_.ids.numel()}, DType::kInt32);
    for (int64_t k = 0; k < idx.numel(); ++k) idx.i32()[k] = static_cast<int32_t>(table_.ids.i64()[k]);
    h = ag::GatherRows(h, idx.To(h.value().device()));
  }
  if (h.value().device() != device_) {  // a constant input (features): placed once
    FG_CHECK(!h.requires_grad()) << "a trained model input on " << DeviceName(h.value().device());
    if (input_on_device_source_ != h.value().raw()) {
      input_on_device_ = h.value().To(device_);
      input_on_device_source_ = h.value().raw();
    }
    h = ag::Var(input_on_device_);
  }
  // A constant, mostly-zero input (bag-of-words features) also gets a sparse view, built once (on
  // the CPU: a GPU multiplies the dense rows faster).
  if (!sparse_checked_ && device_ == Device::kCpu && !h.requires_grad() && h.value().rank() == 2 &&
      h.value().numel() > 0) {
    sparse_checked_ = true;
    const Tensor& x = h.value();
    const int64_t nonzero = std::count_if(x.f32(), x.f32() + x.numel(), [](float v) { return v != 0; });
    if (nonzero < x.numel() / 10) {
      input_sparse_ = std::make_shared<SparseMatrix>(ops::DenseToCsr(x));
      input_sparse_source_ = x.raw();
    }
  }
  for (int i = 0; i <= last; ++i) {
    ctx.layer = i;
    ctx.input_sparse = i == 0 && h.value().raw() == input_sparse_source_ ? input_sparse_ : nullptr;
    ctx.capture_nbr = i == last ? capture : nullptr;
    h = exec_.RunLayer(i, model_->layer(i), h, ctx);
  }
  return h;
}

ag::Var Trainer::TaskRows(const ag::Var& output) {
  return all_rows() ? exec_.AllRows(output) : output;
}

double Trainer::TrainStep(int epoch) {
  if (graph_batches_ != nullptr) {
    absl::StatusOr<double> loss = graph_batches_->RunEpoch(epoch);
    if (!loss.ok()) exec_.RecordError(loss.status());
    return loss.ok() ? *loss : std::nan("");
  }
  if (auto s = EnsureHdgs(epoch); !s.ok()) {
    exec_.RecordError(s);
    return std::nan("");
  }
  if (minibatch_ != nullptr) {
    absl::StatusOr<double> loss = 0.0;
    if (absl::Status s = WholeGraphHdgs(epoch); !s.ok()) {
      loss = s;
    } else {
      const bool whole = distributed() && !dataset_.part;
      std::vector<hdg::HdgPtr> hdgs;
      for (const LayerGraph& lg : whole ? whole_graphs_ : layer_graphs_) hdgs.push_back(lg.hdg);
      std::vector<Tensor> keys;  // a part's roots are renumbered: their source ids key sampling
      for (int i = 0; dataset_.part && i < model_->num_layers(); ++i) keys.push_back(layer_roots_[i].keys);
      loss = minibatch_->RunEpoch(epoch, hdgs, keys);
    }
    if (!loss.ok()) exec_.RecordError(loss.status());
    return loss.ok() ? *loss : std::nan("");
  }
  ag::Var output = Forward(epoch, true);
  ag::Var loss;
  {
    ScopedTimer t(&stats_.loss);
    loss = task_->Loss(TaskRows(output), epoch);
  }
  {
    ScopedTimer t(&stats_.backward);
    loss.Backward();
    exec_.AllReduceGradients(optimizer_->params(), epoch);
  }
  std::vector<double> value = {loss.value().Item()};
  exec_.SumDoubles(&value, epoch, kStepLoss);
  if (!status().ok()) return std::nan("");
  ScopedTimer t(&stats_.optimizer);
  optimizer_->Step();
  optimizer_->ZeroGrad();
  if (device_ != Device::kCpu) DeviceStreamSynchronize();  // the epoch's time includes its kernels
  return value[0];
}

double Trainer::EvalLoss() {
  if (graph_batches_ != nullptr) {
    absl::StatusOr<double> loss = graph_batches_->TrainingLoss();
    if (!loss.ok()) exec_.RecordError(loss.status());
    return loss.ok() ? *loss : std::nan("");
  }
  ag::NoGradGuard guard;
  ag::Var output = Forward(0, false);
  std::vector<double> value = {task_->Loss(TaskRows(output), 0).value().Item()};
  exec_.SumDoubles(&value, 0, kStepEvalLoss);
  return value[0];
}

EpochMetrics Trainer::Evaluate(int epoch) {
  ScopedTimer timer(&stats_.evaluation);
  if (graph_batches_ != nullptr) {
    // Validation and test graphs only: the training graphs' metrics would cost a forward pass over
    // every one of them per evaluation (the training loss is reported instead).
    std::map<std::string, double> splits[3];
    for (int s = 1; s < 3; ++s) {
      // Each split in batches of the training batch size (one batch when it is 0).
      absl::StatusOr<std::map<std::string, double>> m =
          graph_batches_->Evaluate(s, config_.train().batch_size());
      if (!m.ok()) exec_.RecordError(m.status());
      if (m.ok()) splits[s] = *std::move(m);
    }
    return static_cast<const GraphSetTask&>(*task_).SplitMetrics(splits);
  }
  ag::NoGradGuard guard;
  Tensor output;
  if (minibatch_ != nullptr && minibatch_->EvaluatesOnSubgraphs()) {
    // ShaDow: each root's output from its own subgraph, as in training.
    absl::StatusOr<Tensor> rows = absl::UnknownError("no rows");
    if (absl::Status s = WholeGraphHdgs(epoch); !s.ok()) {
      rows = s;
    } else {
      const bool whole = distributed() && !dataset_.part;
      std::vector<hdg::HdgPtr> hdgs;
      for (const LayerGraph& lg : whole ? whole_graphs_ : layer_graphs_) hdgs.push_back(lg.hdg);
      std::vector<Tensor> keys;  // as in training
      for (int i = 0; dataset_.part && i < model_->num_layers(); ++i) keys.push_back(layer_roots_[i].keys);
      rows = minibatch_->InferOnSubgraphs(layer_roots_.back().ids, hdgs, keys, epoch);
    }
    if (!rows.ok()) {
      exec_.RecordError(rows.status());
      return EpochMetrics();
    }
    output = TaskRows(ag::Var(rows->To(device_))).value().To(Device::kCpu);
  } else {
    output = TaskRows(Forward(epoch, false)).value().To(Device::kCpu);  // metrics: host
  }
  int step = kStepMetrics;
  return task_->Evaluate(output, [&](std::vector<double>* v) {
    FG_CHECK(step <= kMaxTagStep) << "evaluation needs too many sums";
    exec_.SumDoubles(v, epoch, step++);
  });
}

absl::StatusOr<Tensor> Trainer::Infer(int epoch, int layer, Tensor* ids, bool nbr) {
  if (distributed()) return absl::UnimplementedError("inference: single-process runs only");
  if (graph_batches_ != nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        "inference: ", config_.dataset().path(), " is a set of graphs; score its edges with "
        "`flexgraph track`"));
  }
  if (layer < -1 || layer >= model_->num_layers()) {
    return absl::InvalidArgumentError(absl::StrCat("layer ", layer, ": the model has layers 0 to ",
                                                   model_->num_layers() - 1, " (-1: its input)"));
  }
  FG_RETURN_IF_ERROR(EnsureHdgs(epoch));
  if (nbr && layer < 0) return absl::InvalidArgumentError("the model's input has no neighbourhood");
  ag::NoGradGuard guard;
  ag::Var captured;
  Tensor out = Forward(epoch, false, layer, nbr ? &captured : nullptr).value();
  *ids = layer < 0 ? table_.ids : layer_roots_[layer].ids;
  return (nbr ? captured.value() : out).To(Device::kCpu);
}

absl::StatusOr<EpochMetrics> Trainer::EvaluateAt(int epoch) {
  FG_RETURN_IF_ERROR(EnsureHdgs(epoch));
  EpochMetrics m = Evaluate(epoch);
  FG_RETURN_IF_ERROR(status());
  return m;
}

absl::StatusOr<TrainResult> Trainer::Run() {
  const flexgraph::TrainConfig& tc = config_.train();
  const flexgraph::OutputConfig& out = config_.output();
  TrainResult r;
  r.model = config_.model().name();
  r.dataset = config_.dataset().path();
  r.seed = tc.seed();
  r.num_vertices = space_.size();
  r.num_edges = dataset_.graph.TotalEdges();
  RunIdentity run = IdentityOf(config_, exec_.distributed() ? exec_.setup().comm->size() : 1);
  r.task = task_->kind();
  const bool link = r.task == nau::Task::kLinkPrediction;
  // One run per checkpoint directory (rank 0 writes the checkpoints for every worker; the lock is
  // held until Run returns), and a checkpoint remembers the dataset's contents, not only its path.
  std::unique_ptr<graph::io::DirectoryLock> checkpoint_lock;
  if (tc.checkpoint_every() > 0 || tc.resume()) {
    if (exec_.rank() == 0) {
      FG_ASSIGN_OR_RETURN(checkpoint_lock, LockCheckpointDirectory(tc.checkpoint_dir()));
    }
    std::vector<std::string> outputs = {tc.checkpoint_dir(), config_.dataset().cache_dir(),
                                        out.summary_json(), out.export_hdg(), out.tensorboard()};
    if (!out.save_model().empty()) {
      for (const char* suffix : {"", ".partial", ".previous"})
        outputs.push_back(out.save_model() + suffix);
    }
    FG_ASSIGN_OR_RETURN(run.dataset_files, DatasetFingerprint(config_.dataset().path(), outputs));
  }
  int start = 0;
  const bool macro_f1 = tc.select_on() == "macro_f1";
  double best_valid = -1;
  int since_best = 0;
  const bool have_checkpoint = tc.resume() && HasCheckpoint(tc.checkpoint_dir());
  if (tc.resume() && !have_checkpoint && !out.quiet()) {
    std::fprintf(stderr, "resume: no checkpoint in %s yet; starting at epoch 1\n",
                 tc.checkpoint_dir().c_str());
  }
  if (have_checkpoint) {
    std::string passed_over;
    FG_ASSIGN_OR_RETURN(start,
                        LoadCheckpoint(tc.checkpoint_dir(), run, *optimizer_, &r, &passed_over));
    if (start > tc.epochs()) {
      return absl::FailedPreconditionError(
          absl::StrCat(tc.checkpoint_dir(), ": the checkpoint is at epoch ", start,
                       ", past this run's epochs (", tc.epochs(), ")"));
    }
    r.resumed_from_epoch = start;
    // Even with --quiet: the log of every restart says where it began.
    if (!passed_over.empty()) {
      std::fprintf(stderr, "%s: passed over for the previous checkpoint\n", passed_over.c_str());
    }
    std::fprintf(stderr, "resumed from checkpoint at epoch %d (%s%s)\n", start,
                 tc.checkpoint_dir().c_str(), passed_over.empty() ? "" : ", the previous one");
    best_valid = std::isnan(r.best_selection) ? -1 : r.best_selection;
    since_best = (start - r.best_epoch) / tc.eval_every();
  }
  if (out.explain()) std::fprintf(stderr, "%s", Explain().c_str());
  if (!out.export_hdg().empty()) FG_RETURN_IF_ERROR(ExportHdgs(out.export_hdg()));
  if (distributed() && minibatch_ == nullptr && out.export_hdg().empty()) ReleaseHdgs();
  if (out.epoch0_loss() && start == 0) {
    r.epoch0_loss = EvalLoss();
    FG_RETURN_IF_ERROR(status());
    if (!out.quiet()) std::fprintf(stderr, "epoch0_loss %.9g\n", r.epoch0_loss);
  }
  // Parameters are identical on every worker: rank 0 saves the model.
  const bool save_model = !out.save_model().empty() && exec_.rank() == 0;
  if (save_model) FG_RETURN_IF_ERROR(PrepareModelDir(out.save_model()));
  std::vector<std::pair<std::string, Tensor>> best_params;
  // Rank 0 writes the run's scalars; every worker takes part in gathering the workers' figures.
  const bool tensorboard = !out.tensorboard().empty();
  std::unique_ptr<EventWriter> events;
  if (tensorboard && exec_.rank() == 0) {
    FG_ASSIGN_OR_RETURN(events, EventWriter::Open(out.tensorboard()));
  }
  Communicator* comm = distributed() ? exec_.setup().comm : nullptr;
  auto bytes_sent = [comm] {
    double total = 0;
    for (int k = 0; k < kNumTrafficKinds; ++k) total += comm->bytes_sent(static_cast<TrafficKind>(k));
    return total;
  };
  int ran = 0;
  bool said_no_valid = false;
  double step_seconds = 0, step_wait_seconds = 0;  // the training steps' time, and its waits
  nn::LrSchedule schedule = nn::LrSchedule::kConstant;
  nn::ParseLrSchedule(tc.lr_schedule(), &schedule);  // validated with the config
  for (int epoch = start; epoch < tc.epochs(); ++epoch) {
    optimizer_->options().lr = nn::ScheduledLr(schedule, tc.lr(), epoch, tc.epochs(), tc.warmup_epochs());
    RunEpochHooks(exec_.rank(), epoch + 1);
    NoteProgress();
    FaultPoint("epoch.start");
    Stopwatch watch;
    const nau::ExecStats before = stats_;
    const int64_t syncs_before = GetDeviceAllocatorStats().host_syncs;
    const double bytes_before = comm != nullptr ? bytes_sent() : 0;
    const double wait_before = comm != nullptr ? comm->wait_seconds() : 0;
    const double loss = TrainStep(epoch);
    const double seconds = watch.Seconds();
    step_seconds += seconds;
    if (comm != nullptr) step_wait_seconds += comm->wait_seconds() - wait_before;
    r.epoch_stats.push_back(stats_ - before);
    r.epoch_host_syncs.push_back(
        static_cast<double>(GetDeviceAllocatorStats().host_syncs - syncs_before));
    FG_RETURN_IF_ERROR(status());
    if (!std::isfinite(loss)) {
      return absl::InternalError(absl::StrCat("training diverged: loss ", loss, " at epoch ",
                                              epoch + 1, " (try a smaller --lr)"));
    }
    r.losses.push_back(loss);
    if (graph_batches_ != nullptr) {
      r.batches_per_epoch = graph_batches_->batches_per_epoch();
      r.batch_losses.insert(r.batch_losses.end(), graph_batches_->batch_losses().begin(),
                            graph_batches_->batch_losses().end());
    }
    if (minibatch_ != nullptr) {
      r.batches_per_epoch = minibatch_->batches_per_epoch();
      r.batch_losses.insert(r.batch_losses.end(), minibatch_->batch_losses().begin(),
                            minibatch_->batch_losses().end());
      r.bulk = minibatch_->bulk();
      r.sampled_edges_per_epoch = minibatch_->sampled_edges();
      r.sampling_wait_seconds += minibatch_->sampling_wait_seconds();
      if (const RemoteRowCache* c = minibatch_->remote_rows(); c != nullptr) {
        r.remote_rows_fetched = c->rows_fetched();
        r.remote_rows_cached = c->rows_cached();
        r.remote_rows_capacity = c->capacity();
      }
      if (const RemoteNeighbourhoodCache* c = minibatch_->remote_neighbourhoods(); c != nullptr) {
        r.remote_neighbourhood_entries_fetched = c->entries_fetched();
        r.remote_neighbourhood_entries_cached = c->entries_cached();
      }
    }
    r.epoch_seconds.push_back(seconds);
    ++ran;
    r.epochs = epoch + 1;
    const bool last = epoch + 1 == tc.epochs() || (tc.stop_after() > 0 && ran >= tc.stop_after());
    EpochRecord record;
    record.epoch = epoch + 1;
    record.loss = loss;
    record.seconds = seconds;
    record.lr = optimizer_->options().lr;
    if ((epoch + 1) % tc.eval_every() == 0 || last) {
      const EpochMetrics m = Evaluate(epoch);
      FG_RETURN_IF_ERROR(status());
      // What the run reports: link prediction's metrics are its own (ROC-AUC, hits@10 in `extra`),
      // not accuracies; `m.valid` (its validation AUC) still drives model selection.
      EpochMetrics shown = m;
      if (link) {
        shown.train = shown.valid = shown.valid_macro_f1 = std::nan("");
        shown.test = shown.test_macro_f1 = shown.test_micro_f1 = std::nan("");
      }
      if (r.task == nau::Task::kEdgeClassification) {  // m.valid is its validation AUC (selection)
        auto accuracy = [&](const char* key) {
          auto it = m.extra.find(key);
          return it == m.extra.end() ? std::nan("") : it->second;
        };
        shown.train = accuracy("train_accuracy");
        shown.valid = accuracy("valid_accuracy");
        shown.test = accuracy("test_accuracy");
      }
      record.evaluated = true;
      record.metrics = shown;
      const double valid = macro_f1 ? m.valid_macro_f1 : m.valid;
      // Without a validation split (NaN) there is nothing to select on: the last evaluated epoch is
      // selected, as a DGL or PyG script without validation keeps its final model, and patience
      // never runs out. Never "epoch 1" by a comparison with nothing.
      const bool no_valid = std::isnan(valid);
      if (no_valid && !said_no_valid) {
        said_no_valid = true;
        if (!out.quiet()) {
          std::fprintf(stderr,
                       "no validation split: the last epoch is selected (no early stopping)\n");
        }
      }
      if (no_valid || valid > best_valid) {
        if (!no_valid) best_valid = valid;
        r.best_selection = valid;
        r.best_epoch = epoch + 1;
        r.valid_accuracy = shown.valid;
        r.valid_macro_f1 = shown.valid_macro_f1;
        r.test_accuracy = shown.test;
        r.test_macro_f1 = shown.test_macro_f1;
        r.test_micro_f1 = shown.test_micro_f1;
        for (const auto& [key, value] : m.extra) r.extra[key] = value;
        since_best = 0;
        if (!out.save_model().empty()) {  // the parameters the run selects
          best_params.clear();
          for (const nn::NamedParameter& p : model_->parameters()) {
            best_params.emplace_back(p.name, p.var.value().To(Device::kCpu).Clone());
          }
        }
      } else {
        ++since_best;
      }
      r.train_accuracy = shown.train;
      if (!out.quiet()) {
        std::fprintf(stderr, "epoch %4d  %s\n", epoch + 1, task_->EpochLine(loss, m, seconds).c_str());
      }
    } else if (!out.quiet()) {
      std::fprintf(stderr, "epoch %4d  loss %.4f  %.3fs\n", epoch + 1, loss, seconds);
    }
    record.stats = stats_ - before;
    if (tensorboard && comm != nullptr) {  // every worker's figures, each in its rank's slots
      const int p = comm->size();
      std::vector<double> figures(2 * p, 0.0);
      figures[comm->rank()] = bytes_sent() - bytes_before;
      figures[p + comm->rank()] = comm->wait_seconds() - wait_before;
      exec_.SumDoubles(&figures, epoch, kStepWorkerFigures);
      FG_RETURN_IF_ERROR(status());
      record.worker_bytes_sent.assign(figures.begin(), figures.begin() + p);
      record.worker_wait_seconds.assign(figures.begin() + p, figures.end());
    }
    if (events != nullptr) FG_RETURN_IF_ERROR(events->AddScalars(record.epoch, EpochScalars(record)));
    r.history.push_back(std::move(record));
    if (epoch_callback_ != nullptr) FG_RETURN_IF_ERROR(epoch_callback_(r.history.back()));
    // Parameters are identical on every worker: rank 0 writes the checkpoint for all.
    if (tc.checkpoint_every() > 0 && (epoch + 1) % tc.checkpoint_every() == 0 &&
        exec_.rank() == 0) {
      FG_RETURN_IF_ERROR(SaveCheckpoint(tc.checkpoint_dir(), run, epoch + 1, *optimizer_, r));
      if (!out.quiet()) {
        std::fprintf(stderr, "checkpoint at epoch %d written to %s\n", epoch + 1,
                     tc.checkpoint_dir().c_str());
      }
    }
    if (tc.patience() > 0 && since_best >= tc.patience()) {
      if (!out.quiet()) {
        std::fprintf(stderr, "early stop: no validation improvement in %d evaluations\n",
                     tc.patience());
      }
      break;
    }
    if (tc.stop_after() > 0 && ran >= tc.stop_after()) break;
  }
  if (save_model) {
    flexgraph::SavedModel saved = Describe();
    if (!best_params.empty()) {
      saved.set_epoch(r.best_epoch);
      saved.set_valid_accuracy(r.valid_accuracy);
      saved.set_test_accuracy(r.test_accuracy);
      saved.set_test_macro_f1(r.test_macro_f1);
    } else {  // resumed past its best epoch: the best parameters are not at hand, the last are
      saved.set_epoch(r.epochs);
      for (const nn::NamedParameter& p : model_->parameters()) {
        best_params.emplace_back(p.name, p.var.value().To(Device::kCpu));
      }
    }
    FG_RETURN_IF_ERROR(SaveModel(out.save_model(), saved, best_params));
    if (!out.quiet()) {
      std::fprintf(stderr, "saved the parameters of epoch %d to %s\n", saved.epoch(), out.save_model().c_str());
    }
  }
  r.final_loss = r.losses.empty() ? 0 : r.losses.back();
  std::vector<double> steady(r.epoch_seconds.begin() + FirstSteadyEpoch(r.epoch_seconds.size()),
                             r.epoch_seconds.end());
  r.epoch_seconds_median = Median(steady);
  r.hdg_bytes = HdgBytes();
  r.peak_rss_bytes = PeakRssBytes();
  r.peak_tensor_bytes = static_cast<int64_t>(GetCpuAllocatorStats().peak_bytes_in_use);
  r.host_fresh_bytes = static_cast<int64_t>(GetCpuAllocatorStats().fresh_bytes);
  r.peak_device_bytes = static_cast<int64_t>(GetDeviceAllocatorStats().peak_bytes_in_use);
  r.stats = stats_;
  r.traffic = exec_.ReportTraffic(stats_);
  if (graph_batches_ != nullptr && distributed()) {  // sets of graphs share batches, not one graph's rows
    r.traffic.exchange = graph_batches_->shards_vertices() ? "vertex-sharded batches (1d rows)" : "data-parallel graphs";
  }
  // Receives of concurrent threads may wait at once: their sum can pass the wall time.
  if (comm != nullptr) r.traffic.compute_seconds = std::max(0.0, step_seconds - step_wait_seconds);
  if (!out.quiet()) {
    PrintSummary(r, stderr);
    if (!r.extra.empty()) {
      std::string line = task_->Describe() + " at the best validation epoch:";
      for (const auto& [key, value] : r.extra) absl::StrAppendFormat(&line, "  %s %.4f", key, value);
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  return r;
}


}  // namespace fg::runtime
