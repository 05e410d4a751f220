// Whole-file reads and atomic writes for plans and calibration files; errors name the path.
// Thread-safe: no shared state.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace fg::partition {

absl::StatusOr<std::string> ReadFile(const std::string& path);
// Writes to a temporary file next to `path`, then renames it over `path`.
absl::Status WriteFileAtomic(const std::string& path, const std::string& contents);

}  // namespace fg::partition
