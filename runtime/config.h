// Run configuration: a RunConfig (proto/config.proto) read from a protobuf text file, overridden by
// flags, completed with the model's defaults into TrainOptions. Errors name the file and line, the
// field or the flag.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "nau/aggregator.h"
#include "proto/config.pb.h"

namespace fg::runtime {

// The built-in default dataset: the main job runs anywhere with no download.
inline constexpr char kDefaultDataset[] = "sbm:nodes=20000,classes=8,features=64";
inline constexpr char kDefaultModel[] = "gcn";

struct TrainOptions {
  std::string dataset = kDefaultDataset;
  std::string split;
  std::string target_type;
  std::string model = kDefaultModel;
  int epochs = 200;
  float lr = 0.01f;
  float weight_decay = 5e-4f;
  int hidden = 16;
  int layers = 2;
  float dropout = 0.5f;
  int heads = 1;
  uint64_t seed = 0;
  int patience = 0;
  std::string optimizer = "adam";
  bool normalize_features = true;
  std::map<std::string, std::string> model_options;
  int threads = 0;  // 0 = all cores
  std::string device = "cpu";
  std::string cache_dir;
  // Checkpoints every k epochs into checkpoint_dir (0 = never); resume from the latest there.
  int checkpoint_every = 0;
  std::string checkpoint_dir;
  bool resume = false;
  // Stop after this many epochs have run in this process (tests of resume); 0 = no limit.
  int stop_after = 0;
  bool explain = false;
  std::optional<nau::Strategy> exec_override;
  std::string summary_json;
  bool quiet = false;
  // Initial parameter values from .npy files in this directory ("" = the model's initialisers):
  // parameter "layer<l>.<child>.<name>" reads <dir>/<parameter name>.npy, with its exact shape.
  std::string init_weights;
  // Compute the loss of the initial parameters (no dropout, no update) before the first step and
  // report it as TrainResult::epoch0_loss (agreement checks against the baselines).
  bool epoch0_loss = false;
  // Write every layer's HDG as .npy arrays into this directory before training (single process):
  // layer<i>.roots.npy (int64 vertex ids) and per level k, layer<i>.level<k>.{indptr (int64),
  // indices (int32, level 1: vertex ids), weights (float, weighted schemas)}.npy. Baselines read
  // them to aggregate over exactly FlexGraph's neighbour selection.
  std::string export_hdg;
};

// Parses a protobuf text file; unknown fields and syntax errors name the file and line.
absl::StatusOr<flexgraph::RunConfig> ReadConfigFile(const std::string& path);

// Defaults of `model` (unknown model: error listing the registered ones), then `config`.
absl::StatusOr<TrainOptions> ResolveOptions(const flexgraph::RunConfig& config);

// Checks ranges (positive sizes, dropout in [0, 1), known optimizer/device), naming the field.
absl::Status ValidateOptions(const TrainOptions& options);

}  // namespace fg::runtime
