#include "runtime/train/inference.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/npy.h"
#include "runtime/train/saved_model.h"

namespace fg::runtime {
namespace {

// The rows of `out` (global ids `ids`) of type `t`'s vertices `nodes` (local ids; empty = all).
absl::StatusOr<Tensor> SelectRows(const Tensor& out, const Tensor& ids, const nau::VertexSpace& space,
                                  int t, const std::vector<int64_t>& nodes, const std::string& what) {
  const int64_t offset = space.type_offset(t), size = space.type_size(t);
  std::vector<int64_t> row_of(size, -1);
  for (int64_t k = 0; k < ids.numel(); ++k) {
    const int64_t v = ids.i64()[k];
    if (v >= offset && v < offset + size) row_of[v - offset] = k;
  }
  std::vector<int64_t> all;
  if (nodes.empty()) {
    all.resize(size);
    for (int64_t v = 0; v < size; ++v) all[v] = v;
  }
  const std::vector<int64_t>& want = nodes.empty() ? all : nodes;
  const int64_t w = out.row_width();
  Tensor rows = Tensor::Empty({static_cast<int64_t>(want.size()), w}, DType::kFloat32);
  for (size_t i = 0; i < want.size(); ++i) {
    const int64_t v = want[i];
    if (v < 0 || v >= size || row_of[v] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has no row for vertex ", v, " of type '",
                                                     space.type_name(t), "'"));
    }
    std::copy_n(out.f32() + row_of[v] * w, w, rows.f32() + i * w);
  }
  return rows;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModel(const std::string& dir,
                                                       const flexgraph::SavedModel& saved,
                                                       flexgraph::RunConfig config) {
  // Cheap checks first: the settings, before any data is read.
  if (std::string d = ConfigDifferences(ModelSettings(saved.config()), ModelSettings(config)); !d.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--model_dir ", dir, ": this run's settings differ from the saved model's (saved -> this run): ", d));
  }
  flexgraph::OutputConfig* out = config.mutable_output();
  out->clear_save_model();
  out->clear_summary_json();
  out->clear_export_hdg();
  out->clear_explain();
  out->clear_epoch0_loss();
  out->set_quiet(true);
  config.mutable_train()->clear_init_weights();
  config.mutable_train()->clear_resume();
  auto model = std::make_unique<LoadedModel>();
  model->dir = dir;
  model->saved = saved;
  model->epoch = std::max(0, saved.epoch() - 1);
  FG_ASSIGN_OR_RETURN(model->trainer, Trainer::Create(config));
  FG_RETURN_IF_ERROR(CheckCompatible(dir, saved, model->trainer->Describe()));
  FG_RETURN_IF_ERROR(LoadSavedParameters(dir, saved, model->trainer->model().parameters()));
  return model;
}

absl::StatusOr<Tensor> PredictProbabilities(LoadedModel& model, const std::vector<int64_t>& nodes) {
  Trainer& t = *model.trainer;
  if (t.task().kind() != nau::Task::kNodeClassification) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model ", model.saved.config().model().name(), " in ", model.dir,
        " predicts links, not classes: flexgraph embed writes its embeddings (--top_k: recommendations)"));
  }
  Tensor ids;
  FG_ASSIGN_OR_RETURN(Tensor out, t.Infer(model.epoch, t.model().num_layers() - 1, &ids));
  const int type = t.vertices().TypeIndex(t.task().target_type());
  FG_ASSIGN_OR_RETURN(Tensor logits, SelectRows(out, ids, t.vertices(), type, nodes, "the model's output"));
  const int64_t c = logits.row_width();
  for (int64_t r = 0; r < logits.rows(); ++r) {  // softmax, in place
    float* row = logits.f32() + r * c;
    const float top = *std::max_element(row, row + c);
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += std::exp(static_cast<double>(row[j] - top));
    for (int64_t j = 0; j < c; ++j) row[j] = static_cast<float>(std::exp(static_cast<double>(row[j] - top)) / sum);
  }
  return logits;
}

std::string EmbeddingSource::Describe() const {
  if (layer < 0) return "the model's input";
  return absl::StrCat("layer ", layer, nbr ? "'s embedding before its output transform" : "'s output");
}

EmbeddingSource DefaultEmbedding(const LoadedModel& model) {
  nau::Model& m = model.trainer->model();
  const int last = m.num_layers() - 1;
  if (model.trainer->task().kind() == nau::Task::kLinkPrediction) return {last, false};
  if (m.layer(last).NbrIsEmbedding()) return {last, true};
  return {last - 1, false};
}

absl::StatusOr<Tensor> Embeddings(LoadedModel& model, const EmbeddingSource& source,
                                  const std::string& node_type, const std::vector<int64_t>& nodes) {
  Trainer& t = *model.trainer;
  const int type = t.vertices().TypeIndex(node_type);
  if (type < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--node_type: no node type '", node_type, "' in ",
                                                   t.config().dataset().path()));
  }
  Tensor ids;
  FG_ASSIGN_OR_RETURN(Tensor out, t.Infer(model.epoch, source.layer, &ids, source.nbr));
  return SelectRows(out, ids, t.vertices(), type, nodes, source.Describe());
}

absl::StatusOr<std::vector<int64_t>> ReadNodeList(const std::string& path, int64_t limit) {
  FG_ASSIGN_OR_RETURN(std::string text, graph::io::ReadFileToString(path));
  return ParseNodeList(text, path, limit);
}

absl::StatusOr<std::vector<int64_t>> ParseNodeList(const std::string& text, const std::string& path,
                                                   int64_t limit) {
  std::vector<int64_t> nodes;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = line.substr(0, line.find('#'));
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    int64_t v;
    if (!absl::SimpleAtoi(line, &v)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": '", line,
                                                     "' is not a vertex id"));
    }
    if (v < 0 || v >= limit) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": vertex ", v,
                                                     " out of range [0, ", limit, ")"));
    }
    nodes.push_back(v);
  }
  if (nodes.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no vertex ids"));
  return nodes;
}

absl::Status CheckRowsPath(const std::string& path) {
  if (absl::EndsWith(path, ".npy") || absl::EndsWith(path, ".csv")) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--out ", path, ": name a .csv or .npy file"));
}

absl::Status WriteRows(const std::string& path, const std::vector<int64_t>& nodes, const Tensor& rows,
                       const std::string& column_prefix, const std::vector<int64_t>& extra,
                       const std::string& extra_name) {
  FG_RETURN_IF_ERROR(CheckRowsPath(path));
  if (absl::EndsWith(path, ".npy")) return graph::io::WriteFileAtomically(path, graph::io::EncodeNpy(rows));
  const int64_t w = rows.row_width();
  std::string text = "node";
  if (!extra_name.empty()) absl::StrAppend(&text, ",", extra_name);
  for (int64_t j = 0; j < w; ++j) absl::StrAppend(&text, ",", column_prefix, j);
  text += "\n";
  for (int64_t r = 0; r < rows.rows(); ++r) {
    absl::StrAppend(&text, nodes.empty() ? r : nodes[r]);
    if (!extra_name.empty()) absl::StrAppend(&text, ",", extra[r]);
    for (int64_t j = 0; j < w; ++j) absl::StrAppendFormat(&text, ",%.6g", rows.f32()[r * w + j]);
    text += "\n";
  }
  return graph::io::WriteFileAtomically(path, text);
}

}  // namespace fg::runtime
