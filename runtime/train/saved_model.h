// Trained models on disk (proto/saved_model.proto): `train --save_model DIR` writes the parameters
// of the best validation epoch with the configuration and dataset schema they need; `predict` and
// `embed` read them back into a model rebuilt over a dataset with the same schema. Thread-safe
// free functions; errors name the directory or file and what differs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/nn/module.h"
#include "flexgraph/tensor/tensor.h"
#include "proto/saved_model.pb.h"

namespace fg::runtime {

// Version 2: every parameter carries the CRC-32 of its data (version 1 models are refused: save
// them again).
inline constexpr int kSavedModelVersion = 2;

// Before a run that saves into `dir`: `dir` must be absent, empty or a saved model (which the new
// one replaces once it is complete); anything else is refused, so nothing is overwritten.
absl::Status PrepareModelDir(const std::string& dir);

// Writes `model` (DIR/model.txtpb, with each parameter's checksum set from `params`) and `params`
// (DIR/params/<name>.npy) into a new directory beside
// `dir`, then renames it into place: a saved model already there is replaced only by a whole one.
absl::Status SaveModel(const std::string& dir, const flexgraph::SavedModel& model,
                       const std::vector<std::pair<std::string, Tensor>>& params);

// Reads DIR/model.txtpb (errors name the file, line and column, or the unsupported version).
absl::StatusOr<flexgraph::SavedModel> ReadSavedModel(const std::string& dir);
// Parses and checks a model.txtpb image; `where` names it in errors.
absl::StatusOr<flexgraph::SavedModel> ParseSavedModel(const std::string& text, const std::string& where);

// The settings a saved model fixes: the model section, how the dataset is viewed (not which
// dataset or split) and the seed (sampled selections key on it).
flexgraph::RunConfig ModelSettings(const flexgraph::RunConfig& resolved);

// Checks that a run (`now`, described as SavedModel describes a training run) can take the
// parameters of `saved` from `dir`: the same settings, node types, feature widths, target type,
// classes and parameters (names and shapes). The error names everything that differs.
absl::Status CheckCompatible(const std::string& dir, const flexgraph::SavedModel& saved,
                             const flexgraph::SavedModel& now);

// Sets every parameter from DIR/params/<name>.npy once all of them are checked: the dtype and
// shape, the checksum `saved` holds for it (a mismatch names the file), and finite values (a NaN
// or infinity names the parameter and the element). Nothing is set when one is refused.
absl::Status LoadSavedParameters(const std::string& dir, const flexgraph::SavedModel& saved,
                                 const std::vector<nn::NamedParameter>& params);

}  // namespace fg::runtime
