// libFuzzer target: the gzip byte source (multi-member streams, truncation, corrupt data).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "flexgraph/graph/io/file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto src = fg::graph::io::ByteSource::FromMemory(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.gz");
  char buf[4096];
  int64_t total = 0;
  while (true) {
    auto got = src->Read(buf, sizeof(buf));
    if (!got.ok() || *got == 0) break;
    total += static_cast<int64_t>(*got);
    if (total > (int64_t{64} << 20)) break;  // bound decompression bombs
  }
  return 0;
}
