// Writing CSV (csv.h: AppendFloat, AppendInt, FormatCsv, WriteCsv): shortest round-trip numbers,
// rows formatted in parallel blocks, gzip when the path ends with ".gz".
#include <algorithm>
#include <charconv>

#include "flexgraph/base/parallel.h"
#include "flexgraph/graph/io/csv.h"
#include "flexgraph/graph/io/file.h"

namespace fg::graph::io {

void AppendFloat(std::string* out, float v) {
  char buf[32];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, ptr);
}

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, ptr);
}

std::string FormatCsv(const Tensor& t) {
  const int64_t rows = t.rank() == 0 ? 1 : t.dim(0);
  const int64_t cols = rows == 0 ? 0 : t.numel() / rows;
  constexpr int64_t kBlock = 4096;
  const int64_t blocks = (rows + kBlock - 1) / kBlock;
  std::vector<std::string> parts(blocks);
  ParallelForDynamic(0, blocks, 1, [&](int64_t b) {
    std::string& s = parts[b];
    const int64_t lo = b * kBlock, hi = std::min(rows, lo + kBlock);
    for (int64_t r = lo; r < hi; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        if (c > 0) s.push_back(',');
        const int64_t k = r * cols + c;
        switch (t.dtype()) {
          case DType::kFloat32: AppendFloat(&s, t.f32()[k]); break;
          case DType::kInt32: AppendInt(&s, t.i32()[k]); break;
          case DType::kInt64: AppendInt(&s, t.i64()[k]); break;
        }
      }
      s.push_back('\n');
    }
  });
  size_t total = 0;
  for (const auto& p : parts) total += p.size();
  std::string out;
  out.reserve(total);
  for (const auto& p : parts) out += p;
  return out;
}

absl::Status WriteCsv(const std::string& path, const Tensor& t) {
  const std::string text = FormatCsv(t);
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    return WriteGzipFile(path, text);
  }
  return WriteStringToFile(path, text);
}

}  // namespace fg::graph::io
