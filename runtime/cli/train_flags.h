// Flags of `flexgraph train` (and of the distributed commands after `--`): each overrides one field
// of flexgraph.RunConfig (proto/config.proto), on top of --config; the result is resolved with the
// model's defaults (runtime/train/config.h). Errors name the flag, the field or the option.
#pragma once

#include "absl/status/statusor.h"
#include "proto/config.pb.h"
#include "runtime/cli/flags.h"

namespace fg::cli {

void AddTrainFlags(FlagSet* flags);
// The flags that choose a dataset and a model (dataset.*, model.*, the seed, --model_opt,
// --config, --udf_library): for commands that build a model's HDGs without training it.
void AddModelFlags(FlagSet* flags);
// Loads --udf_library, reads --config over `base`, applies the flags and resolves the configuration.
absl::StatusOr<flexgraph::RunConfig> RunConfigFromFlags(const FlagSet& flags,
                                                        const flexgraph::RunConfig& base = {});
// Before a run that writes its summary to `path` ("" = none): checks that its directory is writable
// and that `path` is not a directory. Nothing is removed: the summary replaces `path` whole (a
// temporary file renamed over it) only when the run finishes; a failed run leaves `path` as it was.
absl::Status PrepareSummaryFile(const std::string& path);
// Before a run: its summary file (PrepareSummaryFile) and its --save_model directory
// (runtime::PrepareModelDir) can be written, so that a run never fails at its end for them.
absl::Status PrepareOutputs(const flexgraph::RunConfig& config);
// `flexgraph train --model M --help`: the model's description, defaults and options.
std::string DescribeModel(const std::string& name);

}  // namespace fg::cli
