// `flexgraph train`: single-process training (see runtime/trainer.h).
#include <dlfcn.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "flexgraph/base/status.h"
#include "nau/model.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/train_flags.h"
#include "runtime/checkpoint.h"
#include "runtime/trainer.h"

namespace fg::cli {

void AddTrainFlags(FlagSet* f) {
  f->AddString("config", "", "protobuf text file with a flexgraph.RunConfig");
  f->AddString("dataset", "", absl::StrCat("dataset directory (OGB raw layout) or generator spec (default ",
                                           runtime::kDefaultDataset, ")"));
  f->AddString("split", "", "split name under split/ (default: the only one)");
  f->AddString("target_type", "", "node type to classify (heterogeneous datasets)");
  f->AddString("model", "", absl::StrCat("registered model name (default ", runtime::kDefaultModel, ")"));
  f->AddString("epochs", "", "training epochs (model default)");
  f->AddString("lr", "", "learning rate (model default)");
  f->AddString("hidden", "", "hidden width (model default)");
  f->AddString("layers", "", "number of layers (model default)");
  f->AddString("dropout", "", "dropout probability (model default)");
  f->AddString("weight_decay", "", "weight decay (model default)");
  f->AddString("heads", "", "attention heads (models with attention)");
  f->AddString("seed", "", "random seed (default 0)");
  f->AddString("patience", "", "early stopping patience in epochs (0: off)");
  f->AddString("optimizer", "", "adam, adamw or sgd (model default)");
  f->AddString("model_opt", "", "model options as key=value[,key=value...]");
  f->AddString("normalize_features", "", "row-normalise input features: true or false");
  f->AddString("threads", "", "worker threads (default: all cores)");
  f->AddString("device", "", "cpu or cuda");
  f->AddString("cache_dir", "", "binary dataset cache directory");
  f->AddString("checkpoint_every", "", "write a checkpoint every k epochs");
  f->AddString("checkpoint_dir", "", "checkpoint directory");
  f->AddBool("resume", false, "resume from the checkpoint in --checkpoint_dir");
  f->AddString("stop_after", "", "stop after this many epochs in this process (for testing resume)");
  f->AddBool("explain", false, "print each layer's HDG and the executor's plan");
  f->AddString("exec", "", "force built-in aggregations to dense, sparse or graph");
  f->AddString("udf_library", "", "shared library registering additional models");
  f->AddString("summary_json", "", "write the run summary as JSON to this file");
  f->AddString("init_weights", "", "directory of initial parameter values, one <parameter name>.npy each");
  f->AddBool("epoch0_loss", false, "report the loss of the initial parameters (no dropout) first");
  f->AddString("export_hdg", "",
               "write each layer's HDG levels as .npy arrays into this directory (single process)");
  f->AddBool("quiet", false, "no progress output");
}

absl::StatusOr<runtime::TrainOptions> TrainOptionsFromFlags(const FlagSet& f) {
  if (f.IsSet("udf_library")) {
    const std::string lib = f.Get("udf_library");
    if (dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("--udf_library: cannot load ", lib, ": ", dlerror()));
    }
  }
  flexgraph::RunConfig config;
  if (f.IsSet("config")) {
    FG_ASSIGN_OR_RETURN(config, runtime::ReadConfigFile(f.Get("config")));
  }
  auto* ds = config.mutable_dataset();
  auto* model = config.mutable_model();
  auto* train = config.mutable_train();
  if (f.IsSet("model")) model->set_name(f.Get("model"));
  if (f.IsSet("dataset")) ds->set_path(f.Get("dataset"));
  if (f.IsSet("split")) ds->set_split(f.Get("split"));
  if (f.IsSet("target_type")) ds->set_target_type(f.Get("target_type"));
  if (f.IsSet("cache_dir")) ds->set_cache_dir(f.Get("cache_dir"));
  if (f.IsSet("normalize_features")) {
    const std::string v = f.Get("normalize_features");
    if (v != "true" && v != "false") {
      return absl::InvalidArgumentError("--normalize_features takes true or false");
    }
    ds->set_normalize_features(v == "true");
  }
  auto int_flag = [&](const char* name, auto setter) -> absl::Status {
    if (!f.IsSet(name)) return absl::OkStatus();
    FG_ASSIGN_OR_RETURN(int64_t v, f.GetInt(name));
    setter(v);
    return absl::OkStatus();
  };
  auto num_flag = [&](const char* name, auto setter) -> absl::Status {
    if (!f.IsSet(name)) return absl::OkStatus();
    FG_ASSIGN_OR_RETURN(double v, f.GetDouble(name));
    setter(v);
    return absl::OkStatus();
  };
  FG_RETURN_IF_ERROR(int_flag("epochs", [&](int64_t v) { train->set_epochs(static_cast<int>(v)); }));
  FG_RETURN_IF_ERROR(int_flag("hidden", [&](int64_t v) { model->set_hidden(static_cast<int>(v)); }));
  FG_RETURN_IF_ERROR(int_flag("layers", [&](int64_t v) { model->set_layers(static_cast<int>(v)); }));
  FG_RETURN_IF_ERROR(int_flag("heads", [&](int64_t v) { model->set_heads(static_cast<int>(v)); }));
  FG_RETURN_IF_ERROR(int_flag("seed", [&](int64_t v) { train->set_seed(static_cast<uint64_t>(v)); }));
  FG_RETURN_IF_ERROR(int_flag("patience", [&](int64_t v) { train->set_patience(static_cast<int>(v)); }));
  FG_RETURN_IF_ERROR(int_flag("threads", [&](int64_t v) { train->set_threads(static_cast<int>(v)); }));
  FG_RETURN_IF_ERROR(int_flag("checkpoint_every",
                              [&](int64_t v) { train->set_checkpoint_every(static_cast<int>(v)); }));
  FG_RETURN_IF_ERROR(num_flag("lr", [&](double v) { train->set_lr(static_cast<float>(v)); }));
  FG_RETURN_IF_ERROR(num_flag("dropout", [&](double v) { model->set_dropout(static_cast<float>(v)); }));
  FG_RETURN_IF_ERROR(
      num_flag("weight_decay", [&](double v) { train->set_weight_decay(static_cast<float>(v)); }));
  if (f.IsSet("optimizer")) train->set_optimizer(f.Get("optimizer"));
  if (f.IsSet("device")) train->set_device(f.Get("device"));
  if (f.IsSet("checkpoint_dir")) train->set_checkpoint_dir(f.Get("checkpoint_dir"));
  if (f.IsSet("model_opt")) {
    for (absl::string_view kv : absl::StrSplit(f.Get("model_opt"), ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
      if (p.first.empty() || kv.find('=') == absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("--model_opt: expected key=value, got '", std::string(kv), "'"));
      }
      (*model->mutable_options())[p.first] = p.second;
    }
  }
  FG_ASSIGN_OR_RETURN(runtime::TrainOptions o, runtime::ResolveOptions(config));
  o.resume = f.GetBool("resume");
  o.explain = f.GetBool("explain");
  o.quiet = f.GetBool("quiet");
  o.summary_json = f.Get("summary_json");
  o.init_weights = f.Get("init_weights");
  o.epoch0_loss = f.GetBool("epoch0_loss");
  o.export_hdg = f.Get("export_hdg");
  if (f.IsSet("stop_after")) {
    FG_ASSIGN_OR_RETURN(int64_t v, f.GetInt("stop_after"));
    o.stop_after = static_cast<int>(v);
  }
  if (f.IsSet("exec")) {
    nau::Strategy s;
    if (!nau::ParseStrategy(f.Get("exec"), &s)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--exec: expected dense, sparse or graph, got '", f.Get("exec"), "'"));
    }
    o.exec_override = s;
  }
  FG_RETURN_IF_ERROR(runtime::ValidateOptions(o));
  return o;
}

namespace {

int Train(const std::vector<std::string>& args) {
  FlagSet flags("train", "Trains a registered model on one machine (full batch).");
  AddTrainFlags(&flags);
  if (auto s = flags.Parse(args); !s.ok()) {
    std::fprintf(stderr, "flexgraph train: %s\n\n%s", std::string(s.message()).c_str(),
                 flags.Usage().c_str());
    return 2;
  }
  if (flags.help_requested()) {
    std::printf("%s\nmodels:", flags.Usage().c_str());
    for (const auto& name : nau::ModelRegistry::Get().Names()) {
      std::printf("\n  %-10s %s", name.c_str(), nau::ModelRegistry::Get().Find(name)->description.c_str());
    }
    std::printf("\n");
    return 0;
  }
  auto options = TrainOptionsFromFlags(flags);
  if (!options.ok()) {
    std::fprintf(stderr, "flexgraph train: %s\n", std::string(options.status().message()).c_str());
    return 2;
  }
  auto trainer = runtime::Trainer::Create(*options);
  if (!trainer.ok()) {
    std::fprintf(stderr, "flexgraph train: %s\n", std::string(trainer.status().message()).c_str());
    return 1;
  }
  auto result = (*trainer)->Run();
  if (!result.ok()) {
    std::fprintf(stderr, "flexgraph train: %s\n", std::string(result.status().message()).c_str());
    return 1;
  }
  std::printf("%s on %s: test accuracy %.4f, macro-F1 %.4f (best valid %.4f at epoch %d), final loss %.4f\n",
              result->model.c_str(), result->dataset.c_str(), result->test_accuracy,
              result->test_macro_f1, result->valid_accuracy, result->best_epoch, result->final_loss);
  if (!options->summary_json.empty()) {
    if (auto s = runtime::WriteFileAtomically(options->summary_json, runtime::SummaryJson(*result));
        !s.ok()) {
      std::fprintf(stderr, "flexgraph train: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  return 0;
}

CommandRegistrar train_command("train", "train a model on one machine", Train);

}  // namespace
}  // namespace fg::cli
