// The OGB raw layout, read and written exactly as OGB distributes it (gzip CSV without headers):
//
//   homogeneous                          heterogeneous
//   raw/num-node-list.csv.gz             raw/num-node-dict.csv.gz (header row of types, then counts)
//   raw/num-edge-list.csv.gz             raw/triplet-type-list.csv.gz (src,rel,dst rows)
//   raw/edge.csv.gz (src,dst rows)       raw/relations/<src>___<rel>___<dst>/{edge,num-edge-list,
//   raw/node-feat.csv.gz                                                      edge-feat}.csv.gz
//   raw/node-label.csv.gz                raw/node-feat/<type>/node-feat.csv.gz
//   raw/edge-feat.csv.gz                 raw/node-label/<type>/node-label.csv.gz
//   split/<name>/{train,valid,test}.csv.gz   split/<name>/<type or relation key>/{train,...}.csv.gz
//
// Split files with one column are node ids; with two columns, (src, dst) pairs of a link-prediction
// split (homogeneous: directly under split/<name>/ or under split/<name>/node___edge___node/).
// Several graphs in num-node-list (graph-level datasets) load as their disjoint union. Plain .csv
// files are accepted where .csv.gz is missing. Thread-safe: no shared state.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"

namespace fg::graph::io {

// True when `dir` looks like an OGB raw dataset (raw/num-node-list or raw/num-node-dict exists).
bool IsOgbDirectory(const std::string& dir);

// Loads a homogeneous or heterogeneous dataset. Homogeneous edges follow options (reverse edges,
// self loops, deduplication); heterogeneous relations keep their edges as listed (sorted per row).
absl::StatusOr<Dataset> LoadOgb(const std::string& dir, const LoadOptions& options);

// Writes `ds` in the OGB raw layout under `dir` (created). A symmetric relation is written with
// each undirected edge once (u <= v).
absl::Status WriteOgb(const Dataset& ds, const std::string& dir);

}  // namespace fg::graph::io
