// libFuzzer target: the CSV parser (OGB files). The first byte picks integer or float values,
// a fixed or free column count, bounds, and a tiny chunk size with two parser threads so the
// chunked pipeline and its error merging run too. Any input must give a table or a Status.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "flexgraph/graph/io/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  fg::graph::io::CsvOptions o;
  o.columns = (mode & 1) ? 2 : -1;
  o.nan_as_minus_one = mode & 2;
  if (mode & 4) o.bounds = {{0, 1000, "node id"}};
  o.allow_empty = mode & 8;
  if (mode & 16) {
    o.threads = 2;
    o.chunk_bytes = 64;
  } else {
    o.threads = 1;
  }
  const auto type = (mode & 32) ? fg::graph::io::CsvType::kFloat32 : fg::graph::io::CsvType::kInt64;
  auto t = fg::graph::io::ParseCsv(text, "fuzz.csv", type, o);
  if (t.ok() && t->rows * t->cols != t->values.numel()) __builtin_trap();
  return 0;
}
