// Multi-threaded parsing of numeric CSV and whitespace-separated text (OGB raw files, SNAP edge
// lists), gzip-compressed or plain. One thread inflates the file into chunks that end at a line
// break, `threads` parser threads parse chunks concurrently (hand-written integer and float
// parsers), and the chunks are concatenated in order, so the result is independent of the thread
// count. Errors (a missing file, a wrong column count, a non-numeric token, a value out of range,
// an empty file, a truncated gzip stream) are Status values naming the file and the 1-based line.
// Thread-safe: no shared state.
//
//   CsvOptions opt;
//   opt.columns = 2;
//   opt.bounds = {{0, num_nodes, "node id"}};
//   FG_ASSIGN_OR_RETURN(CsvTable edges, ReadCsv("raw/edge.csv.gz", CsvType::kInt64, opt));
//   const int64_t* e = edges.values.i64();  // [rows, 2], row-major
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/tensor/tensor.h"

namespace fg::graph::io {

enum class CsvType { kInt64, kFloat32 };

// Allowed range [lo, hi) of an integer column; `what` names the value in errors ("node id").
struct ColumnBounds {
  int64_t lo = std::numeric_limits<int64_t>::min();
  int64_t hi = std::numeric_limits<int64_t>::max();
  std::string what = "value";
};

struct CsvOptions {
  // Fields separated by runs of spaces and tabs (SNAP) instead of single commas.
  bool whitespace = false;
  // Lines whose first non-blank character is `comment` are skipped ('\0' = none).
  char comment = '\0';
  // Required number of columns; -1 accepts the first data line's count within
  // [min_columns, max_columns], and every line must then agree.
  int64_t columns = -1;
  int64_t min_columns = 1;
  int64_t max_columns = std::numeric_limits<int64_t>::max();
  // Integer columns only: one entry per column, or a single entry for all columns.
  std::vector<ColumnBounds> bounds;
  // Integer columns only: "nan" tokens (unlabeled nodes in OGB label files) become -1.
  bool nan_as_minus_one = false;
  // An input with no data lines is an error unless allowed (then the table has 0 rows).
  bool allow_empty = false;
  int threads = 0;                  // parser threads; 0 = NumThreads()
  size_t chunk_bytes = size_t{4} << 20;  // decompressed bytes per chunk
};

struct CsvTable {
  Tensor values;  // int64 or float32 [rows, cols], row-major; defined even when rows == 0
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t bytes = 0;  // decompressed bytes parsed
};

// Parses a file (gzip detected by its magic bytes). Blank lines are skipped; "\r\n" is accepted.
absl::StatusOr<CsvTable> ReadCsv(const std::string& path, CsvType type, const CsvOptions& options);
// Parses in-memory text (gzip or plain); `name` stands for the file in errors.
absl::StatusOr<CsvTable> ParseCsv(std::string_view text, const std::string& name, CsvType type,
                                  const CsvOptions& options);

// Splits small text files with string fields (OGB num-node-dict and triplet lists) into rows of
// trimmed fields; blank lines are skipped. `line_numbers` receives each row's 1-based line.
std::vector<std::vector<std::string>> SplitCsvText(std::string_view text,
                                                   std::vector<int64_t>* line_numbers = nullptr);

// Appends the shortest decimal text that reads back as exactly `v`.
void AppendFloat(std::string* out, float v);
void AppendInt(std::string* out, int64_t v);
// Formats a [rows, cols] int64/int32/float32 tensor (rank 1 = one column) as CSV text.
std::string FormatCsv(const Tensor& t);
// Writes FormatCsv(t) to `path`, gzip-compressed in parallel when the path ends with ".gz".
absl::Status WriteCsv(const std::string& path, const Tensor& t);

}  // namespace fg::graph::io
