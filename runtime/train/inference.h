// Using a trained model (`flexgraph predict`, `flexgraph embed`): the model saved in a directory
// (runtime/train/saved_model.h) rebuilt over a dataset with the same schema, its parameters loaded, and
// run forward without dropout on the HDGs of the epoch it was saved at — so on the dataset it was
// trained on it reproduces that epoch's outputs exactly. Single process; thread-compatible.
//
//   FG_ASSIGN_OR_RETURN(auto saved, ReadSavedModel(dir));
//   FG_ASSIGN_OR_RETURN(auto model, LoadModel(dir, saved, saved.config()));
//   FG_ASSIGN_OR_RETURN(Tensor p, PredictProbabilities(*model, {}));   // every target vertex
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/saved_model.pb.h"
#include "runtime/train/trainer.h"

namespace fg::runtime {

struct LoadedModel {
  std::string dir;
  flexgraph::SavedModel saved;
  std::unique_ptr<Trainer> trainer;
  int epoch = 0;  // 0-based epoch whose HDGs inference uses
};

// Rebuilds the model saved in `dir` over `config` (the saved configuration with the caller's
// changes, resolved) and loads its parameters. Refused, naming what differs, when the settings the
// model fixes (ModelSettings), the dataset's schema or the parameters differ from the saved ones.
absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModel(const std::string& dir,
                                                       const flexgraph::SavedModel& saved,
                                                       flexgraph::RunConfig config);

// Class probabilities [nodes, classes] (softmax of the model's output) of target vertices `nodes`
// (local ids of the target type; empty = all, in id order). Link-prediction models are refused.
absl::StatusOr<Tensor> PredictProbabilities(LoadedModel& model, const std::vector<int64_t>& nodes);

// Where embeddings come from: layer `layer`'s output (-1: the model's input) or, with `nbr`, the
// aggregated neighbourhood its Update reads.
struct EmbeddingSource {
  int layer = 0;
  bool nbr = false;
  std::string Describe() const;
};
// What `embed` writes by default: for link prediction the last layer's output (links are scored
// with it); for node classification the last layer's embedding when its Update only maps one to
// the output (nau::Layer::NbrIsEmbedding: MAGNN, HAN), else the input of the last layer (the last
// hidden layer's output; the model's input for one layer).
EmbeddingSource DefaultEmbedding(const LoadedModel& model);
// Rows [nodes, width] of `source` for vertices `nodes` of `node_type` (local ids; empty = all).
// Errors name the layer and the type when it has no such rows.
absl::StatusOr<Tensor> Embeddings(LoadedModel& model, const EmbeddingSource& source,
                                  const std::string& node_type, const std::vector<int64_t>& nodes);

// Reads a node list: one local vertex id per line ('#' starts a comment, blank lines skipped),
// each in [0, limit). Errors name the file and line.
absl::StatusOr<std::vector<int64_t>> ReadNodeList(const std::string& path, int64_t limit);
// Parses a node list's text; `where` names it in errors.
absl::StatusOr<std::vector<int64_t>> ParseNodeList(const std::string& text, const std::string& where,
                                                   int64_t limit);

// OK when `path` names a .csv or .npy file (what WriteRows writes); the error names --out.
absl::Status CheckRowsPath(const std::string& path);
// Writes rows [n, w] to `path`: .npy (float32), or CSV with a header ("node,<first columns...>"),
// one line per node; written atomically. `extra` adds a leading integer column per row (e.g. the
// predicted class) named `extra_name` ("" = none).
absl::Status WriteRows(const std::string& path, const std::vector<int64_t>& nodes, const Tensor& rows,
                       const std::string& column_prefix, const std::vector<int64_t>& extra = {},
                       const std::string& extra_name = "");

}  // namespace fg::runtime
