// libFuzzer target: .npy parsing. Any input gives a tensor whose byte size matches, or a Status.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "flexgraph/graph/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = fg::graph::io::ParseNpy(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  if (t.ok() && t->nbytes() > size) __builtin_trap();
  return 0;
}
