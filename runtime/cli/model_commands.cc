// Commands that use a trained model (runtime/train/inference.h):
//   flexgraph predict --model_dir DIR --out FILE.csv|.npy [--dataset D] [--nodes FILE]
//   flexgraph embed   --model_dir DIR --out FILE.npy|.csv [--layer K] [--node_type T] [--nodes FILE]
//                     [--top_k K --recommend FILE.csv]
// The model's saved configuration is the base; the dataset and model flags override it, and a
// change the model cannot take (another model, width, option, feature width...) is refused,
// naming what differs. Exit status: 0 ok, 1 failure, 2 usage error.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/file.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/train_flags.h"
#include "runtime/train/inference.h"
#include "runtime/tasks/link_prediction.h"
#include "runtime/train/saved_model.h"

namespace fg::cli {
namespace {

void AddCommonFlags(FlagSet* f) {
  f->AddString("model_dir", "", "directory written by train --save_model (required)");
  f->AddString("out", "", "output file, .csv or .npy (required)");
  f->AddString("nodes", "", "file of vertex ids (local ids of the node type, one per line; default: all)");
  f->AddString("threads", "", "threads (default: all cores)");
  f->AddString("summary_json", "", "also write a JSON summary to this file");
  AddModelFlags(f);  // --dataset, --split, ... override the saved configuration
}

// Parses the flags and loads the model; on failure prints the error and sets *exit_code.
std::unique_ptr<runtime::LoadedModel> Load(const std::string& command, FlagSet& flags,
                                           const std::vector<std::string>& args, int* exit_code) {
  auto fail = [&](const absl::Status& s, int code) -> std::unique_ptr<runtime::LoadedModel> {
    std::fprintf(stderr, "flexgraph %s: %s\n", command.c_str(), std::string(s.message()).c_str());
    *exit_code = code;
    return nullptr;
  };
  if (auto s = flags.Parse(args); !s.ok()) {
    std::fprintf(stderr, "flexgraph %s: %s\n\n%s", command.c_str(), std::string(s.message()).c_str(),
                 flags.Usage().c_str());
    *exit_code = 2;
    return nullptr;
  }
  if (flags.help_requested()) {
    std::printf("%s", flags.Usage().c_str());
    *exit_code = 0;
    return nullptr;
  }
  for (const char* required : {"model_dir", "out"}) {
    if (flags.Get(required).empty()) {
      return fail(absl::InvalidArgumentError(absl::StrCat("--", required, " is required")), 2);
    }
  }
  if (auto s = runtime::CheckRowsPath(flags.Get("out")); !s.ok()) return fail(s, 2);
  if (flags.IsSet("recommend") && !absl::EndsWith(flags.Get("recommend"), ".csv")) {
    return fail(absl::InvalidArgumentError(absl::StrCat("--recommend ", flags.Get("recommend"), ": name a .csv file")), 2);
  }
  auto saved = runtime::ReadSavedModel(flags.Get("model_dir"));
  if (!saved.ok()) return fail(saved.status(), 1);
  auto config = RunConfigFromFlags(flags, saved->config());
  if (!config.ok()) return fail(config.status(), 2);
  if (flags.IsSet("threads")) {
    auto threads = flags.GetInt("threads");
    if (!threads.ok()) return fail(threads.status(), 2);
    config->mutable_train()->set_threads(static_cast<int>(*threads));
  }
  auto model = runtime::LoadModel(flags.Get("model_dir"), *saved, *config);
  if (!model.ok()) return fail(model.status(), 1);
  return std::move(*model);
}

absl::StatusOr<std::vector<int64_t>> Nodes(const FlagSet& flags, const runtime::LoadedModel& m,
                                           const std::string& type) {
  if (!flags.IsSet("nodes")) return std::vector<int64_t>{};
  const nau::VertexSpace& space = m.trainer->vertices();
  return runtime::ReadNodeList(flags.Get("nodes"), space.type_size(space.TypeIndex(type)));
}

// A number for a JSON summary: null when it is not finite (a metric of an absent split).
std::string JsonNumber(double v) { return std::isfinite(v) ? absl::StrFormat("%.6f", v) : "null"; }

absl::Status WriteSummary(const FlagSet& flags, const std::string& json) {
  if (!flags.IsSet("summary_json")) return absl::OkStatus();
  return graph::io::WriteFileAtomically(flags.Get("summary_json"), json + "\n");
}

int Predict(const std::vector<std::string>& args) {
  FlagSet flags("predict", "Writes per-vertex class probabilities of a trained model (train --save_model).");
  AddCommonFlags(&flags);
  int code = 0;
  auto model = Load("predict", flags, args, &code);
  if (model == nullptr) return code;
  auto run = [&]() -> absl::Status {
    const std::string& target = model->trainer->task().target_type();
    FG_ASSIGN_OR_RETURN(std::vector<int64_t> nodes, Nodes(flags, *model, target));
    FG_ASSIGN_OR_RETURN(Tensor probs, runtime::PredictProbabilities(*model, nodes));
    std::vector<int64_t> predicted(probs.rows());
    const int64_t c = probs.row_width();
    for (int64_t r = 0; r < probs.rows(); ++r) {
      const float* row = probs.f32() + r * c;
      predicted[r] = std::max_element(row, row + c) - row;
    }
    FG_RETURN_IF_ERROR(runtime::WriteRows(flags.Get("out"), nodes, probs, "p", predicted, "class"));
    // The task's metrics on this dataset's split: on the training dataset, those it reported.
    FG_ASSIGN_OR_RETURN(runtime::EpochMetrics m, model->trainer->EvaluateAt(model->epoch));
    std::printf("predict: %lld vertices of '%s' (%lld classes) -> %s; test accuracy %.4f, macro-F1 %.4f "
                "(saved at epoch %d: %.4f, %.4f)\n",
                static_cast<long long>(probs.rows()), target.c_str(), static_cast<long long>(c),
                flags.Get("out").c_str(), m.test, m.test_macro_f1, model->saved.epoch(),
                model->saved.test_accuracy(), model->saved.test_macro_f1());
    return WriteSummary(
        flags,
        absl::StrFormat(
            R"({"nodes": %d, "classes": %d, "test_accuracy": %s, "test_macro_f1": %s, "test_micro_f1": %s, "saved_epoch": %d, "saved_test_accuracy": %s})",
            probs.rows(), c, JsonNumber(m.test), JsonNumber(m.test_macro_f1),
            JsonNumber(m.test_micro_f1), model->saved.epoch(),
            JsonNumber(model->saved.test_accuracy())));
  };
  if (absl::Status s = run(); !s.ok()) {
    std::fprintf(stderr, "flexgraph predict: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}

int Embed(const std::vector<std::string>& args) {
  FlagSet flags("embed", "Writes the hidden representations of a trained model (train --save_model).");
  AddCommonFlags(&flags);
  flags.AddString("layer", "", "layer whose output to write (-1: the model's input; default: the last layer's embedding for MAGNN and HAN, the last layer's output for link prediction, else the last hidden layer's output)");
  flags.AddBool("before_output", false, "with --layer: the embedding the layer's output transform reads (MAGNN, HAN)");
  flags.AddString("node_type", "", "node type whose vertices to write (default: the target type)");
  flags.AddString("top_k", "10", "link prediction: recommendations per source vertex");
  flags.AddString("recommend", "", "link prediction: write each source vertex's top-k unseen destinations to this CSV");
  int code = 0;
  auto model = Load("embed", flags, args, &code);
  if (model == nullptr) return code;
  // --top_k is checked before anything is computed or written: at least 1, at most the candidates.
  int64_t k = 0;
  if (const auto* lp = dynamic_cast<const runtime::LinkPredictionTask*>(&model->trainer->task());
      lp != nullptr && flags.IsSet("recommend")) {
    auto top_k = flags.GetInt("top_k");
    const nau::VertexSpace& space = model->trainer->vertices();
    const int64_t candidates = space.type_size(space.TypeIndex(lp->target_type()));
    if (!top_k.ok() || *top_k < 1 || *top_k > candidates) {
      std::fprintf(
          stderr,
          "flexgraph embed: --top_k must lie in [1, %lld] (the '%s' vertices a source can be "
          "recommended), got '%s'\n",
          static_cast<long long>(candidates), lp->target_type().c_str(),
          flags.Get("top_k").c_str());
      return 2;
    }
    k = *top_k;
  }
  auto run = [&]() -> absl::Status {
    const std::string type = flags.IsSet("node_type") ? flags.Get("node_type") : model->trainer->task().target_type();
    if (model->trainer->vertices().TypeIndex(type) < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--node_type: no node type '", type, "'"));
    }
    const auto* lp = dynamic_cast<const runtime::LinkPredictionTask*>(&model->trainer->task());
    if (flags.IsSet("recommend") && lp == nullptr) {
      return absl::InvalidArgumentError("--recommend: the model classifies nodes; recommendations need a link-prediction model");
    }
    runtime::EmbeddingSource source = runtime::DefaultEmbedding(*model);
    if (flags.IsSet("layer")) {
      FG_ASSIGN_OR_RETURN(int64_t l, flags.GetInt("layer"));
      source = {static_cast<int>(l), flags.GetBool("before_output")};
    }
    FG_ASSIGN_OR_RETURN(std::vector<int64_t> nodes, Nodes(flags, *model, type));
    FG_ASSIGN_OR_RETURN(Tensor rows, runtime::Embeddings(*model, source, type, nodes));
    FG_RETURN_IF_ERROR(runtime::WriteRows(flags.Get("out"), nodes, rows, "h"));
    std::printf("embed: %lld vertices of '%s', %s, width %lld -> %s\n",
                static_cast<long long>(rows.rows()), type.c_str(), source.Describe().c_str(),
                static_cast<long long>(rows.row_width()), flags.Get("out").c_str());
    std::string json = absl::StrFormat(R"({"nodes": %d, "width": %d, "layer": %d, "before_output": %s)",
                                       rows.rows(), rows.row_width(), source.layer,
                                       source.nbr ? "true" : "false");
    if (flags.IsSet("recommend")) {
      Tensor ids;
      const int last = model->trainer->model().num_layers() - 1;
      FG_ASSIGN_OR_RETURN(Tensor out, model->trainer->Infer(model->epoch, last, &ids));
      const auto rec = lp->Recommend(out, static_cast<int>(k));
      const std::string dst_type = lp->target_type();
      std::string csv = absl::StrCat(lp->src_type(), ",rank,", dst_type, ",score\n");
      for (size_t i = 0; i < rec.dst.size(); ++i) {
        if (rec.dst[i] < 0) continue;
        absl::StrAppendFormat(&csv, "%d,%d,%d,%.6g\n", i / k, i % k + 1, rec.dst[i], rec.score[i]);
      }
      FG_RETURN_IF_ERROR(graph::io::WriteFileAtomically(flags.Get("recommend"), csv));
      std::printf("recommend: top %lld '%s' per '%s' -> %s; test recall@%lld %.4f\n",
                  static_cast<long long>(k), dst_type.c_str(), lp->src_type().c_str(),
                  flags.Get("recommend").c_str(), static_cast<long long>(k), rec.test_recall);
      absl::StrAppendFormat(&json, R"(, "top_k": %d, "test_recall_at_k": %.6f)", k, rec.test_recall);
    }
    return WriteSummary(flags, json + "}");
  };
  if (absl::Status s = run(); !s.ok()) {
    std::fprintf(stderr, "flexgraph embed: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}

CommandRegistrar predict_command("predict", "class probabilities of a trained model", Predict);
CommandRegistrar embed_command("embed", "hidden representations (and recommendations) of a trained model", Embed);

}  // namespace
}  // namespace fg::cli
