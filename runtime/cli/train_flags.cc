#include "runtime/cli/train_flags.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/file.h"
#include "runtime/train/config.h"
#include "runtime/train/saved_model.h"

namespace fg::cli {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// One flag per RunConfig field it overrides. Switches are boolean flags without a value.
struct ConfigFlag {
  const char* flag;
  const char* field;  // "<section>.<field>" of flexgraph.RunConfig
  const char* help;
  bool is_switch = false;
};

const ConfigFlag kConfigFlags[] = {
    {"dataset", "dataset.path", "dataset directory (OGB raw layout) or generator spec"},
    {"split", "dataset.split", "split name under split/ (default: the only one)"},
    {"target_type", "dataset.target_type", "node type to classify (heterogeneous datasets)"},
    {"homogeneous_view", "dataset.homogeneous_view",
     "train a homogeneous model on target_type joined by these metapaths (\"M-D-M,M-A-M\")"},
    {"normalize_features", "dataset.normalize_features", "row-normalise input features: true or false"},
    {"cache_dir", "dataset.cache_dir", "binary dataset cache directory"},
    {"model", "model.name", "registered model (--model M --help lists its options)"},
    {"hidden", "model.hidden", "hidden width"},
    {"layers", "model.layers", "number of layers"},
    {"dropout", "model.dropout", "dropout probability"},
    {"heads", "model.heads", "attention heads (models with attention)"},
    {"epochs", "train.epochs", "training epochs"},
    {"max_steps", "train.max_steps",
     "most optimizer steps (batches): training stops after the epoch that reaches them (0: no limit)"},
    {"lr", "train.lr", "learning rate"},
    {"lr_schedule", "train.lr_schedule",
     "learning rate per epoch: constant, or cosine (from lr down to lr/100 at the last epoch)"},
    {"warmup_epochs", "train.warmup_epochs", "epochs of linear learning-rate rise before the cosine"},
    {"augment", "train.augment",
     "sets of graphs: reflect (each tracking event or its mirror image in z and phi, drawn per epoch), none, or "
     "auto (reflect on tracking events)"},
    {"weight_decay", "train.weight_decay", "weight decay"},
    {"seed", "train.seed", "random seed"},
    {"patience", "train.patience", "early stopping patience in evaluations (0: off)"},
    {"eval_every", "train.eval_every", "evaluate every k epochs and after the last"},
    {"optimizer", "train.optimizer", "adam, adamw or sgd"},
    {"select_on", "train.select_on", "validation metric for model selection and early stopping: accuracy or macro_f1"},
    {"threads", "train.threads", "worker threads (0: all cores)"},
    {"device", "train.device", "cpu, cuda or cuda:N (whole-graph training; with several workers, cuda gives worker r GPU r modulo the GPU count)"},
    {"device_memory_gib", "train.device_memory_gib", "most device memory this process's tensors may hold, GiB (0: the whole GPU)"},
    {"checkpoint_every", "train.checkpoint_every", "write a checkpoint every k epochs"},
    {"checkpoint_dir", "train.checkpoint_dir", "checkpoint directory"},
    {"resume", "train.resume", "resume from the checkpoint in --checkpoint_dir", true},
    {"stop_after", "train.stop_after", "stop after this many epochs in this process (tests of resume)"},
    {"init_weights", "train.init_weights", "directory of initial parameter values, one <parameter>.npy each"},
    {"exec", "train.exec", "force built-in aggregations to dense, sparse or graph"},
    {"batch_size", "train.batch_size", "mini-batch training: training vertices per batch (0: whole graph); on a set of graphs, graphs per batch (0: all)"},
    {"batch_sharding", "train.batch_sharding",
     "a set of graphs across workers: graphs (each worker takes its share of a batch's graphs) or vertices (each "
     "batch's vertices partitioned over the workers, for graphs too large for one; edge classification)"},
    {"sampler", "train.sampler",
     "mini-batch sampler: neighbor (GraphSAGE node-wise), ladies (layer-wise) or shadow (ShaDow-GNN: every layer on "
     "each seed's induced k-hop subgraph)"},
    {"fanouts", "train.fanouts",
     "neighbor sampler: neighbours per root, one per layer from the seeds down (\"25,10\"); shadow: one per hop from "
     "the seed out, any number of hops (default \"10,5\"; 0: all)"},
    {"sampler_opt", "train.sampler_opt", "sampler options key=value,...: shadow: pool=mean (read out root + mean over "
     "the subgraph) or pool=none (the default)"},
    {"layer_size", "train.layer_size", "ladies sampler: vertices drawn per batch and layer"},
    {"bulk", "train.bulk",
     "batches sampled together, the next bulk while the current one trains (0, the default: 8; with the ladies sampler at "
     "least the thread count, over all workers)"},
    {"sample_on", "train.sample_on",
     "where mini-batches are sampled: host (the default), or device (--device cuda, over a whole graph; not yet validated on "
     "a GPU)"},
    {"feature_cache_mb", "train.feature_cache_mb",
     "mini-batches over parts: MiB of other workers' input rows kept, the most sampled (-1: up to 256, no more than "
     "this worker's own; 0: none), and as many of the neighbourhood rows LADIES leaders fetch (-1: 256)"},
    {"explain", "output.explain", "print each layer's HDG and the executor's plan", true},
    {"summary_json", "output.summary_json", "write the run summary as JSON to this file"},
    {"quiet", "output.quiet", "no progress output", true},
    {"epoch0_loss", "output.epoch0_loss", "report the loss of the initial parameters (no dropout) first", true},
    {"save_model", "output.save_model", "write the trained model (best validation epoch) into this directory, for predict and embed"},
    {"tensorboard", "output.tensorboard",
     "write TensorBoard event files into this directory: per-epoch loss, metrics, learning rate, stage times and "
     "each worker's bytes and waiting (rank 0 writes them)"},
    {"export_hdg", "output.export_hdg", "write each layer's HDG levels as .npy arrays in the source dataset's ids into this directory (runtime/distributed/hdg_export.h; the same files for any worker count)"},
};

// Sets field `path` of `config` from the flag's text; errors name the flag.
absl::Status SetField(flexgraph::RunConfig* config, const std::string& path, const std::string& flag,
                      const std::string& value) {
  const std::pair<std::string, std::string> parts = absl::StrSplit(path, '.');
  const auto* section_field = config->GetDescriptor()->FindFieldByName(parts.first);
  FG_CHECK(section_field != nullptr) << path;
  Message* section = config->GetReflection()->MutableMessage(config, section_field);
  const FieldDescriptor* f = section->GetDescriptor()->FindFieldByName(parts.second);
  FG_CHECK(f != nullptr) << path;
  const auto* r = section->GetReflection();
  auto bad = [&](const char* what) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": expected ", what, ", got '", value, "'"));
  };
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      r->SetString(section, f, value);
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      if (value != "true" && value != "false") return bad("true or false");
      r->SetBool(section, f, value == "true");
      break;
    case FieldDescriptor::CPPTYPE_INT32: {
      int32_t v;
      if (!absl::SimpleAtoi(value, &v)) return bad("an integer");
      r->SetInt32(section, f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v;
      if (!absl::SimpleAtoi(value, &v)) return bad("a non-negative integer");
      r->SetUInt64(section, f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_FLOAT: {
      float v;
      if (!absl::SimpleAtof(value, &v)) return bad("a number");
      r->SetFloat(section, f, v);
      break;
    }
    default:
      FG_CHECK(false) << "flag for unsupported field type: " << path;
  }
  return absl::OkStatus();
}

// The field a flag sets (checked here, when the flags are declared, so that a flag of a type
// SetField cannot set fails every command that has it, not only the runs that pass it).
const google::protobuf::FieldDescriptor* FlagField(const ConfigFlag& c) {
  using google::protobuf::FieldDescriptor;
  const std::pair<std::string, std::string> parts = absl::StrSplit(std::string(c.field), '.');
  const auto* section = flexgraph::RunConfig::descriptor()->FindFieldByName(parts.first);
  const FieldDescriptor* f = section != nullptr ? section->message_type()->FindFieldByName(parts.second) : nullptr;
  FG_CHECK(f != nullptr) << "flag --" << c.flag << " names no field " << c.field;
  const auto type = f->cpp_type();
  FG_CHECK(type == FieldDescriptor::CPPTYPE_STRING || type == FieldDescriptor::CPPTYPE_BOOL ||
           type == FieldDescriptor::CPPTYPE_INT32 || type == FieldDescriptor::CPPTYPE_UINT64 ||
           type == FieldDescriptor::CPPTYPE_FLOAT)
      << "flag --" << c.flag << ": field " << c.field << " has a type flags cannot set";
  return f;
}

void AddFlags(FlagSet* f, bool model_only) {
  f->AddString("config", "", "protobuf text file with a flexgraph.RunConfig (flags override it)");
  for (const ConfigFlag& c : kConfigFlags) {
    FlagField(c);
    const std::string field = c.field;
    const bool model_flag = field.rfind("dataset.", 0) == 0 || field.rfind("model.", 0) == 0 ||
                            field == "train.seed";
    if (model_only && !model_flag) continue;
    if (c.is_switch) {
      f->AddBool(c.flag, false, c.help);
    } else {
      f->AddString(c.flag, "", c.help);
    }
  }
  f->AddString("model_opt", "", "model options as key=value[,key=value...], a value may be a list (aggregation=sum,max) (--model M --help lists them)");
  f->AddString("udf_library", "", "shared library registering additional models");
}

}  // namespace

void AddTrainFlags(FlagSet* f) { AddFlags(f, /*model_only=*/false); }
void AddModelFlags(FlagSet* f) { AddFlags(f, /*model_only=*/true); }

absl::StatusOr<flexgraph::RunConfig> RunConfigFromFlags(const FlagSet& f,
                                                        const flexgraph::RunConfig& base) {
  if (f.IsSet("udf_library")) {
    const std::string lib = f.Get("udf_library");
    if (dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("--udf_library: cannot load ", lib, ": ", dlerror()));
    }
  }
  flexgraph::RunConfig config = base;
  if (f.IsSet("config")) {
    FG_ASSIGN_OR_RETURN(flexgraph::RunConfig file, runtime::ReadConfigFile(f.Get("config")));
    config.MergeFrom(file);
  }
  for (const ConfigFlag& c : kConfigFlags) {
    if (f.IsSet(c.flag)) FG_RETURN_IF_ERROR(SetField(&config, c.field, c.flag, f.Get(c.flag)));
  }
  if (f.IsSet("model_opt")) {
    // key=value[,key=value...]; a piece without '=' continues the previous value, so that a value
    // may itself be a list (aggregation=sum,max).
    std::string key;
    auto& options = *config.mutable_model()->mutable_options();
    for (absl::string_view kv : absl::StrSplit(f.Get("model_opt"), ',', absl::SkipEmpty())) {
      if (kv.find('=') == absl::string_view::npos && !key.empty()) {
        absl::StrAppend(&options[key], ",", kv);
        continue;
      }
      std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
      if (p.first.empty() || kv.find('=') == absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("--model_opt: expected key=value, got '", std::string(kv), "'"));
      }
      key = p.first;
      options[key] = p.second;
    }
  }
  FG_ASSIGN_OR_RETURN(flexgraph::RunConfig resolved, runtime::ResolveConfig(config));
  // Sampler flags without mini-batches would be ignored: the run would train on the whole graph.
  if (resolved.train().batch_size() == 0) {
    for (const char* flag : {"sampler", "fanouts", "layer_size", "bulk", "sample_on", "feature_cache_mb", "sampler_opt"}) {
      if (f.IsSet(flag)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", flag, " applies to mini-batch training: give --batch_size too (0, the default, trains on "
            "the whole graph)"));
      }
    }
  }
  return resolved;
}

absl::Status PrepareSummaryFile(const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (::access(dir.empty() ? "." : dir.c_str(), W_OK) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("--summary_json: cannot write into ",
                                                    dir.empty() ? "." : dir, ": ", std::strerror(errno)));
  }
  // Nothing is removed here: the summary is written whole at the end of a run that finishes (a
  // temporary file renamed over `path`), so a run that fails leaves whatever `path` held.
  if (graph::io::IsDirectory(path)) {
    return absl::PermissionDeniedError(absl::StrCat("--summary_json: ", path, " is a directory"));
  }
  return absl::OkStatus();
}

absl::Status PrepareOutputs(const flexgraph::RunConfig& config) {
  FG_RETURN_IF_ERROR(PrepareSummaryFile(config.output().summary_json()));
  if (config.output().save_model().empty()) return absl::OkStatus();
  return runtime::PrepareModelDir(config.output().save_model());
}

std::string DescribeModel(const std::string& name) {
  const nau::ModelInfo* info = nau::ModelRegistry::Get().Find(name);
  if (info == nullptr) return "";
  std::string defaults;
  if (auto d = runtime::ParseConfigText(info->defaults, name); d.ok()) {
    google::protobuf::TextFormat::Printer printer;
    printer.SetSingleLineMode(true);
    printer.PrintToString(*d, &defaults);
  }
  const nau::OptionList options = runtime::ModelOptions(*info);
  return absl::StrCat("model ", name, ": ", info->description, "\n  defaults: ", defaults, "\n",
                      options.empty() ? "  no model options\n"
                                      : absl::StrCat("options (--model_opt name=value,...):\n",
                                                     nau::DescribeOptions(options)));
}

}  // namespace fg::cli
