// Run configuration: flexgraph.RunConfig (proto/config.proto) is the one source of truth. A run's
// configuration is resolved in layers — the built-in defaults, the model's registered defaults,
// the config file (--config), then the flags — into a RunConfig with every field set, which the
// trainer, the coordinator and the partitioner read. Errors name the file and line, the field, the
// option or the flag.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "nau/model.h"
#include "partition/workload.h"
#include "proto/config.pb.h"

namespace fg::runtime {

// The built-in default dataset: the main job runs anywhere with no download.
inline constexpr char kDefaultDataset[] = "sbm:nodes=20000,classes=8,features=64";
inline constexpr char kDefaultModel[] = "gcn";

// Parses a RunConfig in text format; unknown fields and syntax errors name `where`, line and column.
absl::StatusOr<flexgraph::RunConfig> ParseConfigText(const std::string& text, const std::string& where);
absl::StatusOr<flexgraph::RunConfig> ReadConfigFile(const std::string& path);

// The options model `info` reads: its own and, when it predicts links, the link-prediction task's.
nau::OptionList ModelOptions(const nau::ModelInfo& info);

// Every field set: the built-in defaults, then the defaults of `user`'s model, then `user` (model
// options merge by name). Errors: an unknown model (listing the registered ones), an option the
// model does not declare or of the wrong type, values out of range.
absl::StatusOr<flexgraph::RunConfig> ResolveConfig(const flexgraph::RunConfig& user);

// The model's view of a resolved configuration: hyperparameters, seed and options (with the model's
// declarations). The caller sets the data fields (dataset, vertices, target type, classes).
nau::ModelSpec ModelSpecFrom(const flexgraph::RunConfig& config);
// What the partitioner's cost model needs of a resolved configuration: the model and its spec.
partition::WorkloadOptions WorkloadOptionsFrom(const flexgraph::RunConfig& config);

// What every process of a distributed run must agree on: a resolved configuration without the
// fields that concern one process only (threads, output, caches, partition flags).
flexgraph::RunConfig SharedSettings(const flexgraph::RunConfig& resolved);
// The fields in which `b` differs from `a`, "modified: train.lr: 0.01 -> 0.02; ...", or "".
std::string ConfigDifferences(const flexgraph::RunConfig& a, const flexgraph::RunConfig& b);

// Checks ranges (positive sizes, dropout in [0, 1), known optimizer/device/exec), naming the field.
absl::Status ValidateConfig(const flexgraph::RunConfig& config);
// The device a validated `train.device` names ("cpu", "cuda" or "cuda:N") and its index (0 for
// "cpu" and "cuda").
Device DeviceOf(const std::string& device);
int CudaDeviceIndex(const std::string& device);

}  // namespace fg::runtime
