#include "runtime/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>


#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/tracking.h"
#include "flexgraph/tensor/device_alloc.h"
#include "partition/partitioned_dataset.h"
#include "runtime/grid/grid_spec.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/dataset_view.h"
#include "runtime/tasks/graph_tasks.h"
#include "runtime/tasks/node_classification.h"
#include "runtime/train/saved_model.h"

namespace fg::runtime {
namespace {

// The registered models that predict links.
std::vector<std::string> LinkModels() {
  std::vector<std::string> names;
  for (const std::string& name : nau::ModelRegistry::Get().Names()) {
    if (nau::ModelRegistry::Get().Find(name)->predicts_links) names.push_back(name);
  }
  return names;
}

}  // namespace

Trainer::Trainer(flexgraph::RunConfig config, DistributedSetup dist)
    : config_(std::move(config)), exec_(std::move(dist)) {}
Trainer::~Trainer() = default;

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const flexgraph::RunConfig& config,
                                                         DistributedSetup dist) {
  FG_ASSIGN_OR_RETURN(flexgraph::RunConfig resolved, ResolveConfig(config));
  if (absl::StartsWith(resolved.train().device(), "cuda")) {
    if (!CudaAvailable()) {
      return absl::FailedPreconditionError(
          absl::StrCat("device: ", resolved.train().device(), " requested but unusable: ",
                       CudaUnavailableReason()));
    }
    // "cuda" gives worker r GPU r modulo the device count (several workers may share one).
    const int rank = dist.comm != nullptr ? dist.comm->rank() : 0;
    const int index = resolved.train().device() == "cuda" ? rank % std::max(1, CudaDeviceCount())
                                                          : CudaDeviceIndex(resolved.train().device());
    if (std::string error = UseCudaDevice(index); !error.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("device: ", error));
    }
    SetDeviceMemoryLimit(static_cast<size_t>(resolved.train().device_memory_gib() * 1073741824.0));
  }
  std::unique_ptr<Trainer> t(new Trainer(std::move(resolved), std::move(dist)));
  FG_RETURN_IF_ERROR(t->Init());
  return t;
}

absl::Status Trainer::Init() {
  if (config_.train().threads() > 0) SetNumThreads(config_.train().threads());
  device_ = DeviceOf(config_.train().device());
  exec_.SetDevice(device_);
  Progress::SetQuiet(config_.output().quiet());
  FG_RETURN_IF_ERROR(LoadData());
  FG_RETURN_IF_ERROR(BuildModel());
  FG_RETURN_IF_ERROR(StartGrid());
  const bool graph_batches = dataset_.IsGraphSet() && dynamic_cast<GraphSetTask*>(task_.get()) != nullptr;
  FG_RETURN_IF_ERROR(graph_batches ? InitGraphBatches() : InitOneGraph());
  return LimitEpochsBySteps();
}

absl::Status Trainer::LimitEpochsBySteps() {
  flexgraph::TrainConfig& tc = *config_.mutable_train();
  if (tc.max_steps() <= 0) return absl::OkStatus();
  const int64_t batches = graph_batches_ ? graph_batches_->batches_per_epoch()
                          : minibatch_   ? minibatch_->batches_per_epoch()
                                         : 1;
  if (batches <= 0) return absl::OkStatus();  // nothing to train: the epochs stay
  const int64_t epochs = (tc.max_steps() + batches - 1) / batches;
  if (epochs >= tc.epochs()) return absl::OkStatus();
  if (tc.warmup_epochs() >= epochs) {
    return absl::InvalidArgumentError(absl::StrCat("max_steps: ", tc.max_steps(), " steps of ", batches,
                                                   " batches per epoch make ", epochs,
                                                   " epochs, not more than warmup_epochs (", tc.warmup_epochs(), ")"));
  }
  if (!config_.output().quiet() && exec_.rank() == 0) {
    std::fprintf(stderr, "training %lld epochs (--max_steps %d at %lld batches per epoch; --epochs %d)\n",
                 static_cast<long long>(epochs), tc.max_steps(), static_cast<long long>(batches), tc.epochs());
  }
  tc.set_epochs(static_cast<int>(epochs));
  return absl::OkStatus();
}

absl::Status Trainer::InitOneGraph() {
  if (config_.train().batch_sharding() != "graphs") {
    return absl::InvalidArgumentError(absl::StrCat("batch_sharding: ", config_.train().batch_sharding(),
                                                   " shares batches of a set of graphs; ", config_.dataset().path(),
                                                   " is one graph"));
  }
  PlaceRows();
  if (device_ != Device::kCpu) {  // the inputs' features: placed once, read by the models there
    for (auto& [type, feat] : dataset_.features) feat = feat.To(device_);
  }
  FG_RETURN_IF_ERROR(EnsureHdgs(0));
  ReleaseFreedMemory();  // loading's and planning's temporaries: not resident through training
  if (config_.train().batch_size() > 0) {
    if (dataset_.part && distributed()) {  // sampling reads the other parts' rows from them
      const auto features = dataset_.features.find(space_.type_name(0));
      if (space_.num_types() != 1 || task_->kind() != nau::Task::kNodeClassification ||
          features == dataset_.features.end() || !features->second.defined()) {
        return absl::UnimplementedError(absl::StrCat(
            "batch_size: mini-batches over a partitioned dataset take node classification on a "
            "homogeneous graph with features; ", config_.dataset().path(), " holds ",
            task_->Describe(), " over ", space_.num_types(), " node types (train it on its "
            "source dataset, or on the parts with batch_size 0)"));
      }
      // Sampling reads them on the host, to send them to the peers that sample them.
      owned_rows_ = OwnedRows{.begin = dataset_.part->begin(0), .features = features->second.To(Device::kCpu),
                              .keys = table_.keys};
    }
    FG_ASSIGN_OR_RETURN(minibatch_,
                        MiniBatchTraining::Create(config_, {.model = model_.get(), .spec = &spec_,
                                                            .task = task_.get(),
                                                            .optimizer = optimizer_.get(),
                                                            .stats = &stats_, .exec = &exec_,
                                                            .owned = owned_rows_ ? &*owned_rows_ : nullptr,
                                                            .device = device_}));
    if (!config_.output().quiet()) std::fprintf(stderr, "%s\n", minibatch_->Describe().c_str());
  }
  if (all_rows()) {  // the task pairs rows of different workers: it sees all of them
    FG_RETURN_IF_ERROR(exec_.PlanAllRows(layer_roots_.back(), 0));
    task_->SetShare(exec_.rank(), exec_.setup().comm->size());
    return task_->SetOutputRows(exec_.all_keys());
  }
  return task_->SetOutputRows(layer_roots_.back().ids);
}

absl::Status Trainer::InitGraphBatches() {
  const flexgraph::TrainConfig& tc = config_.train();
  if (!config_.output().export_hdg().empty()) {
    return absl::UnimplementedError(absl::StrCat("export_hdg: ", config_.dataset().path(),
                                                 " is a set of graphs; each batch selects its own HDGs"));
  }
  FG_ASSIGN_OR_RETURN(const partition::Method method, partition::ParseMethod(config_.partition().method()));
  const bool reflect = tc.augment() == "reflect" || (tc.augment() == "auto" && graph::HasTrackingLayout(dataset_));
  FG_ASSIGN_OR_RETURN(graph_batches_,
                      GraphBatchTraining::Create({.model = model_.get(), .spec = &spec_,
                                                  .task = static_cast<GraphSetTask*>(task_.get()),
                                                  .optimizer = optimizer_.get(), .exec = &exec_,
                                                  .stats = &stats_, .device = device_},
                                                 tc.batch_size(), tc.seed(), tc.epochs(),
                                                 tc.batch_sharding() == "vertices", method, reflect));
  if (!config_.output().quiet() && exec_.rank() == 0) {
    std::fprintf(stderr, "%s on batches of %s graphs (%lld batches per epoch%s%s)\n",
                 task_->Describe().c_str(),
                 tc.batch_size() > 0 ? std::to_string(tc.batch_size()).c_str() : "all training",
                 static_cast<long long>(graph_batches_->batches_per_epoch()),
                 reflect ? ", each event or its mirror image in z, phi or both" : "",
                 !distributed()                         ? ""
                 : tc.batch_sharding() == "vertices" ? ", each batch's vertices partitioned over the workers"
                                                     : ", data-parallel over the workers");
  }
  return absl::OkStatus();
}

absl::Status Trainer::LoadData() {
  const flexgraph::DatasetConfig& data = config_.dataset();
  if (partition::IsPartitionedDataset(data.path())) {
    // One part per worker, or over a process grid one per row block, read by the block's workers.
    const int world = distributed() ? exec_.setup().comm->size() : 1;
    int parts = world, index = exec_.rank();
    std::string needs = absl::StrCat("as many workers, this run has ", world);
    if (distributed() && exec_.setup().grid.active()) {
      FG_ASSIGN_OR_RETURN(const grid::GridSpec g, grid::ResolveGridSpec(exec_.setup().grid, world));
      parts = grid::GridRowBlocks(g, world);
      index = exec_.rank() / (world / parts);
      needs = absl::StrCat("one per row block of --exchange ", grid::DescribeGrid(g), " over ", world, " workers (",
                           parts, ")");
    }
    FG_ASSIGN_OR_RETURN(const flexgraph::PartitionedDataset meta, partition::ReadPartitionMeta(data.path()));
    if (meta.part_files_size() != parts) {
      return absl::InvalidArgumentError(absl::StrCat(data.path(), ": a partitioned dataset of ",
                                                     meta.part_files_size(), " parts needs ", needs));
    }
    Progress progress(absl::StrCat("load part ", index, " of ", data.path()), 0);
    FG_ASSIGN_OR_RETURN(dataset_, partition::LoadPart(data.path(), index));
  } else {
    Progress progress(absl::StrCat("load ", data.path()), 0);
    graph::LoadOptions load;
    load.split = data.split();
    load.cache_dir = data.cache_dir();
    FG_ASSIGN_OR_RETURN(dataset_, graph::LoadDataset(data.path(), load));
  }
  FG_RETURN_IF_ERROR(dataset_.graph.ToInt32Indices());
  FG_ASSIGN_OR_RETURN(dataset_, ApplyView(std::move(dataset_), data));
  for (const auto& [type, feat] : dataset_.features) {
    if (!feat.defined()) continue;
    const float* f = feat.f32();
    const int64_t bad = std::find_if(f, f + feat.numel(), [](float v) { return !std::isfinite(v); }) - f;
    if (bad < feat.numel()) {
      return absl::InvalidArgumentError(absl::StrCat(
          data.path(), ": features of node type '", type, "' hold ", f[bad], " at row ",
          bad / feat.row_width(), ", column ", bad % feat.row_width()));
    }
  }
  space_ = nau::VertexSpace(dataset_.graph);
  if (dataset_.part) {
    exec_.SetOwnership(Ownership(space_, dataset_.part->bounds));
  } else if (distributed() && !exec_.setup().grid.active() && exec_.ownership().num_vertices() != space_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("partition plan covers ",
                                                   exec_.ownership().num_vertices(),
                                                   " vertices, dataset has ", space_.size()));
  }
  FG_ASSIGN_OR_RETURN(task_, MakeTask(&dataset_, config_));
  target_ = data.target_type().empty() ? task_->target_type() : data.target_type();
  if (space_.TypeIndex(target_) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("target_type: node type '", target_, "' not in dataset ", data.path()));
  }
  if (!dataset_.part && !config_.output().quiet()) {  // a part sees only its own labels
    if (std::string w = SkippedClassesWarning(dataset_, target_); !w.empty()) {
      std::fprintf(stderr, "warning: %s in %s\n", w.c_str(), data.path().c_str());
    }
  }
  if (data.normalize_features()) {
    for (const std::string& type : graph::NormalizeFeatureRows(&dataset_)) {
      if (!config_.output().quiet()) {
        std::fprintf(stderr, "features of '%s' have negative values: not row-normalised\n",
                     type.c_str());
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Trainer::BuildModel() {
  const flexgraph::DatasetConfig& data = config_.dataset();
  const flexgraph::ModelConfig& mc = config_.model();
  const flexgraph::TrainConfig& tc = config_.train();
  spec_ = ModelSpecFrom(config_);
  spec_.dataset = &dataset_;
  spec_.vertices = &space_;
  spec_.target_type = target_;
  spec_.num_classes = task_->num_classes();
  const nau::ModelInfo* info = nau::ModelRegistry::Get().Find(mc.name());  // resolved: registered
  if (task_->kind() == nau::Task::kLinkPrediction && !info->predicts_links) {
    return absl::InvalidArgumentError(absl::StrCat("model ", mc.name(),
                                                   " does not predict links; dataset ",
                                                   data.path(), " has no node labels, only ",
                                                   task_->Describe(), " (models that do: ",
                                                   absl::StrJoin(LinkModels(), ", "), ")"));
  }
  model_ = info->factory();
  FG_RETURN_IF_ERROR(Annotate(model_->Build(spec_), absl::StrCat("model ", mc.name())));
  if (!config_.output().quiet() && exec_.rank() == 0) std::fprintf(stderr, "%s", model_->Explain().c_str());
  if (task_->kind() == nau::Task::kLinkPrediction && tc.select_on() == "macro_f1") {
    return absl::InvalidArgumentError(
        "select_on macro_f1: link prediction selects on validation ROC-AUC; leave select_on at "
        "accuracy");
  }
  if (task_->kind() == nau::Task::kLinkPrediction && model_->task() != task_->kind()) {
    return absl::InvalidArgumentError(absl::StrCat("model ", mc.name(),
                                                   " does not predict links; dataset ",
                                                   data.path(), " has no node labels, only ",
                                                   task_->Describe()));
  }
  if (!tc.init_weights().empty()) {
    FG_RETURN_IF_ERROR(LoadInitialParameters(tc.init_weights(), model_->parameters()));
  }
  for (const nn::NamedParameter& p : model_->parameters()) {  // placed once; trained there
    p.var.mutable_value() = p.var.value().To(device_);
  }
  nn::OptimizerKind kind = tc.optimizer() == "sgd"    ? nn::OptimizerKind::kSgd
                           : tc.optimizer() == "adamw" ? nn::OptimizerKind::kAdamW
                                                       : nn::OptimizerKind::kAdam;
  optimizer_ = std::make_unique<nn::Optimizer>(
      kind, model_->parameters(),
      nn::OptimizerOptions{.lr = tc.lr(), .weight_decay = tc.weight_decay()});
  if (nau::Strategy s; nau::ParseStrategy(tc.exec(), &s)) exec_.SetOverride(s);
  for (int i = 0; dataset_.part && i < model_->num_layers(); ++i) {
    const nau::Layer& layer = model_->layer(i);
    if (!layer.LocalSelection() && layer.Walks() == nullptr && layer.Instances() == nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          "model ", mc.name(), ": layer ", i, "'s neighbour selection reads topology beyond its "
          "roots' edges and declares neither random walks nor metapath instances, which a part "
          "of a partitioned dataset cannot run (nau/layer.h: LocalSelection, Walks, Instances); "
          "train ", mc.name(), " on the unpartitioned dataset"));
    }
  }
  return absl::OkStatus();
}

void Trainer::PlaceRows() {
  // This worker's rows: every vertex in a single process, the owned ones in a distributed run.
  const graph::PartInfo* part = dataset_.part ? &*dataset_.part : nullptr;
  auto rows_of = [&](std::vector<int64_t> ids) {
    DistributedExecutor::Rows rows{Tensor::FromVector(ids), Tensor()};
    if (part != nullptr) {  // randomness keys on the source dataset's ids
      for (int64_t& v : ids) {
        const int t = space_.TypeOf(v);
        const Tensor& source = part->original_ids.at(space_.type_name(t));
        v = space_.type_offset(t) + source.i64()[v - space_.type_offset(t) - part->begin(t)];
      }
      rows.keys = Tensor::FromVector(ids);
    } else {
      rows.keys = rows.ids;
    }
    return rows;
  };
  std::vector<int64_t> table;
  for (int t = 0; t < space_.num_types(); ++t) {
    const int64_t lo = part ? part->begin(t) : 0, hi = part ? part->end(t) : space_.type_size(t);
    for (int64_t v = space_.type_offset(t) + lo; v < space_.type_offset(t) + hi; ++v) {
      if (exec_.Holds(v)) table.push_back(v);
    }
  }
  table_ = rows_of(table);
  layer_graphs_.resize(model_->num_layers());
  // Keys of the global row lists (every vertex for the table), equal on every worker.
  auto key_of = [](const std::vector<int32_t>& global) {
    uint64_t h = MixKey(global.size());
    for (int32_t v : global) h = MixKey(h, static_cast<uint64_t>(v));
    return h;
  };
  std::vector<int32_t> every(space_.size());
  for (int64_t v = 0; v < space_.size(); ++v) every[v] = static_cast<int32_t>(v);
  table_key_ = key_of(every);
  for (int i = 0; i < model_->num_layers(); ++i) {
    const std::vector<int32_t> global = model_->Roots(i, spec_);
    roots_key_.push_back(key_of(global));
    std::vector<int64_t> ids;  // the last layer's output rows are those the task reads
    const bool last = i == model_->num_layers() - 1;
    for (int32_t r : global) {
      if (last ? exec_.Owns(r) : exec_.Holds(r)) ids.push_back(r);
    }
    layer_roots_.push_back(rows_of(std::move(ids)));
  }
  // Homogeneous features of a dataset loaded whole: keep only this worker's rows (the default
  // Model::Input uses them). A part holds only its own rows already (over a 3D grid, a worker holds
  // a slice of its block's); mini-batches read any row.
  const int64_t first = part != nullptr ? part->begin(0) : 0;
  const int64_t rows = part != nullptr ? part->end(0) - first : space_.size();
  if (distributed() && space_.num_types() == 1 && static_cast<int64_t>(table.size()) < rows &&
      config_.train().batch_size() == 0) {
    Tensor idx = Tensor::Empty({table_.ids.numel()}, DType::kInt32);
    for (int64_t k = 0; k < idx.numel(); ++k) idx.i32()[k] = static_cast<int32_t>(table[k] - first);
    for (auto& [type, feat] : dataset_.features) {
      if (feat.defined()) feat = ops::GatherRows(feat, idx);
    }
  }
}

flexgraph::SavedModel Trainer::Describe() const {
  flexgraph::SavedModel m;
  m.set_format_version(kSavedModelVersion);
  flexgraph::RunConfig* c = m.mutable_config();
  *c = SharedSettings(config_);
  for (auto clear : {&flexgraph::TrainConfig::clear_epochs, &flexgraph::TrainConfig::clear_checkpoint_every,
                     &flexgraph::TrainConfig::clear_checkpoint_dir, &flexgraph::TrainConfig::clear_resume,
                     &flexgraph::TrainConfig::clear_stop_after, &flexgraph::TrainConfig::clear_init_weights}) {
    (c->mutable_train()->*clear)();
  }
  for (int t = 0; t < space_.num_types(); ++t) {
    auto* type = m.add_node_types();
    type->set_name(space_.type_name(t));
    type->set_vertices(space_.type_size(t));
    type->set_feature_dim(spec_.FeatureDim(space_.type_name(t)));
  }
  m.set_target_type(target_);
  m.set_num_classes(task_->num_classes());
  for (const nn::NamedParameter& p : model_->parameters()) {
    auto* param = m.add_params();
    param->set_name(p.name);
    for (int64_t d : p.var.value().shape()) param->add_shape(d);
  }
  return m;
}

std::string Trainer::Explain() const {
  std::string out;
  for (int i = 0; i < static_cast<int>(layer_graphs_.size()); ++i) {
    const hdg::Hdg& h = *layer_graphs_[i].hdg;
    absl::StrAppend(&out, "layer ", i, ": ", h.schema().ToString(), "\n  HDG ",
                    h.Stats().ToString(), "\n", exec_.Explain(i));
  }
  return out;
}

}  // namespace fg::runtime
