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
//
// The graph-property layout (a dataset of many graphs, Dataset::graphs, graph_set.h) is a
// homogeneous directory whose num-node-list lists several graphs, or that has raw/graph-label or
// raw/edge-label:
//   raw/num-node-list.csv.gz, raw/num-edge-list.csv.gz   one row per graph
//   raw/edge.csv.gz        src,dst rows, graph after graph, ids local to their graph (as OGB does)
//   raw/node-feat.csv.gz   [N, f] float (optional)     raw/node-label.csv.gz  [N] or [N, k] (optional)
//   raw/edge-feat.csv.gz   [M, f] float (optional)     raw/edge-label.csv.gz  [M] or [M, k] (optional)
//   raw/graph-label.csv.gz [G] or [G, k]: integers (classes, nan = -1) or reals (regression targets)
//   split/<name>/{train,valid,test}.csv.gz             graph ids in [0, G)
// Its graph is the block-diagonal union (local ids shifted by each graph's first vertex); its edges
// follow the load options like a single graph's, and keep their file order as edge ids. Errors name
// the file, the line and the graph (an edge naming a node beyond its graph's node count).
// Plain .csv files are accepted where .csv.gz is missing. Thread-safe: no shared state.
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
// each undirected edge once (u <= v). A graph set is written in the graph-property layout with its
// original edges in order (its node_info and particle tables are not part of the layout and are
// left out; the binary cache keeps them).
absl::Status WriteOgb(const Dataset& ds, const std::string& dir);

}  // namespace fg::graph::io
