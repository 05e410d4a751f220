#include "runtime/trainer.h"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/npy.h"
#include "flexgraph/nn/metrics.h"
#include "flexgraph/tensor/device_alloc.h"
#include "proto/checkpoint.pb.h"
#include "runtime/collectives.h"
#include "runtime/link_prediction.h"

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


// Fault injection for tests of failure handling: FG_FAULT_KILL="rank:epoch[:marker]" kills this
// worker (SIGKILL) as it starts that epoch; with a marker path, only when the marker does not
// exist yet (it is created first), so a restarted run proceeds.
void MaybeInjectFault(int rank, int epoch) {
  const char* spec = std::getenv("FG_FAULT_KILL");
  if (spec == nullptr) return;
  int r = -1, e = -1;
  char marker[4096] = "";
  if (std::sscanf(spec, "%d:%d:%4095s", &r, &e, marker) < 2 || r != rank || e != epoch) return;
  if (marker[0] != '\0') {
    if (std::filesystem::exists(marker)) return;
    std::ofstream(marker) << "killed\n";
  }
  std::fprintf(stderr, "fault injection: killing worker %d at epoch %d\n", rank, epoch);
  std::fflush(stderr);
  raise(SIGKILL);
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

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainOptions& options,
                                                         DistributedSetup dist) {
  FG_RETURN_IF_ERROR(ValidateOptions(options));
  if (options.device == "cuda") {
    if (!CudaAvailable()) {
      return absl::FailedPreconditionError(
          absl::StrCat("device: cuda requested but unusable: ", CudaUnavailableReason()));
    }
    // The ops run on CUDA (tests/cuda); placing the trainer's tensors on the GPU is not wired yet,
    // and training silently on the CPU instead would mislead.
    return absl::UnimplementedError(
        "device: cuda is not supported by the trainer yet (its tensors stay on the CPU); use "
        "--device cpu");
  }
  std::unique_ptr<Trainer> t(new Trainer(options));
  t->dist_ = std::move(dist);
  t->xctx_.comm = t->dist_.comm;
  t->xctx_.pipeline = t->dist_.pipeline;
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
  FG_RETURN_IF_ERROR(dataset_.graph.ToInt32Indices());
  space_ = nau::VertexSpace(dataset_.graph);
  if (distributed() && static_cast<int64_t>(dist_.owners.size()) != space_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("partition plan covers ", dist_.owners.size(),
                                                   " vertices, dataset has ", space_.size()));
  }
  // Node classification needs labels; datasets with only an edge split train link prediction.
  std::string target;
  if (dataset_.labels.empty() && !dataset_.edge_splits.empty()) {
    if (distributed()) {
      return absl::UnimplementedError("link prediction runs single-process only");
    }
    FG_ASSIGN_OR_RETURN(link_, LinkPredictionTask::Create(&dataset_, options_));
    target = options_.target_type.empty() ? link_->dst_type() : options_.target_type;
  } else {
    target = options_.target_type.empty() ? dataset_.LabeledType() : options_.target_type;
  }
  if (space_.TypeIndex(target) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("target_type: node type '", target, "' not in dataset ", options_.dataset));
  }
  if (options_.normalize_features) {
    // Row normalisation (Kipf & Welling) is for non-negative features such as bag-of-words.
    for (auto& [type, feat] : dataset_.features) {
      if (!feat.defined()) continue;
      const float* f = feat.f32();
      const bool non_negative = std::all_of(f, f + feat.numel(), [](float v) { return v >= 0; });
      if (non_negative) {
        feat = RowNormalize(feat);
      } else if (!options_.quiet) {
        std::fprintf(stderr, "features of '%s' have negative values: not row-normalised\n",
                     type.c_str());
      }
    }
  }
  num_classes_ = dataset_.num_classes.count(target) ? dataset_.num_classes.at(target) : 0;

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
  if (link_ && model_->task() != nau::Task::kLinkPrediction) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model ", options_.model, " does not predict links; dataset ", options_.dataset,
        " has no node labels, only the edge split of ", link_->relation()));
  }
  if (!options_.init_weights.empty()) {
    FG_RETURN_IF_ERROR(
        LoadInitialParameters(options_.init_weights, options_.model, model_->parameters()));
  }
  nn::OptimizerKind kind = options_.optimizer == "sgd"    ? nn::OptimizerKind::kSgd
                           : options_.optimizer == "adamw" ? nn::OptimizerKind::kAdamW
                                                           : nn::OptimizerKind::kAdam;
  optimizer_ = std::make_unique<nn::Optimizer>(
      kind, model_->parameters(),
      nn::OptimizerOptions{.lr = options_.lr, .weight_decay = options_.weight_decay});
  executor_.SetOverride(options_.exec_override);

  // This worker's rows: every vertex in a single process, the owned ones in a distributed run.
  const int me = distributed() ? dist_.comm->rank() : 0;
  auto mine = [&](int64_t v) { return !distributed() || dist_.owners[v] == me; };
  std::vector<int64_t> table;
  for (int64_t v = 0; v < space_.size(); ++v) {
    if (mine(v)) table.push_back(v);
  }
  table_ids_ = Tensor::FromVector(table);
  layer_graphs_.resize(model_->num_layers());
  for (int i = 0; i < model_->num_layers(); ++i) {
    std::vector<int64_t> ids;
    for (int32_t r : model_->Roots(i, spec_)) {
      if (mine(r)) ids.push_back(r);
    }
    layer_roots_.push_back(Tensor::FromVector(ids));
  }
  if (link_) {
    FG_RETURN_IF_ERROR(link_->SetOutputRows(layer_roots_.back()));
  } else {
    FG_RETURN_IF_ERROR(InitNodeClassification(target));
  }
  // Homogeneous features: keep only this worker's rows (the default Model::Input uses them).
  if (distributed() && space_.num_types() == 1) {
    for (auto& [type, feat] : dataset_.features) {
      if (feat.defined()) {
        Tensor idx = Tensor::Empty({table_ids_.numel()}, DType::kInt32);
        for (int64_t k = 0; k < idx.numel(); ++k) idx.i32()[k] = static_cast<int32_t>(table[k]);
        feat = ops::GatherRows(feat, idx);
      }
    }
  }
  return EnsureHdgs(0);
}

absl::Status Trainer::InitNodeClassification(const std::string& target) {
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
  const int64_t base = space_.type_offset(space_.TypeIndex(target));
  const int64_t n_target = space_.type_size(space_.TypeIndex(target));
  // Labels and split rows indexed by the last layer's (owned) roots.
  const Tensor& roots = layer_roots_.back();
  labels_ = Tensor::Empty({roots.numel()}, DType::kInt64);
  for (int64_t k = 0; k < roots.numel(); ++k) {
    labels_.i64()[k] = lab->second.i64()[roots.i64()[k] - base];
  }
  auto rows_of = [&](const Tensor& ids, const char* what, Tensor* out) -> absl::Status {
    std::vector<int32_t> rows;
    const int64_t n = ids.defined() ? ids.numel() : 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t v = ids.i64()[k];
      if (v < 0 || v >= n_target) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " split: node id ", v, " outside [0, ", n_target, ")"));
      }
      const int64_t g = base + v;
      const int64_t* it = std::lower_bound(roots.i64(), roots.i64() + roots.numel(), g);
      if (it != roots.i64() + roots.numel() && *it == g) {
        rows.push_back(static_cast<int32_t>(it - roots.i64()));
      }
    }
    *out = Tensor::FromVector(rows);
    return absl::OkStatus();
  };
  FG_RETURN_IF_ERROR(rows_of(split->second.train, "train", &train_rows_));
  FG_RETURN_IF_ERROR(rows_of(split->second.valid, "valid", &valid_rows_));
  FG_RETURN_IF_ERROR(rows_of(split->second.test, "test", &test_rows_));
  global_train_ = split->second.train.defined() ? split->second.train.numel() : 0;
  if (global_train_ == 0) {
    return absl::InvalidArgumentError(absl::StrCat("split: empty training split in ", options_.dataset));
  }
  return absl::OkStatus();
}

absl::Status Trainer::EnsureHdgs(int epoch) {
  ScopedTimer timer(&stats_.selection);
  std::map<std::string, int> by_key;
  if (distributed()) exchanges_.resize(model_->num_layers());
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
    lg.built_epoch = epoch;
    if (!distributed()) {
      lg.plan = executor_.Plan(*lg.hdg, layer);
      continue;
    }
    // The layer's input rows: layer 0 reads the table, layer i > 0 the roots of layer i - 1.
    const Tensor& input_ids = i == 0 ? table_ids_ : layer_roots_[i - 1];
    FG_ASSIGN_OR_RETURN(exchanges_[i],
                        BuildLayerExchange(*dist_.comm, *lg.hdg, layer.LevelAggregator(1),
                                           dist_.owners, input_ids, i, epoch, dist_.exchange));
    lg.plan = executor_.Plan(exchanges_[i].local_hdg ? *exchanges_[i].local_hdg : *lg.hdg, layer);
  }
  return absl::OkStatus();
}

ag::Var Trainer::DistributedLayer(int i, const ag::Var& h, nau::LayerContext& ctx) {
  nau::Layer& layer = model_->layer(i);
  const LayerExchange& ex = exchanges_[i];
  const Tensor& input_ids = i == 0 ? table_ids_ : layer_roots_[i - 1];
  ctx.table_global_ids = input_ids;
  double* t_agg = ctx.stats ? &ctx.stats->aggregation : nullptr;
  ag::Var m, self, agg;
  {
    ScopedTimer t(ctx.stats ? &ctx.stats->message : nullptr);
    m = layer.Message(ctx, h);
    // Roots are owned rows of the input: their positions in input_ids.
    Tensor idx = Tensor::Empty({layer_roots_[i].numel()}, DType::kInt32);
    bool identity = idx.numel() == h.rows();
    for (int64_t k = 0; k < idx.numel(); ++k) {
      const int64_t g = layer_roots_[i].i64()[k];
      idx.i32()[k] = static_cast<int32_t>(
          std::lower_bound(input_ids.i64(), input_ids.i64() + input_ids.numel(), g) - input_ids.i64());
      identity = identity && idx.i32()[k] == k;
    }
    self = identity ? h : ag::GatherRows(h, idx);
  }
  ScopedTimer t(t_agg);
  const int64_t d = m.row_width();
  if (ex.partial_path) {
    ag::Var rows_token = PostRows(xctx_, ex, m);
    ag::Var part_token = PostPartials(xctx_, ex, m);
    ag::Var ghosts;
    if (!xctx_.pipeline) ghosts = ReceiveRows(xctx_, ex, rows_token, d);
    Stopwatch local;
    agg = ag::Spmm(ex.local_owned, m, ops::SpmmReduce::kSum);  // overlaps the transfers
    if (xctx_.pipeline) xctx_.compute_in_flight += local.Seconds();
    if (xctx_.pipeline) ghosts = ReceiveRows(xctx_, ex, rows_token, d);
    agg = ag::Add(agg, ag::Spmm(ex.local_ghost, ghosts, ops::SpmmReduce::kSum));
    agg = ag::Add(agg, ReceivePartials(xctx_, ex, part_token, d));
  } else {
    ag::Var token = PostRows(xctx_, ex, m);
    ag::Var ghosts = ReceiveRows(xctx_, ex, token, d);
    ag::Var table = ConcatRows(m, ghosts);
    Tensor ids = Tensor::Empty({input_ids.numel() + ex.ghost_ids.numel()}, DType::kInt64);
    std::copy(input_ids.i64(), input_ids.i64() + input_ids.numel(), ids.i64());
    std::copy(ex.ghost_ids.i64(), ex.ghost_ids.i64() + ex.ghost_ids.numel(),
              ids.i64() + input_ids.numel());
    ctx.table_global_ids = ids;
    agg = executor_.Aggregate(*ex.local_hdg, layer_graphs_[i].plan, layer, table, self, ctx);
  }
  ScopedTimer tu(ctx.stats ? &ctx.stats->update : nullptr);
  return layer.Update(ctx, self, agg);
}

ag::Var Trainer::Forward(int epoch, bool training) {
  nau::LayerContext ctx;
  ctx.training = training;
  ctx.epoch = epoch;
  ctx.seed = options_.seed;
  ctx.stats = training ? &stats_ : nullptr;
  xctx_.epoch = epoch;
  xctx_.phase = training ? 0 : 1;
  xctx_.reductions = 0;
  if (distributed()) ctx.global_sum = [this](const ag::Var& x) { return AllReduceSum(xctx_, x); };
  ag::Var h = model_->Input(ctx, spec_);
  if (h.rows() != table_ids_.numel()) {  // a model that lays out every vertex: keep our rows
    Tensor idx = Tensor::Empty({table_ids_.numel()}, DType::kInt32);
    for (int64_t k = 0; k < idx.numel(); ++k) idx.i32()[k] = static_cast<int32_t>(table_ids_.i64()[k]);
    h = ag::GatherRows(h, idx);
  }
  // A constant, mostly-zero input (bag-of-words features) also gets a sparse view, built once.
  if (!sparse_checked_ && !h.requires_grad() && h.value().rank() == 2 && h.value().numel() > 0) {
    sparse_checked_ = true;
    const Tensor& x = h.value();
    const int64_t nonzero = std::count_if(x.f32(), x.f32() + x.numel(), [](float v) { return v != 0; });
    if (nonzero < x.numel() / 10) {
      input_sparse_ = std::make_shared<SparseMatrix>(ops::DenseToCsr(x));
      input_sparse_source_ = x.raw();
    }
  }
  for (int i = 0; i < model_->num_layers(); ++i) {
    ctx.layer = i;
    ctx.root_global_ids = layer_roots_[i];
    ctx.input_sparse = i == 0 && h.value().raw() == input_sparse_source_ ? input_sparse_ : nullptr;
    if (distributed()) {
      h = DistributedLayer(i, h, ctx);
    } else {
      ctx.table_global_ids = i == 0 ? table_ids_ : layer_roots_[i - 1];
      h = executor_.Run(*layer_graphs_[i].hdg, layer_graphs_[i].plan, model_->layer(i), h, ctx);
    }
  }
  return h;
}

void Trainer::AllReduceGradients(int epoch) {
  const auto& params = optimizer_->params();
  int64_t total = 0;
  for (const auto& p : params) total += p.var.value().numel();
  std::vector<float> flat(total, 0.0f);
  int64_t at = 0;
  for (const auto& p : params) {
    const Tensor& g = p.var.grad();
    if (g.defined()) std::copy(g.f32(), g.f32() + g.numel(), flat.data() + at);
    at += p.var.value().numel();
  }
  auto s = RingAllReduce(*dist_.comm, flat.data(), total, epoch, 2);
  if (!s.ok() && xctx_.error->ok()) *xctx_.error = s;
  at = 0;
  for (const auto& p : params) {
    Tensor& g = p.var.OwnedGrad();
    std::copy(flat.data() + at, flat.data() + at + g.numel(), g.f32());
    at += g.numel();
  }
}

double Trainer::TrainStep(int epoch) {
  if (auto s = EnsureHdgs(epoch); !s.ok()) {
    if (xctx_.error->ok()) *xctx_.error = s;
    return std::nan("");
  }
  ag::Var logits = Forward(epoch, true);
  ag::Var loss;
  {
    ScopedTimer t(&stats_.loss);
    if (link_) {
      loss = link_->Loss(logits, epoch);
    } else if (train_rows_.numel() == 0) {
      loss = ag::Scale(ag::Sum(logits), 0.0f);  // no local labels: still run the exchanges
    } else {
      loss = ag::NllLoss(ag::LogSoftmax(logits), labels_, train_rows_);
      // Each worker's share of the global mean.
      if (distributed()) loss = ag::Scale(loss, static_cast<float>(train_rows_.numel()) / global_train_);
    }
  }
  {
    ScopedTimer t(&stats_.backward);
    loss.Backward();
    if (distributed()) AllReduceGradients(epoch);
  }
  double value = loss.value().Item();
  if (distributed()) {
    std::vector<double> v = {value};
    auto s = AllReduceDoubles(*dist_.comm, &v, epoch, 1);
    if (!s.ok() && xctx_.error->ok()) *xctx_.error = s;
    value = v[0];
  }
  if (!xctx_.error->ok()) return std::nan("");
  ScopedTimer t(&stats_.optimizer);
  optimizer_->Step();
  optimizer_->ZeroGrad();
  return value;
}

double Trainer::EvalLoss() {
  ag::NoGradGuard guard;
  ag::Var logits = Forward(0, false);
  if (link_) return link_->Loss(logits, 0).value().Item();
  double local = train_rows_.numel() == 0
                     ? 0.0
                     : ag::NllLoss(ag::LogSoftmax(logits), labels_, train_rows_).value().Item() *
                           train_rows_.numel() / global_train_;
  if (!distributed()) return local;
  std::vector<double> v = {local};
  auto s = AllReduceDoubles(*dist_.comm, &v, 0, 5);
  if (!s.ok() && xctx_.error->ok()) *xctx_.error = s;
  return v[0];
}

Trainer::Metrics Trainer::Evaluate(int epoch) {
  ScopedTimer timer(&stats_.evaluation);
  ag::NoGradGuard guard;
  Tensor logits = Forward(epoch, false).value();
  if (link_) {  // model selection on the validation AUC
    const LinkPredictionMetrics lm = link_->Evaluate(logits);
    Metrics m{};
    m.valid_acc = lm.valid_auc;
    m.extra = {{"valid_auc", lm.valid_auc},
               {"test_auc", lm.test_auc},
               {"test_hits_at_10", lm.test_hits_at_10}};
    return m;
  }
  // Counts (correct and total per split; per-class tp, fp, fn on test), summed across workers.
  const int64_t C = num_classes_;
  std::vector<double> counts(6 + 3 * C, 0.0);
  auto tally = [&](const Tensor& rows, int slot, bool per_class) {
    auto pred = nn::ArgmaxRows(logits, rows);
    for (int64_t k = 0; k < rows.numel(); ++k) {
      const int64_t truth = labels_.i64()[rows.i32()[k]];
      counts[slot] += pred[k] == truth;
      counts[slot + 1] += 1;
      if (per_class && truth >= 0 && truth < C && pred[k] >= 0 && pred[k] < C) {
        if (pred[k] == truth) {
          counts[6 + 3 * truth] += 1;
        } else {
          counts[6 + 3 * pred[k] + 1] += 1;
          counts[6 + 3 * truth + 2] += 1;
        }
      }
    }
  };
  tally(train_rows_, 0, false);
  tally(valid_rows_, 2, false);
  tally(test_rows_, 4, true);
  if (distributed()) {
    auto s = AllReduceDoubles(*dist_.comm, &counts, epoch, 3);
    if (!s.ok() && xctx_.error->ok()) *xctx_.error = s;
  }
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  Metrics m{};
  m.train_acc = ratio(counts[0], counts[1]);
  m.valid_acc = ratio(counts[2], counts[3]);
  m.test_acc = ratio(counts[4], counts[5]);
  m.test_micro_f1 = m.test_acc;
  std::vector<int64_t> tp(C), fp(C), fn(C);
  for (int64_t c = 0; c < C; ++c) {
    tp[c] = static_cast<int64_t>(counts[6 + 3 * c]);
    fp[c] = static_cast<int64_t>(counts[6 + 3 * c + 1]);
    fn[c] = static_cast<int64_t>(counts[6 + 3 * c + 2]);
  }
  m.test_macro_f1 = nn::MacroF1FromCounts(tp, fp, fn);
  return m;
}

std::string Trainer::Explain() const {
  std::string out;
  for (int i = 0; i < static_cast<int>(layer_graphs_.size()); ++i) {
    const auto& lg = layer_graphs_[i];
    absl::StrAppend(&out, "layer ", i, ": ", lg.hdg->schema().ToString(), "\n  HDG ",
                    lg.hdg->Stats().ToString(), "\n");
    if (distributed()) {
      const LayerExchange& ex = exchanges_[i];
      std::string partial, rows;
      for (const PeerExchange& pe : ex.peers) {
        if (pe.peer == dist_.comm->rank()) continue;
        absl::StrAppend(pe.partial ? &partial : &rows, pe.partial && !partial.empty() ? "," : "",
                        !pe.partial && !rows.empty() ? "," : "", pe.peer);
      }
      absl::StrAppend(&out, "  level 1: distributed - ",
                      ex.partial_path ? "partial aggregation from workers {" + partial + "}, " : "",
                      "row fetch from workers {", rows, "}; receives ", ex.recv_chosen,
                      " vectors per pass (row fetch only ", ex.recv_rows_only, ", partial only ",
                      ex.recv_partial_only, ", every neighbour row ", ex.recv_naive, ")\n");
    }
    absl::StrAppend(&out, nau::HybridExecutor::Explain(lg.plan));
  }
  return out;
}

absl::Status Trainer::ExportHdgs(const std::string& dir) const {
  if (distributed()) {
    return absl::UnimplementedError("export_hdg: single-process runs only (HDGs index local tables)");
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("export_hdg: cannot create ", dir, ": ", ec.message()));
  for (int i = 0; i < static_cast<int>(layer_graphs_.size()); ++i) {
    const hdg::Hdg& h = *layer_graphs_[i].hdg;
    const std::string prefix = absl::StrCat(dir, "/layer", i, ".");
    // Single process: the vertex table is every vertex in id order, so table rows are vertex ids.
    std::vector<int64_t> roots(h.num_roots());
    for (int64_t r = 0; r < h.num_roots(); ++r) roots[r] = h.roots().i32()[r];
    FG_RETURN_IF_ERROR(graph::io::WriteNpy(prefix + "roots.npy", Tensor::FromVector(roots)));
    for (int k = 1; k <= h.num_levels(); ++k) {
      const hdg::HdgLevel& l = h.level(k);
      const std::string level = absl::StrCat(prefix, "level", k, ".");
      FG_RETURN_IF_ERROR(graph::io::WriteNpy(level + "indptr.npy", l.csr().offsets));
      FG_RETURN_IF_ERROR(graph::io::WriteNpy(level + "indices.npy", l.csr().indices));
      if (l.weights.defined()) {
        FG_RETURN_IF_ERROR(graph::io::WriteNpy(level + "weights.npy", l.weights));
      }
    }
  }
  return absl::OkStatus();
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
  const bool have_checkpoint =
      options_.resume &&
      std::filesystem::exists(absl::StrCat(options_.checkpoint_dir, "/checkpoint.pb"));
  if (options_.resume && !have_checkpoint && !options_.quiet) {
    std::fprintf(stderr, "resume: no checkpoint in %s yet; starting at epoch 1\n",
                 options_.checkpoint_dir.c_str());
  }
  if (have_checkpoint) {
    FG_RETURN_IF_ERROR(LoadCheckpoint(&r, &start));
    best_valid = r.valid_accuracy;
    since_best = start - r.best_epoch;
  }
  if (options_.explain) std::fprintf(stderr, "%s", Explain().c_str());
  if (!options_.export_hdg.empty()) FG_RETURN_IF_ERROR(ExportHdgs(options_.export_hdg));
  if (options_.epoch0_loss && start == 0) {
    r.epoch0_loss = EvalLoss();
    FG_RETURN_IF_ERROR(status());
    if (!options_.quiet) std::fprintf(stderr, "epoch0_loss %.9g\n", r.epoch0_loss);
  }
  int ran = 0;
  for (int epoch = start; epoch < options_.epochs; ++epoch) {
    if (distributed()) MaybeInjectFault(dist_.comm->rank(), epoch + 1);
    Stopwatch watch;
    const double loss = TrainStep(epoch);
    const double seconds = watch.Seconds();
    FG_RETURN_IF_ERROR(status());
    if (!std::isfinite(loss)) {
      return absl::InternalError(absl::StrCat("training diverged: loss ", loss, " at epoch ",
                                              epoch + 1, " (try a smaller --lr)"));
    }
    r.losses.push_back(loss);
    r.epoch_seconds.push_back(seconds);
    const Metrics m = Evaluate(epoch);
    FG_RETURN_IF_ERROR(status());
    if (m.valid_acc > best_valid) {
      best_valid = m.valid_acc;
      r.best_epoch = epoch + 1;
      r.valid_accuracy = m.valid_acc;
      r.test_accuracy = m.test_acc;
      r.test_macro_f1 = m.test_macro_f1;
      r.test_micro_f1 = m.test_micro_f1;
      for (const auto& [key, value] : m.extra) r.extra[key] = value;
      since_best = 0;
    } else {
      ++since_best;
    }
    r.train_accuracy = m.train_acc;
    r.epochs = epoch + 1;
    if (!options_.quiet && link_) {
      std::fprintf(stderr, "epoch %4d  loss %.4f  valid AUC %.4f  test AUC %.4f  hits@10 %.4f  %.3fs\n",
                   epoch + 1, loss, m.extra.at("valid_auc"), m.extra.at("test_auc"),
                   m.extra.at("test_hits_at_10"), seconds);
    } else if (!options_.quiet) {
      std::fprintf(stderr,
                   "epoch %4d  loss %.4f  train %.4f  valid %.4f  test %.4f  %.3fs\n", epoch + 1,
                   loss, m.train_acc, m.valid_acc, m.test_acc, seconds);
    }
    // Parameters are identical on every worker: rank 0 writes the checkpoint for all.
    if (options_.checkpoint_every > 0 && (epoch + 1) % options_.checkpoint_every == 0 &&
        (!distributed() || dist_.comm->rank() == 0)) {
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
  if (distributed()) {
    Communicator& c = *dist_.comm;
    r.world_size = c.size();
    r.bytes_features = c.bytes_sent(TrafficKind::kFeatures);
    r.bytes_partials = c.bytes_sent(TrafficKind::kPartials);
    r.bytes_gradients = c.bytes_sent(TrafficKind::kGradients);
    r.bytes_allreduce = c.bytes_sent(TrafficKind::kAllReduce);
    r.wait_seconds = c.wait_seconds();
    r.compute_seconds = stats_.Total() - r.wait_seconds;
    for (const LayerExchange& ex : exchanges_) {
      r.vectors_chosen += ex.recv_chosen;
      r.vectors_rows_only += ex.recv_rows_only;
      r.vectors_partial_only += ex.recv_partial_only;
      r.vectors_naive += ex.recv_naive;
    }
    r.overlap = xctx_.compute_in_flight /
                std::max(1e-12, xctx_.compute_in_flight + r.wait_seconds);
  }
  if (!options_.quiet) {
    std::fprintf(stderr,
                 "summary: model %s  dataset %s  epochs %d  best epoch %d  valid %.4f  test %.4f  "
                 "macro-F1 %.4f  median epoch %.4fs  HDG %.1f MiB  peak RSS %.1f MiB\n"
                 "stages: %s\n",
                 r.model.c_str(), r.dataset.c_str(), r.epochs, r.best_epoch, r.valid_accuracy,
                 r.test_accuracy, r.test_macro_f1, r.epoch_seconds_median, r.hdg_bytes / 1048576.0,
                 r.peak_rss_bytes / 1048576.0, r.stats.Shares().c_str());
    if (link_ && r.extra.count("test_auc")) {
      std::fprintf(stderr, "link prediction (%s): test AUC %.4f  hits@10 %.4f  at best valid AUC %.4f\n",
                   link_->relation().c_str(), r.extra.at("test_auc"), r.extra.at("test_hits_at_10"),
                   r.extra.at("valid_auc"));
    }
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

std::string BaselineWeightFile(const std::string& model, const std::string& param) {
  // "layer<l>.<rest>" -> "<model>_l<l>_<suffix>.npy" per the baselines' weights/ layout.
  static const struct {
    const char* model;
    const char* rest;
    const char* suffix;
  } kNames[] = {{"gcn", "linear.weight", "weight"}, {"gcn", "bias", "bias"},
                {"sage", "self.weight", "self"},    {"sage", "neigh.weight", "neigh"},
                {"sage", "self.bias", "bias"}};
  if (param.rfind("layer", 0) != 0) return "";
  const size_t dot = param.find('.');
  int layer = 0;
  if (dot == std::string::npos || !absl::SimpleAtoi(param.substr(5, dot - 5), &layer)) return "";
  const std::string rest = param.substr(dot + 1);
  for (const auto& n : kNames) {
    if (model == n.model && rest == n.rest) return absl::StrCat(model, "_l", layer, "_", n.suffix, ".npy");
  }
  return "";
}

absl::Status LoadInitialParameters(const std::string& dir, const std::string& model,
                                   const std::vector<nn::NamedParameter>& params) {
  for (const nn::NamedParameter& p : params) {
    std::string path = graph::io::JoinPath(dir, p.name + ".npy");
    const std::string alias = BaselineWeightFile(model, p.name);
    if (!graph::io::PathExists(path) && !alias.empty()) path = graph::io::JoinPath(dir, alias);
    if (!graph::io::PathExists(path)) {
      return absl::NotFoundError(absl::StrCat(
          "init_weights: no file for parameter ", p.name, " of model ", model, " (looked for ",
          graph::io::JoinPath(dir, p.name + ".npy"),
          alias.empty() ? "" : absl::StrCat(" and ", graph::io::JoinPath(dir, alias)), ")"));
    }
    FG_ASSIGN_OR_RETURN(Tensor t, graph::io::ReadNpy(path));
    Tensor& value = p.var.mutable_value();
    if (t.dtype() != DType::kFloat32 || t.shape() != value.shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": shape [", absl::StrJoin(t.shape(), ","), "]", t.dtype() != DType::kFloat32 ? " (not float32)" : "",
          " does not match parameter ", p.name, " of shape [", absl::StrJoin(value.shape(), ","), "]"));
    }
    if (value.device() == Device::kCpu) {
      std::memcpy(value.f32(), t.f32(), value.nbytes());
    } else {
      value = t.To(value.device());
    }
  }
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
  absl::StrAppend(&j, "  \"epoch0_loss\": ", num(r.epoch0_loss), ",\n");
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
