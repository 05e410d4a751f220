// libFuzzer target: a saved model's manifest (text-format flexgraph.SavedModel) and node lists
// (predict/embed --nodes). The first byte picks the parser. Anything accepted is consistent: a
// manifest is compatible with itself, node ids are in range.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/train/inference.h"
#include "runtime/train/saved_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto model = fg::runtime::ParseSavedModel(text, "fuzz/model.txtpb");
    if (model.ok() && !fg::runtime::CheckCompatible("fuzz", *model, *model).ok()) __builtin_trap();
  } else {
    const int64_t limit = data[0];
    auto nodes = fg::runtime::ParseNodeList(text, "fuzz/nodes.txt", limit);
    if (nodes.ok()) {
      for (int64_t v : *nodes) {
        if (v < 0 || v >= limit) __builtin_trap();
      }
    }
  }
  return 0;
}
