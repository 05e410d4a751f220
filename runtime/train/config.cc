#include "runtime/train/config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/status.h"
#include "flexgraph/nn/optim.h"
#include "partition/partitioner.h"
#include "proto/text_format.h"
#include "runtime/comm/communicator.h"
#include "runtime/tasks/link_prediction.h"
#include "runtime/train/minibatch.h"
#include "sampling/sampler.h"

namespace fg::runtime {
namespace {


// What every run starts from; models override parts with their registered defaults.
constexpr char kBaseDefaults[] = R"pb(
  dataset { split: "" target_type: "" normalize_features: true cache_dir: "" homogeneous_view: "" }
  model { hidden: 16 layers: 2 dropout: 0.5 heads: 1 }
  train {
    epochs: 200 lr: 0.01 weight_decay: 5e-4 seed: 0 patience: 0 optimizer: "adam"
    checkpoint_every: 0 checkpoint_dir: "" threads: 0 device: "cpu" resume: false stop_after: 0
    init_weights: "" exec: "" select_on: "accuracy"
    batch_size: 0 sampler: "neighbor" fanouts: "" layer_size: 512 bulk: 0 eval_every: 1
    device_memory_gib: 0 sample_on: "" feature_cache_mb: -1 sampler_opt: "" batch_sharding: "graphs"
    lr_schedule: "constant" warmup_epochs: 0 augment: "auto" max_steps: 0
  }
  partition { parts: 1 method: "metis" }
  output { explain: false summary_json: "" quiet: false epoch0_loss: false export_hdg: "" tensorboard: "" }
)pb";

constexpr int kMaxThreads = 4096;
constexpr int kMaxBulk = 4096;
constexpr int kMaxLayerSize = 1 << 24;  // LADIES draws per batch and layer

}  // namespace

absl::StatusOr<flexgraph::RunConfig> ParseConfigText(const std::string& text, const std::string& where) {
  flexgraph::RunConfig config;
  FG_RETURN_IF_ERROR(proto::ParseTextProto(text, where, &config));
  return config;
}

absl::StatusOr<flexgraph::RunConfig> ReadConfigFile(const std::string& path) {
  if (std::filesystem::is_directory(path)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a config file"));
  }
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open config file"));
  std::stringstream text;
  text << in.rdbuf();
  return ParseConfigText(text.str(), path);
}

nau::OptionList ModelOptions(const nau::ModelInfo& info) {
  nau::OptionList options = info.options;
  if (info.predicts_links) {
    for (const nau::OptionSpec& o : LinkPredictionTask::Options()) {
      if (nau::FindOption(options, o.name) == nullptr) options.push_back(o);
    }
  }
  return options;
}

absl::StatusOr<flexgraph::RunConfig> ResolveConfig(const flexgraph::RunConfig& user) {
  auto base = ParseConfigText(kBaseDefaults, "built-in defaults");
  FG_CHECK(base.ok()) << base.status();
  flexgraph::RunConfig c = *base;
  c.mutable_dataset()->set_path(kDefaultDataset);
  c.mutable_model()->set_name(user.model().has_name() ? user.model().name() : kDefaultModel);
  const nau::ModelInfo* info = nau::ModelRegistry::Get().Find(c.model().name());
  if (info == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("model: unknown model '", c.model().name(), "' (registered: ",
                     absl::StrJoin(nau::ModelRegistry::Get().Names(), ", "), ")"));
  }
  FG_ASSIGN_OR_RETURN(flexgraph::RunConfig model_defaults,
                      ParseConfigText(info->defaults, absl::StrCat("defaults of model ", info->name)));
  c.MergeFrom(model_defaults);
  c.MergeFrom(user);
  const std::map<std::string, std::string> options(c.model().options().begin(),
                                                   c.model().options().end());
  FG_RETURN_IF_ERROR(
      nau::CheckOptions(ModelOptions(*info), options, absl::StrCat("model ", info->name)));
  FG_RETURN_IF_ERROR(ValidateConfig(c));
  return c;
}

flexgraph::RunConfig SharedSettings(const flexgraph::RunConfig& resolved) {
  flexgraph::RunConfig s = resolved;
  s.mutable_train()->clear_threads();
  s.mutable_dataset()->clear_cache_dir();
  s.clear_partition();
  s.clear_output();
  return s;
}

std::string ConfigDifferences(const flexgraph::RunConfig& a, const flexgraph::RunConfig& b) {
  google::protobuf::util::MessageDifferencer diff;
  std::string report;
  diff.ReportDifferencesToString(&report);
  diff.Compare(a, b);
  std::vector<std::string> lines = absl::StrSplit(report, '\n', absl::SkipEmpty());
  return absl::StrJoin(lines, "; ");
}

nau::ModelSpec ModelSpecFrom(const flexgraph::RunConfig& config) {
  const flexgraph::ModelConfig& m = config.model();
  const nau::ModelInfo* info = nau::ModelRegistry::Get().Find(m.name());
  FG_CHECK(info != nullptr) << "ModelSpecFrom: unresolved model '" << m.name() << "'";
  nau::ModelSpec spec;
  spec.hidden = m.hidden();
  spec.layers = m.layers();
  spec.dropout = m.dropout();
  spec.heads = m.heads();
  spec.seed = config.train().seed();
  spec.options = nau::OptionValues(ModelOptions(*info), {m.options().begin(), m.options().end()});
  return spec;
}

partition::WorkloadOptions WorkloadOptionsFrom(const flexgraph::RunConfig& config) {
  partition::WorkloadOptions o;
  o.model = config.model().name();
  o.spec = ModelSpecFrom(config);
  o.spec.target_type = config.dataset().target_type();
  return o;
}

absl::Status ValidateConfig(const flexgraph::RunConfig& c) {
  auto bad = [](const std::string& field, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
  };
  const auto& m = c.model();
  const auto& t = c.train();
  if (t.epochs() < 1) return bad("epochs", absl::StrCat("must be positive, got ", t.epochs()));
  // Epoch and layer numbers are fields of the message tags (communicator.h).
  if (t.epochs() > kMaxTagEpoch + 1) {
    return bad("epochs", absl::StrCat("must be at most ", kMaxTagEpoch + 1, ", got ", t.epochs()));
  }
  if (!(t.lr() > 0)) return bad("lr", absl::StrCat("must be positive, got ", t.lr()));
  if (t.weight_decay() < 0) return bad("weight_decay", "must not be negative");
  if (m.hidden() < 1) return bad("hidden", absl::StrCat("must be positive, got ", m.hidden()));
  if (m.layers() < 1) return bad("layers", absl::StrCat("must be positive, got ", m.layers()));
  if (m.layers() > kMaxTagLayer + 1) {
    return bad("layers", absl::StrCat("must be at most ", kMaxTagLayer + 1, ", got ", m.layers()));
  }
  if (m.heads() < 1) return bad("heads", absl::StrCat("must be positive, got ", m.heads()));
  if (!(m.dropout() >= 0 && m.dropout() < 1)) {
    return bad("dropout", absl::StrCat("must be in [0, 1), got ", m.dropout()));
  }
  if (t.patience() < 0) return bad("patience", "must not be negative");
  if (nn::LrSchedule schedule; !nn::ParseLrSchedule(t.lr_schedule(), &schedule)) {
    return bad("lr_schedule", absl::StrCat("expected constant or cosine, got '", t.lr_schedule(), "'"));
  }
  if (t.warmup_epochs() < 0 || t.warmup_epochs() >= t.epochs()) {
    return bad("warmup_epochs", absl::StrCat("must lie in [0, epochs = ", t.epochs(), "), got ", t.warmup_epochs()));
  }
  if (t.augment() != "auto" && t.augment() != "none" && t.augment() != "reflect") {
    return bad("augment", absl::StrCat("expected auto, none or reflect, got '", t.augment(), "'"));
  }
  if (t.eval_every() < 1) return bad("eval_every", absl::StrCat("must be positive, got ", t.eval_every()));
  if (t.threads() < 0 || t.threads() > kMaxThreads) {
    return bad("threads", absl::StrCat("must lie in [0, ", kMaxThreads, "], got ", t.threads()));
  }
  if (t.stop_after() < 0) return bad("stop_after", "must not be negative");
  if (t.max_steps() < 0) return bad("max_steps", absl::StrCat("must not be negative, got ", t.max_steps()));
  if (t.checkpoint_every() < 0) return bad("checkpoint_every", "must not be negative");
  if (t.checkpoint_every() > 0 && t.checkpoint_dir().empty()) {
    return bad("checkpoint_dir", "is required with checkpoint_every");
  }
  if (t.resume() && t.checkpoint_dir().empty()) return bad("checkpoint_dir", "is required with resume");
  if (t.optimizer() != "adam" && t.optimizer() != "adamw" && t.optimizer() != "sgd") {
    return bad("optimizer", absl::StrCat("unknown optimizer '", t.optimizer(), "' (adam, adamw or sgd)"));
  }
  if (t.select_on() != "accuracy" && t.select_on() != "macro_f1") {
    return bad("select_on", absl::StrCat("unknown metric '", t.select_on(), "' (accuracy or macro_f1)"));
  }
  if (int index; t.device() != "cpu" && t.device() != "cuda" &&
                 !(absl::StartsWith(t.device(), "cuda:") &&
                   absl::SimpleAtoi(t.device().substr(5), &index) && index >= 0)) {
    return bad("device", absl::StrCat("unknown device '", t.device(), "' (cpu, cuda or cuda:N)"));
  }
  if (!(t.device_memory_gib() >= 0)) {
    return bad("device_memory_gib", absl::StrCat("must be 0 or more, got ", t.device_memory_gib()));
  }
  nau::Strategy s;
  if (!t.exec().empty() && !nau::ParseStrategy(t.exec(), &s)) {
    return bad("exec", absl::StrCat("expected dense, sparse or graph, got '", t.exec(), "'"));
  }
  if (t.batch_sharding() != "graphs" && t.batch_sharding() != "vertices") {
    return bad("batch_sharding", absl::StrCat("expected graphs or vertices, got '", t.batch_sharding(), "'"));
  }
  if (t.batch_size() < 0) return bad("batch_size", absl::StrCat("must not be negative, got ", t.batch_size()));
  if (sampling::SamplerKind kind; !sampling::ParseSamplerKind(t.sampler(), &kind)) {
    return bad("sampler", absl::StrCat("unknown sampler '", t.sampler(), "' (neighbor, ladies or shadow)"));
  }
  if (t.layer_size() < 1 || t.layer_size() > kMaxLayerSize) {
    return bad("layer_size", absl::StrCat("must lie in [1, ", kMaxLayerSize, "], got ", t.layer_size()));
  }
  if (t.bulk() < 0 || t.bulk() > kMaxBulk) {
    return bad("bulk", absl::StrCat("must lie in [0, ", kMaxBulk, "] (0: automatic), got ", t.bulk()));
  }
  if (t.feature_cache_mb() < -1) {
    return bad("feature_cache_mb", absl::StrCat("must be -1 (automatic), 0 (none) or positive, got ",
                                                t.feature_cache_mb()));
  }
  if (t.sample_on() != "" && t.sample_on() != "host" && t.sample_on() != "device") {
    return bad("sample_on", absl::StrCat("expected host or device, got '", t.sample_on(), "'"));
  }
  if (t.sample_on() == "device" && DeviceOf(t.device()) != Device::kCuda) {
    return bad("sample_on", absl::StrCat("device samples for training on a CUDA device (--device cuda), got --device ",
                                         t.device()));
  }
  if (t.batch_size() > 0) {
    sampling::SamplerOptions options;
    sampling::ParseSamplerKind(t.sampler(), &options.kind);
    FG_RETURN_IF_ERROR(ParseFanouts(t.fanouts(), m.layers(), options.kind).status());
    FG_RETURN_IF_ERROR(sampling::ParseSamplerOptions(t.sampler_opt(), &options));
  }
  if (c.dataset().path().empty()) return bad("dataset", "is empty");
  // The partition section (flexgraph partition --config) is checked as the flags are.
  if (c.partition().has_parts() && c.partition().parts() < 1) {
    return bad("partition.parts", absl::StrCat("must be at least 1, got ", c.partition().parts()));
  }
  if (auto method = partition::ParseMethod(c.partition().method());
      c.partition().has_method() && !method.ok()) {
    return bad("partition.method", std::string(method.status().message()));
  }
  return absl::OkStatus();
}

Device DeviceOf(const std::string& device) {
  return absl::StartsWith(device, "cuda") ? Device::kCuda : Device::kCpu;
}

int CudaDeviceIndex(const std::string& device) {
  int index = 0;
  if (absl::StartsWith(device, "cuda:") && absl::SimpleAtoi(device.substr(5), &index)) return index;
  return 0;
}

}  // namespace fg::runtime
