#include "runtime/config.h"

#include <fstream>
#include <sstream>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nau/model.h"

namespace fg::runtime {
namespace {

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  explicit CollectErrors(std::string file) : file_(std::move(file)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (first_.empty()) first_ = absl::StrCat(file_, ":", line + 1, ":", column + 1, ": ", message);
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  std::string file_, first_;
};

}  // namespace

absl::StatusOr<flexgraph::RunConfig> ReadConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open config file"));
  std::stringstream text;
  text << in.rdbuf();
  flexgraph::RunConfig config;
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors(path);
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text.str(), &config)) {
    return absl::InvalidArgumentError(errors.first().empty() ? absl::StrCat(path, ": parse error")
                                                             : errors.first());
  }
  return config;
}

absl::StatusOr<TrainOptions> ResolveOptions(const flexgraph::RunConfig& c) {
  TrainOptions o;
  if (c.model().has_name()) o.model = c.model().name();
  const nau::ModelInfo* info = nau::ModelRegistry::Get().Find(o.model);
  if (info == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("model: unknown model '", o.model, "' (registered: ",
                     absl::StrJoin(nau::ModelRegistry::Get().Names(), ", "), ")"));
  }
  const nau::ModelDefaults& d = info->defaults;
  o.epochs = d.epochs;
  o.lr = d.lr;
  o.weight_decay = d.weight_decay;
  o.hidden = d.hidden;
  o.layers = d.layers;
  o.dropout = d.dropout;
  o.heads = d.heads;
  o.patience = d.patience;
  o.optimizer = d.optimizer;
  o.normalize_features = d.normalize_features;
  o.model_options = d.options;

  const auto& ds = c.dataset();
  if (ds.has_path()) o.dataset = ds.path();
  if (ds.has_split()) o.split = ds.split();
  if (ds.has_target_type()) o.target_type = ds.target_type();
  if (ds.has_normalize_features()) o.normalize_features = ds.normalize_features();
  if (ds.has_cache_dir()) o.cache_dir = ds.cache_dir();
  const auto& m = c.model();
  if (m.has_hidden()) o.hidden = m.hidden();
  if (m.has_layers()) o.layers = m.layers();
  if (m.has_dropout()) o.dropout = m.dropout();
  if (m.has_heads()) o.heads = m.heads();
  for (const auto& [k, v] : m.options()) o.model_options[k] = v;
  const auto& t = c.train();
  if (t.has_epochs()) o.epochs = t.epochs();
  if (t.has_lr()) o.lr = t.lr();
  if (t.has_weight_decay()) o.weight_decay = t.weight_decay();
  if (t.has_seed()) o.seed = t.seed();
  if (t.has_patience()) o.patience = t.patience();
  if (t.has_optimizer()) o.optimizer = t.optimizer();
  if (t.has_checkpoint_every()) o.checkpoint_every = t.checkpoint_every();
  if (t.has_checkpoint_dir()) o.checkpoint_dir = t.checkpoint_dir();
  if (t.has_threads()) o.threads = t.threads();
  if (t.has_device()) o.device = t.device();
  return o;
}

absl::Status ValidateOptions(const TrainOptions& o) {
  auto bad = [](const std::string& field, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
  };
  if (o.epochs < 1) return bad("epochs", absl::StrCat("must be positive, got ", o.epochs));
  if (!(o.lr > 0)) return bad("lr", absl::StrCat("must be positive, got ", o.lr));
  if (o.weight_decay < 0) return bad("weight_decay", "must not be negative");
  if (o.hidden < 1) return bad("hidden", absl::StrCat("must be positive, got ", o.hidden));
  if (o.layers < 1) return bad("layers", absl::StrCat("must be positive, got ", o.layers));
  if (o.heads < 1) return bad("heads", absl::StrCat("must be positive, got ", o.heads));
  if (!(o.dropout >= 0 && o.dropout < 1)) {
    return bad("dropout", absl::StrCat("must be in [0, 1), got ", o.dropout));
  }
  if (o.patience < 0) return bad("patience", "must not be negative");
  if (o.threads < 0) return bad("threads", "must not be negative");
  if (o.checkpoint_every < 0) return bad("checkpoint_every", "must not be negative");
  if (o.checkpoint_every > 0 && o.checkpoint_dir.empty()) {
    return bad("checkpoint_dir", "is required with checkpoint_every");
  }
  if (o.resume && o.checkpoint_dir.empty()) return bad("checkpoint_dir", "is required with resume");
  if (o.optimizer != "adam" && o.optimizer != "adamw" && o.optimizer != "sgd") {
    return bad("optimizer", absl::StrCat("unknown optimizer '", o.optimizer,
                                         "' (adam, adamw or sgd)"));
  }
  if (o.device != "cpu" && o.device != "cuda") {
    return bad("device", absl::StrCat("unknown device '", o.device, "' (cpu or cuda)"));
  }
  if (o.dataset.empty()) return bad("dataset", "is empty");
  return absl::OkStatus();
}

}  // namespace fg::runtime
