// libFuzzer target: SNAP edge lists (whitespace separated, '#' comments) parsed and built into a
// symmetric Csr, as LoadEdgeList does. The Csr must validate.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "flexgraph/graph/builder.h"
#include "flexgraph/graph/io/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fg::graph::io::CsvOptions o;
  o.whitespace = true;
  o.comment = '#';
  o.min_columns = 2;
  o.max_columns = 3;
  o.bounds = {{0, 4096, "node id"}};
  o.threads = 1;
  auto t = fg::graph::io::ParseCsv(std::string_view(reinterpret_cast<const char*>(data), size),
                                   "fuzz.txt", fg::graph::io::CsvType::kInt64, o);
  if (!t.ok()) return 0;
  std::vector<int64_t> src(t->rows), dst(t->rows);
  int64_t n = 0;
  for (int64_t k = 0; k < t->rows; ++k) {
    src[k] = t->values.i64()[k * t->cols];
    dst[k] = t->values.i64()[k * t->cols + 1];
    n = std::max({n, src[k] + 1, dst[k] + 1});
  }
  fg::graph::CsrBuildOptions bo{.deduplicate = true, .remove_self_loops = true, .add_reverse_edges = true};
  auto c = fg::graph::BuildCsr(n, n, dst.data(), src.data(), t->rows, nullptr, bo);
  if (!c.ok() || !c->Validate().ok()) __builtin_trap();
  return 0;
}
