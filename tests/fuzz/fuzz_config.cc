// libFuzzer target: run configurations (a RunConfig in text format, then resolution against the
// registered models and their declared options). Any input gives a Status or a configuration
// that validates; nothing aborts.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/train/checkpoint.h"
#include "runtime/train/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = fg::runtime::ParseConfigText(text, "fuzz.cfg");
  if (!parsed.ok()) return 0;
  auto resolved = fg::runtime::ResolveConfig(*parsed);
  if (!resolved.ok()) return 0;
  if (!fg::runtime::ValidateConfig(*resolved).ok()) __builtin_trap();
  (void)fg::runtime::ModelSpecFrom(*resolved);
  (void)fg::runtime::IdentityOf(*resolved, 1);
  return 0;
}
