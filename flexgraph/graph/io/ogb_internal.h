// Internal to the OGB raw layout reader and writer (ogb.cc, ogb_graphs.cc): the dataset directory
// context and the readers of count, row, label and split files they share. Not a public API.
// Thread-safe: no shared state.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/io/csv.h"
#include "flexgraph/graph/io/file.h"

namespace fg::graph::io::ogb_internal {

inline constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();
inline const char* const kParts[] = {"train", "valid", "test"};

// A dataset directory; `rel` paths are relative to it and name their .csv.gz or .csv file.
struct Ctx {
  std::string dir;
  int threads = 0;
  std::string Path(const std::string& rel) const { return ResolveCompressed(JoinPath(dir, rel)); }
  bool Has(const std::string& rel) const { return PathExists(Path(rel)); }
  CsvOptions Options(int64_t columns) const {
    CsvOptions o;
    o.columns = columns;
    o.threads = threads;
    return o;
  }
};

// A one-column file of non-negative counts (`what` names them in errors).
absl::StatusOr<std::vector<int64_t>> ReadCounts(const Ctx& ctx, const std::string& rel,
                                                const std::string& what);
// "<file>: has <rows> rows but <count_file>:1 says <expected> <what>".
absl::Status CountMismatch(const std::string& file, int64_t rows, const std::string& count_file,
                           int64_t expected, const std::string& what);
// Optional float matrix with exactly `n` rows (undefined when the file is absent).
absl::StatusOr<Tensor> ReadRows(const Ctx& ctx, const std::string& rel, int64_t n,
                                const std::string& count_rel, const std::string& what);
// Optional labels (int64, "nan" = -1); [n] for one column, [n, k] for k tasks.
absl::StatusOr<Tensor> ReadLabels(const Ctx& ctx, const std::string& rel, int64_t n,
                                  const std::string& count_rel, const std::string& what = "nodes");
// Classes of int64 labels: max + 1 for [n], k for [n, k].
int64_t NumClasses(const Tensor& labels);
// One split file: ids (1 column) or pairs (2 columns) within `bounds`; absent and not required:
// an empty tensor.
absl::StatusOr<Tensor> ReadSplitFile(const Ctx& ctx, const std::string& rel,
                                     std::vector<ColumnBounds> bounds, int64_t columns,
                                     bool required);
// The split directory name: the requested one, or the first (alphabetically) under split/; ""
// when there is none.
absl::StatusOr<std::string> ChooseSplit(const std::string& dir, const std::string& requested);
// Column c of an int64 [rows, cols] table.
std::vector<int64_t> Column(const Tensor& t, int c);
// Writes the defined parts as dir/{train,valid,test}.csv.gz.
absl::Status WriteSplit(const std::string& dir, const Tensor& train, const Tensor& valid,
                        const Tensor& test);
Tensor Scalar64(int64_t v);

// The graph-property layout (ogb_graphs.cc): true when raw/ holds several graphs, graph labels or
// edge labels.
bool IsGraphSetLayout(const Ctx& ctx, const std::vector<int64_t>& node_counts);
// Loads a graph set given the counts of raw/num-node-list and raw/num-edge-list.
absl::StatusOr<Dataset> LoadGraphSet(const Ctx& ctx, const LoadOptions& options,
                                     const std::vector<int64_t>& node_counts,
                                     const std::vector<int64_t>& edge_counts);
// Writes a graph set's raw/ and split/ files under `dir`.
absl::Status WriteGraphSet(const Dataset& ds, const std::string& dir);

}  // namespace fg::graph::io::ogb_internal
