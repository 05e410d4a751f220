#include "runtime/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/nn/metrics.h"
#include "flexgraph/tensor/device_alloc.h"
#include "proto/checkpoint.pb.h"

namespace fg::runtime {
namespace {

Tensor RowNormalize(const Tensor& x) {
  Tensor y = x.Clone();
  const int64_t n = y.rows(), d = y.row_width();
  ParallelFor(0, n, [&](int64_t i) {
    float* r = y.f32() + i * d;
    double s = 0;
    for (int64_t j = 0; j < d; ++j) s += r[j];
    if (s != 0) {
      const float inv = static_cast<float>(1.0 / s);
      for (int64_t j = 0; j < d; ++j) r[j] *= inv;
    }
  });
  return y;
}

Tensor ToRows(const Tensor& ids, int64_t limit, const char* what, absl::Status* status) {
  Tensor rows = Tensor::Empty({ids.defined() ? ids.numel() : 0}, DType::kInt32);
  for (int64_t k = 0; k < rows.numel(); ++k) {
    const int64_t v = ids.i64()[k];
    if (v < 0 || v >= limit) {
      *status = absl::InvalidArgumentError(
          absl::StrCat(what, " split: node id ", v, " outside [0, ", limit, ")"));
      return Tensor();
    }
    rows.i32()[k] = static_cast<int32_t>(v);
  }
  return rows;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void ToProto(const Tensor& t, const std::string& name, flexgraph::TensorProto* p) {
  p->set_name(name);
  for (int64_t d : t.shape()) p->add_shape(d);
  p->set_data(std::string(reinterpret_cast<const char*>(t.f32()), t.nbytes()));
}

absl::Status FromProto(const flexgraph::TensorProto& p, Tensor* t, const std::string& where) {
  if (p.data().size() != t->nbytes()) {
    return absl::DataLossError(absl::StrCat(where, ": tensor '", p.name(), "' has ",
                                            p.data().size(), " bytes, expected ", t->nbytes()));
  }
  std::memcpy(t->f32(), p.data().data(), t->nbytes());
  return absl::OkStatus();
}

}  // namespace

Trainer::Trainer(TrainOptions options) : options_(std::move(options)) {}
Trainer::~Trainer() = default;

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainOptions& options) {
  FG_RETURN_IF_ERROR(ValidateOptions(options));
  if (options.device == "cuda" && !CudaAvailable()) {
    return absl::FailedPreconditionError(
        "device: cuda requested but no usable CUDA device (or this build has no CUDA backend)");
  }
  std::unique_ptr<Trainer> t(new Trainer(options));
  FG_RETURN_IF_ERROR(t->Init());
  return t;
}

absl::Status Trainer::Init() {
  if (options_.threads > 0) SetNumThreads(options_.threads);
  Progress::SetQuiet(options_.quiet);
  const nau::ModelInfo* info = nau::ModelRegistry::Get().Find(options_.model);
  if (info == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("model: unknown model '", options_.model, "'"));
  }
  graph::LoadOptions load;
  load.split = options_.split;
  load.cache_dir = options_.cache_dir;
  {
    Progress progress(absl::StrCat("load ", options_.dataset), 0);
    FG_ASSIGN_OR_RETURN(dataset_, graph::LoadDataset(options_.dataset, load));
  }
  space_ = nau::VertexSpace(dataset_.graph);
  std::string target = options_.target_type.empty() ? dataset_.LabeledType() : options_.target_type;
  if (space_.TypeIndex(target) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("target_type: node type '", target, "' not in dataset ", options_.dataset));
  }
  if (options_.normalize_features) {
    for (auto& [type, feat] : dataset_.features) {
      if (feat.defined()) feat = RowNormalize(feat);
    }
  }
  // Labels and splits of the target type.
  auto lab = dataset_.labels.find(target);
  auto split = dataset_.splits.find(target);
  if (lab == dataset_.labels.end() || !lab->second.defined()) {
    return absl::InvalidArgumentError(absl::StrCat("dataset ", options_.dataset,
                                                   " has no labels for node type '", target, "'"));
  }
  if (split == dataset_.splits.end()) {
    return absl::InvalidArgumentError(absl::StrCat("split: dataset ", options_.dataset,
                                                   " has no split for node type '", target, "'"));
  }
  labels_ = lab->second;
  num_classes_ = dataset_.num_classes.count(target) ? dataset_.num_classes.at(target) : 0;
  const int64_t n_target = space_.type_size(space_.TypeIndex(target));
  absl::Status status;
  train_rows_ = ToRows(split->second.train, n_target, "train", &status);
  FG_RETURN_IF_ERROR(status);
  valid_rows_ = ToRows(split->second.valid, n_target, "valid", &status);
  FG_RETURN_IF_ERROR(status);
  test_rows_ = ToRows(split->second.test, n_target, "test", &status);
  FG_RETURN_IF_ERROR(status);
  if (train_rows_.numel() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("split: empty training split in ", options_.dataset));
  }

  spec_.dataset = &dataset_;
  spec_.vertices = &space_;
  spec_.target_type = target;
  spec_.num_classes = num_classes_;
  spec_.hidden = options_.hidden;
  spec_.layers = options_.layers;
  spec_.dropout = options_.dropout;
  spec_.heads = options_.heads;
  spec_.seed = options_.seed;
  spec_.options = options_.model_options;
  model_ = info->factory();
  FG_RETURN_IF_ERROR(Annotate(model_->Build(spec_), absl::StrCat("model ", options_.model)));

  nn::OptimizerKind kind = options_.optimizer == "sgd"    ? nn::OptimizerKind::kSgd
                           : options_.optimizer == "adamw" ? nn::OptimizerKind::kAdamW
                                                           : nn::OptimizerKind::kAdam;
  optimizer_ = std::make_unique<nn::Optimizer>(
      kind, model_->parameters(),
      nn::OptimizerOptions{.lr = options_.lr, .weight_decay = options_.weight_decay});
  executor_.SetOverride(options_.exec_override);

  all_vertices_ = Tensor::Empty({space_.size()}, DType::kInt64);
  for (int64_t v = 0; v < space_.size(); ++v) all_vertices_.i64()[v] = v;
  layer_graphs_.resize(model_->num_layers());
  for (int i = 0; i < model_->num_layers(); ++i) {
    std::vector<int32_t> roots = model_->Roots(i, spec_);
    Tensor ids = Tensor::Empty({static_cast<int64_t>(roots.size())}, DType::kInt64);
    for (size_t k = 0; k < roots.size(); ++k) ids.i64()[k] = roots[k];
    layer_roots_.push_back(ids);
  }
  // Labels indexed by the last layer's root order.
  const Tensor& last_roots = layer_roots_.back();
  const int64_t base = space_.type_offset(space_.TypeIndex(target));
  Tensor root_labels = Tensor::Empty({last_roots.numel()}, DType::kInt64);
  for (int64_t k = 0; k < last_roots.numel(); ++k) {
    root_labels.i64()[k] = labels_.i64()[last_roots.i64()[k] - base];
  }
  labels_ = root_labels;
  return EnsureHdgs(0);
}

absl::Status Trainer::EnsureHdgs(int epoch) {
  ScopedTimer timer(&stats_.selection);
  std::map<std::string, int> by_key;
  for (int i = 0; i < model_->num_layers(); ++i) {
    nau::Layer& layer = model_->layer(i);
    LayerGraph& lg = layer_graphs_[i];
    const bool sampled = layer.SampledSelection();
    const int period = std::max(1, layer.SelectionPeriod());
    const bool stale = lg.hdg == nullptr || (sampled && epoch / period != lg.built_epoch / period);
    if (!stale) continue;
    const std::string key = layer.SelectionKey();
    auto it = key.empty() || sampled ? by_key.end() : by_key.find(key);
    const bool same_roots =
        it != by_key.end() && layer_roots_[it->second].numel() == layer_roots_[i].numel();
    if (same_roots) {
      lg.hdg = layer_graphs_[it->second].hdg;
    } else {
      std::vector<int32_t> roots(layer_roots_[i].numel());
      for (size_t k = 0; k < roots.size(); ++k) roots[k] = static_cast<int32_t>(layer_roots_[i].i64()[k]);
      nau::SelectContext ctx(&dataset_, &space_, options_.seed, sampled ? epoch / period : 0, i);
      hdg::HdgBuilder builder(layer.Schema(), space_.size());
      FG_ASSIGN_OR_RETURN(hdg::Hdg built,
                          builder.Build(roots, [&](int32_t root, hdg::NeighborWriter& out) {
                            layer.SelectNeighbors(ctx, root, out);
                          }));
      lg.hdg = std::make_shared<const hdg::Hdg>(std::move(built));
      if (!key.empty() && !sampled) by_key[key] = i;
    }
    lg.plan = executor_.Plan(*lg.hdg, layer);
    lg.built_epoch = epoch;
  }
  return absl::OkStatus();
}

ag::Var Trainer::Forward(int epoch, bool training) {
  nau::LayerContext ctx;
  ctx.training = training;
  ctx.epoch = epoch;
  ctx.seed = options_.seed;
  ctx.stats = training ? &stats_ : nullptr;
  ag::Var h = model_->Input(ctx, spec_);
  Tensor table = all_vertices_;
  for (int i = 0; i < model_->num_layers(); ++i) {
    ctx.layer = i;
    ctx.table_global_ids = table;
    ctx.root_global_ids = layer_roots_[i];
    h = executor_.Run(*layer_graphs_[i].hdg, layer_graphs_[i].plan, model_->layer(i), h, ctx);
    table = layer_roots_[i];
  }
  return h;
}

double Trainer::TrainStep(int epoch) {
  FG_CHECK(EnsureHdgs(epoch).ok()) << "HDG rebuild failed";
  ag::Var logits = Forward(epoch, true);
  ag::Var loss;
  {
    ScopedTimer t(&stats_.loss);
    loss = ag::NllLoss(ag::LogSoftmax(logits), labels_, train_rows_);
  }
  {
    ScopedTimer t(&stats_.backward);
    loss.Backward();
  }
  ScopedTimer t(&stats_.optimizer);
  optimizer_->Step();
  optimizer_->ZeroGrad();
  return loss.value().Item();
}

double Trainer::EvalLoss() {
  ag::NoGradGuard guard;
  ag::Var logits = Forward(0, false);
  return ag::NllLoss(ag::LogSoftmax(logits), labels_, train_rows_).value().Item();
}

Trainer::Metrics Trainer::Evaluate() {
  ScopedTimer timer(&stats_.evaluation);
  ag::NoGradGuard guard;
  Tensor logits = Forward(0, false).value();
  auto truth = [&](const Tensor& rows) {
    std::vector<int64_t> t(rows.numel());
    for (int64_t k = 0; k < rows.numel(); ++k) t[k] = labels_.i64()[rows.i32()[k]];
    return t;
  };
  Metrics m{};
  m.train_acc = nn::Accuracy(nn::ArgmaxRows(logits, train_rows_), truth(train_rows_));
  m.valid_acc = valid_rows_.numel()
                    ? nn::Accuracy(nn::ArgmaxRows(logits, valid_rows_), truth(valid_rows_))
                    : 0.0;
  auto test_pred = nn::ArgmaxRows(logits, test_rows_);
  auto test_truth = truth(test_rows_);
  m.test_acc = nn::Accuracy(test_pred, test_truth);
  m.test_macro_f1 = nn::MacroF1(test_pred, test_truth, num_classes_);
  m.test_micro_f1 = nn::MicroF1(test_pred, test_truth, num_classes_);
  return m;
}

std::string Trainer::Explain() const {
  std::string out;
  for (int i = 0; i < static_cast<int>(layer_graphs_.size()); ++i) {
    const auto& lg = layer_graphs_[i];
    absl::StrAppend(&out, "layer ", i, ": ", lg.hdg->schema().ToString(), "\n  HDG ",
                    lg.hdg->Stats().ToString(), "\n", nau::HybridExecutor::Explain(lg.plan));
  }
  return out;
}

int64_t Trainer::HdgBytes() const {
  int64_t bytes = 0;
  std::vector<const hdg::Hdg*> seen;
  for (const auto& lg : layer_graphs_) {
    if (std::find(seen.begin(), seen.end(), lg.hdg.get()) != seen.end()) continue;
    seen.push_back(lg.hdg.get());
    bytes += static_cast<int64_t>(lg.hdg->Bytes());
  }
  return bytes;
}

absl::StatusOr<TrainResult> Trainer::Run() {
  TrainResult r;
  r.model = options_.model;
  r.dataset = options_.dataset;
  r.seed = options_.seed;
  r.num_vertices = space_.size();
  r.num_edges = dataset_.graph.TotalEdges();
  int start = 0;
  double best_valid = -1;
  int since_best = 0;
  if (options_.resume) {
    FG_RETURN_IF_ERROR(LoadCheckpoint(&r, &start));
    best_valid = r.valid_accuracy;
    since_best = start - r.best_epoch;
  }
  if (options_.explain) std::fprintf(stderr, "%s", Explain().c_str());
  int ran = 0;
  for (int epoch = start; epoch < options_.epochs; ++epoch) {
    Stopwatch watch;
    const double loss = TrainStep(epoch);
    const double seconds = watch.Seconds();
    if (!std::isfinite(loss)) {
      return absl::InternalError(absl::StrCat("training diverged: loss ", loss, " at epoch ",
                                              epoch + 1, " (try a smaller --lr)"));
    }
    r.losses.push_back(loss);
    r.epoch_seconds.push_back(seconds);
    const Metrics m = Evaluate();
    if (m.valid_acc > best_valid) {
      best_valid = m.valid_acc;
      r.best_epoch = epoch + 1;
      r.valid_accuracy = m.valid_acc;
      r.test_accuracy = m.test_acc;
      r.test_macro_f1 = m.test_macro_f1;
      r.test_micro_f1 = m.test_micro_f1;
      since_best = 0;
    } else {
      ++since_best;
    }
    r.train_accuracy = m.train_acc;
    r.epochs = epoch + 1;
    if (!options_.quiet) {
      std::fprintf(stderr,
                   "epoch %4d  loss %.4f  train %.4f  valid %.4f  test %.4f  %.3fs\n", epoch + 1,
                   loss, m.train_acc, m.valid_acc, m.test_acc, seconds);
    }
    if (options_.checkpoint_every > 0 && (epoch + 1) % options_.checkpoint_every == 0) {
      FG_RETURN_IF_ERROR(SaveCheckpoint(epoch + 1, r));
    }
    ++ran;
    if (options_.patience > 0 && since_best >= options_.patience) {
      if (!options_.quiet) {
        std::fprintf(stderr, "early stop: no validation improvement for %d epochs\n",
                     options_.patience);
      }
      break;
    }
    if (options_.stop_after > 0 && ran >= options_.stop_after) break;
  }
  r.final_loss = r.losses.empty() ? 0 : r.losses.back();
  // The median skips the first epoch (warm-up) when there are enough epochs.
  std::vector<double> steady(r.epoch_seconds.begin() + (r.epoch_seconds.size() > 5 ? 1 : 0),
                             r.epoch_seconds.end());
  r.epoch_seconds_median = Median(steady);
  r.hdg_bytes = HdgBytes();
  r.peak_rss_bytes = PeakRssBytes();
  r.stats = stats_;
  if (!options_.quiet) {
    std::fprintf(stderr,
                 "summary: model %s  dataset %s  epochs %d  best epoch %d  valid %.4f  test %.4f  "
                 "macro-F1 %.4f  median epoch %.4fs  HDG %.1f MiB  peak RSS %.1f MiB\n"
                 "stages: %s\n",
                 r.model.c_str(), r.dataset.c_str(), r.epochs, r.best_epoch, r.valid_accuracy,
                 r.test_accuracy, r.test_macro_f1, r.epoch_seconds_median, r.hdg_bytes / 1048576.0,
                 r.peak_rss_bytes / 1048576.0, r.stats.Shares().c_str());
  }
  return r;
}

absl::Status Trainer::SaveCheckpoint(int epochs_done, const TrainResult& state) const {
  flexgraph::Checkpoint ck;
  ck.set_model(options_.model);
  ck.set_dataset(options_.dataset);
  ck.set_seed(options_.seed);
  ck.set_epoch(epochs_done);
  const auto& params = optimizer_->params();
  for (size_t i = 0; i < params.size(); ++i) {
    ToProto(params[i].var.value(), params[i].name, ck.add_params());
    ToProto(const_cast<nn::Optimizer&>(*optimizer_).first_moments()[i], params[i].name,
            ck.add_first_moments());
    const Tensor& v = const_cast<nn::Optimizer&>(*optimizer_).second_moments()[i];
    if (v.defined()) ToProto(v, params[i].name, ck.add_second_moments());
  }
  ck.set_optimizer_steps(optimizer_->step_count());
  ck.set_best_valid_accuracy(state.valid_accuracy);
  ck.set_best_epoch(state.best_epoch);
  ck.set_best_test_accuracy(state.test_accuracy);
  ck.set_best_test_macro_f1(state.test_macro_f1);
  ck.set_best_test_micro_f1(state.test_micro_f1);
  for (double l : state.losses) ck.add_losses(l);
  for (double s : state.epoch_seconds) ck.add_epoch_seconds(s);
  std::error_code ec;
  std::filesystem::create_directories(options_.checkpoint_dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat(options_.checkpoint_dir, ": cannot create checkpoint directory: ", ec.message()));
  }
  const std::string path = absl::StrCat(options_.checkpoint_dir, "/checkpoint.pb");
  return WriteFileAtomically(path, ck.SerializeAsString());
}

absl::Status Trainer::LoadCheckpoint(TrainResult* state, int* epochs_done) {
  const std::string path = absl::StrCat(options_.checkpoint_dir, "/checkpoint.pb");
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": no checkpoint to resume from"));
  std::stringstream bytes;
  bytes << in.rdbuf();
  flexgraph::Checkpoint ck;
  if (!ck.ParseFromString(bytes.str())) {
    return absl::DataLossError(absl::StrCat(path, ": corrupt checkpoint"));
  }
  if (ck.model() != options_.model || ck.seed() != options_.seed) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": checkpoint is for model ", ck.model(), " seed ", ck.seed(),
                     ", this run is model ", options_.model, " seed ", options_.seed));
  }
  auto& params = optimizer_->params();
  if (ck.params_size() != static_cast<int>(params.size())) {
    return absl::DataLossError(absl::StrCat(path, ": ", ck.params_size(), " parameters, model has ",
                                            params.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    FG_RETURN_IF_ERROR(FromProto(ck.params(i), &params[i].var.mutable_value(), path));
    FG_RETURN_IF_ERROR(FromProto(ck.first_moments(i), &optimizer_->first_moments()[i], path));
    if (i < static_cast<size_t>(ck.second_moments_size())) {
      FG_RETURN_IF_ERROR(FromProto(ck.second_moments(i), &optimizer_->second_moments()[i], path));
    }
  }
  optimizer_->set_step_count(ck.optimizer_steps());
  *epochs_done = ck.epoch();
  state->valid_accuracy = ck.best_valid_accuracy();
  state->best_epoch = ck.best_epoch();
  state->test_accuracy = ck.best_test_accuracy();
  state->test_macro_f1 = ck.best_test_macro_f1();
  state->test_micro_f1 = ck.best_test_micro_f1();
  state->losses.assign(ck.losses().begin(), ck.losses().end());
  state->epoch_seconds.assign(ck.epoch_seconds().begin(), ck.epoch_seconds().end());
  state->epochs = ck.epoch();
  if (!options_.quiet) std::fprintf(stderr, "resumed from %s at epoch %d\n", path.c_str(), ck.epoch());
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return absl::InternalError(absl::StrCat(tmp, ": cannot open for writing"));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (!out) return absl::InternalError(absl::StrCat(tmp, ": write failed"));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return absl::InternalError(absl::StrCat(path, ": rename failed: ", ec.message()));
  return absl::OkStatus();
}

std::string SummaryJson(const TrainResult& r) {
  auto num = [](double v) { return std::isfinite(v) ? absl::StrFormat("%.10g", v) : std::string("null"); };
  auto list = [&](const std::vector<double>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) absl::StrAppend(&s, i ? ", " : "", num(v[i]));
    return s + "]";
  };
  auto str = [](const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  };
  std::string j = "{\n";
  absl::StrAppend(&j, "  \"model\": ", str(r.model), ",\n");
  absl::StrAppend(&j, "  \"dataset\": ", str(r.dataset), ",\n");
  absl::StrAppend(&j, "  \"epochs\": ", r.epochs, ",\n");
  absl::StrAppend(&j, "  \"seed\": ", r.seed, ",\n");
  absl::StrAppend(&j, "  \"best_epoch\": ", r.best_epoch, ",\n");
  absl::StrAppend(&j, "  \"final_loss\": ", num(r.final_loss), ",\n");
  absl::StrAppend(&j, "  \"train_accuracy\": ", num(r.train_accuracy), ",\n");
  absl::StrAppend(&j, "  \"valid_accuracy\": ", num(r.valid_accuracy), ",\n");
  absl::StrAppend(&j, "  \"test_accuracy\": ", num(r.test_accuracy), ",\n");
  absl::StrAppend(&j, "  \"test_macro_f1\": ", num(r.test_macro_f1), ",\n");
  absl::StrAppend(&j, "  \"test_micro_f1\": ", num(r.test_micro_f1), ",\n");
  absl::StrAppend(&j, "  \"epoch_seconds_median\": ", num(r.epoch_seconds_median), ",\n");
  absl::StrAppend(&j, "  \"hdg_bytes\": ", r.hdg_bytes, ",\n");
  absl::StrAppend(&j, "  \"peak_rss_bytes\": ", r.peak_rss_bytes, ",\n");
  absl::StrAppend(&j, "  \"num_vertices\": ", r.num_vertices, ",\n");
  absl::StrAppend(&j, "  \"num_edges\": ", r.num_edges, ",\n");
  const auto& s = r.stats;
  absl::StrAppend(&j, "  \"stage_seconds\": {\"selection\": ", num(s.selection),
                  ", \"message\": ", num(s.message), ", \"aggregation\": ", num(s.aggregation),
                  ", \"update\": ", num(s.update), ", \"loss\": ", num(s.loss),
                  ", \"backward\": ", num(s.backward), ", \"optimizer\": ", num(s.optimizer),
                  ", \"evaluation\": ", num(s.evaluation), "},\n");
  for (const auto& [k, v] : r.extra) absl::StrAppend(&j, "  ", str(k), ": ", num(v), ",\n");
  absl::StrAppend(&j, "  \"losses\": ", list(r.losses), ",\n");
  absl::StrAppend(&j, "  \"epoch_seconds\": ", list(r.epoch_seconds), "\n}\n");
  return j;
}

}  // namespace fg::runtime
