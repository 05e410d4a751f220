// libFuzzer target: `train`'s command line. The input is the arguments, one per line; parsing,
// the flags' mapping onto the RunConfig and its resolution give a Status or a configuration that
// validates — nothing aborts. (--udf_library, which loads code, is left out.)
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/train_flags.h"
#include "runtime/train/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find("udf_library") != std::string::npos) return 0;
  const std::vector<std::string> args = absl::StrSplit(text, '\n', absl::SkipEmpty());
  fg::cli::FlagSet flags("train", "fuzz");
  fg::cli::AddTrainFlags(&flags);
  if (!flags.Parse(args).ok() || flags.help_requested()) return 0;
  auto config = fg::cli::RunConfigFromFlags(flags);
  if (!config.ok()) return 0;
  auto resolved = fg::runtime::ResolveConfig(*config);
  if (!resolved.ok()) return 0;
  if (!fg::runtime::ValidateConfig(*resolved).ok()) __builtin_trap();
  return 0;
}
