// Flags shared by `flexgraph train` and the distributed commands, and their conversion into
// TrainOptions (config file first, then flags; errors name the flag or field).
#pragma once

#include "absl/status/statusor.h"
#include "runtime/cli/flags.h"
#include "runtime/config.h"

namespace fg::cli {

void AddTrainFlags(FlagSet* flags);
absl::StatusOr<runtime::TrainOptions> TrainOptionsFromFlags(const FlagSet& flags);

}  // namespace fg::cli
