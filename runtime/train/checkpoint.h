// Checkpoints (parameters, optimizer state, the run's progress and identity in one file,
// <dir>/checkpoint.pb: a framed protobuf with a format version and a CRC-32, written atomically
// and durably; the one it replaced stays as <dir>/checkpoint.previous.pb) and initial parameter
// values from .npy files. Thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/nn/module.h"
#include "flexgraph/nn/optim.h"
#include "proto/checkpoint.pb.h"
#include "proto/config.pb.h"
#include "runtime/train/summary.h"

namespace fg::runtime {

// What determines a run's results: the resolved configuration without the fields that only say
// how long it runs and how it reports (epochs, threads, checkpointing, output, caches), and the
// number of workers. A checkpoint resumes only a run with the same identity.
struct RunIdentity {
  flexgraph::RunConfig config;
  int world_size = 1;
  // The dataset's contents (DatasetFingerprint), set by runs that checkpoint or resume: a
  // checkpoint resumes only over the same files.
  std::vector<flexgraph::DatasetFile> dataset_files;
};
RunIdentity IdentityOf(const flexgraph::RunConfig& resolved, int world_size);

// What a checkpoint remembers of a dataset's contents, cheaply: every regular file under `path`
// (or `path` itself when it is a file; nothing when it does not exist, as a generator spec), by
// its path relative to `path`, with its size and a CRC-32 of its contents — all of them up to 64
// MiB, of 64 evenly spaced samples of 256 KiB above. Paths under `skip` (the run's own outputs,
// a cache, the checkpoints) and temporary files (".tmp.") are left out. Errors name the file.
absl::StatusOr<std::vector<flexgraph::DatasetFile>> DatasetFingerprint(
    const std::string& path, const std::vector<std::string>& skip);

// One run per checkpoint directory: an exclusive lock on <dir>/checkpoint.lock, held until the
// returned object is destroyed or the process ends, however it ends. Refused, naming the directory
// and the process that holds it, while another run holds it.
absl::StatusOr<std::unique_ptr<graph::io::DirectoryLock>> LockCheckpointDirectory(
    const std::string& dir);

// Waits until no process holds `dir`'s lock (as LockCheckpointDirectory takes it), polling, for at
// most `timeout_seconds`. OK once it is free; otherwise the last refusal, naming the holder.
absl::Status AwaitCheckpointDirectory(const std::string& dir, double timeout_seconds);

// True when `dir` holds a checkpoint or a previous one.
bool HasCheckpoint(const std::string& dir);

// Writes the optimizer's parameters and moments and `progress` (losses, epoch times, the best
// validation epoch and its test metrics) after `epochs_done` epochs; the checkpoint it replaces
// becomes the previous one. Errors name the path.
absl::Status SaveCheckpoint(const std::string& dir, const RunIdentity& run, int epochs_done,
                            nn::Optimizer& optimizer, const TrainResult& progress);

// Restores what SaveCheckpoint wrote into `optimizer` and `progress`; returns the epochs done.
// Refused, naming the path and what is wrong, and leaving `optimizer` untouched: a file that is
// not a checkpoint, of another format version, truncated, with trailing bytes or damaged
// (checksum), of another run (the differing fields of the identity, or the dataset files that
// changed), or with other parameters (names or shapes). A newest checkpoint that is missing,
// truncated or damaged is passed over for the previous one, and
// `passed_over` (when given) says why; only when both are refused is the result an error, naming
// both.
absl::StatusOr<int> LoadCheckpoint(const std::string& dir, const RunIdentity& run,
                                   nn::Optimizer& optimizer, TrainResult* progress,
                                   std::string* passed_over = nullptr);

// The checkpoint file's bytes, and their restoring (what Save/LoadCheckpoint write and read);
// errors name `where`.
std::string EncodeCheckpoint(const RunIdentity& run, int epochs_done, nn::Optimizer& optimizer,
                             const TrainResult& progress);
absl::StatusOr<int> DecodeCheckpoint(const std::string& bytes, const std::string& where,
                                     const RunIdentity& run, nn::Optimizer& optimizer,
                                     TrainResult* progress);

// Sets every parameter from <dir>/<parameter name>.npy. Errors name the parameter and the file
// (missing file, wrong dtype or shape).
absl::Status LoadInitialParameters(const std::string& dir,
                                   const std::vector<nn::NamedParameter>& params);

}  // namespace fg::runtime
