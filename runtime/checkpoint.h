// Checkpoints (parameters, optimizer state and the run's progress in one protobuf file,
// <dir>/checkpoint.pb, written atomically) and initial parameter values from .npy files.
// Thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/nn/module.h"
#include "flexgraph/nn/optim.h"
#include "runtime/summary.h"

namespace fg::runtime {

// A checkpoint resumes only the run it was written by: same model and seed.
struct RunIdentity {
  std::string model, dataset;
  uint64_t seed = 0;
};

bool HasCheckpoint(const std::string& dir);

// Writes the optimizer's parameters and moments and `progress` (losses, epoch times, the best
// validation epoch and its test metrics) after `epochs_done` epochs. Errors name the path.
absl::Status SaveCheckpoint(const std::string& dir, const RunIdentity& run, int epochs_done,
                            nn::Optimizer& optimizer, const TrainResult& progress);

// Restores what SaveCheckpoint wrote into `optimizer` and `progress`; returns the epochs done.
// A checkpoint of another model or seed, or with other parameter shapes, is an error naming the
// path and the difference.
absl::StatusOr<int> LoadCheckpoint(const std::string& dir, const RunIdentity& run,
                                   nn::Optimizer& optimizer, TrainResult* progress);

// Sets every parameter from <dir>/<parameter name>.npy. Errors name the parameter and the file
// (missing file, wrong dtype or shape).
absl::Status LoadInitialParameters(const std::string& dir,
                                   const std::vector<nn::NamedParameter>& params);

}  // namespace fg::runtime
