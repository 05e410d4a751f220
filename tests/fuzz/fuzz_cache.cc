// libFuzzer target: the binary cache reader. Inputs of odd size skip the checksums so that
// mutations reach the structural checks (bounds, shapes, Csr validity, meta text).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "flexgraph/graph/io/cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view image(reinterpret_cast<const char*>(data), size);
  auto ds = fg::graph::io::ParseCache(image, "fuzz.fgc", /*verify_checksums=*/size % 2 == 0);
  if (ds.ok()) {
    // A parsed cache re-encodes and parses again to the same structure.
    const std::string again = fg::graph::io::EncodeCache(*ds);
    auto back = fg::graph::io::ParseCache(again, "again.fgc");
    if (!back.ok() || back->graph.relations.size() != ds->graph.relations.size()) __builtin_trap();
  }
  return 0;
}
