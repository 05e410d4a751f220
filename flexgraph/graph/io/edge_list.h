// SNAP-style edge lists ("src dst" per line, whitespace separated, '#' comment lines, an optional
// third column such as a weight or timestamp that is ignored; gzip or plain) and the .npy
// workload directory shared with the DGL/PyG baselines (indptr.npy, indices.npy, feat.npy,
// label.npy, {train,valid,test}_idx.npy, meta.json). Thread-safe: no shared state.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"

namespace fg::graph::io {

// A homogeneous dataset without features; nodes are 0 .. max id (ids are kept, not compacted).
absl::StatusOr<Dataset> LoadEdgeList(const std::string& path, const LoadOptions& options);

// True when `dir` holds indptr.npy.
bool IsNpyDirectory(const std::string& dir);
// Reads a homogeneous .npy workload (indptr/indices form the in-edge Csr as stored).
absl::StatusOr<Dataset> LoadNpyDirectory(const std::string& dir);
// Writes the .npy workload of a dataset: for a homogeneous graph the baseline layout above (the
// relation's by_dst Csr); a heterogeneous one gets <type>/{feat,label,*_idx}.npy and
// <relation key>/{indptr,indices,train_edges,valid_edges,test_edges}.npy.
absl::Status WriteNpyDirectory(const Dataset& ds, const std::string& dir, bool normalize_features);

}  // namespace fg::graph::io
