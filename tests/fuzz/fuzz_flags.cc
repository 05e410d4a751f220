// libFuzzer target: `train`'s command line. The input is the arguments, one per line; parsing,
// the flags' mapping onto the RunConfig and its resolution give a Status or a configuration that
// validates — nothing aborts. (--udf_library, which loads code, is left out.) A line
// `--exchange=V` is launch's and worker's flag instead: V parses to a Status or a mode or grid,
// and a grid resolves for 1 to 64 workers to a Status or a shape that covers them exactly.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/train_flags.h"
#include "runtime/distributed/exchange.h"
#include "runtime/train/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find("udf_library") != std::string::npos) return 0;
  const std::vector<std::string> args = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (!args.empty() && args[0].rfind("--exchange=", 0) == 0) {
    fg::runtime::ExchangeMode mode;
    fg::grid::GridSpec grid;
    if (!fg::runtime::ParseExchange(args[0].substr(11), &mode, &grid).ok() || !grid.active()) return 0;
    for (int p = 1; p <= 64; ++p) {
      auto shape = fg::grid::ResolveGridSpec(grid, p);
      if (!shape.ok()) continue;
      const bool covers = shape->scheme == fg::grid::GridScheme::kOnePointFiveD
                              ? p % (shape->c * shape->c) == 0
                              : shape->pr * shape->pc * shape->pf == p && shape->pr > 0 && shape->pc > 0 && shape->pf > 0;
      if (!covers) __builtin_trap();
    }
    return 0;
  }
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
