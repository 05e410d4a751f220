// Partitioned datasets: a graph split once into parts, so that each worker of a run reads only its
// own (`flexgraph partition --out DIR`, then `flexgraph launch --workers P -- train --dataset DIR`).
//
// DIR/partition.txtpb is the metadata (flexgraph.PartitionedDataset in text format: the vertex
// space, each node type's id bounds per part, the relations, the plan's summary); DIR/part-<p>.fgc
// holds part p (a binary dataset cache with graph::PartInfo: its vertices' features, labels, split
// members, source ids, and in- and out-edges). Vertices are renumbered so that every part owns one
// contiguous id range per node type; ownership is a search over the bounds. Thread-safe: no shared
// state.
//
//   FG_RETURN_IF_ERROR(WritePartitionedDataset(ds, plan, "../shared/data/cora", "cora-4"));
//   FG_ASSIGN_OR_RETURN(graph::Dataset mine, LoadPart("cora-4", rank));
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"
#include "partition/plan.h"
#include "proto/partition.pb.h"

namespace fg::partition {

inline constexpr int kPartitionFormatVersion = 1;

// Renumbers `ds` by `plan` (within each node type: by owner, then by id) and writes DIR, which
// must not exist or be empty; the metadata is written last, so an interrupted write is never taken
// for a partitioned dataset. `source` names the dataset in the metadata. A dataset that predicts
// links (one edge split, no labels) keeps its relation's training edges only, and each part the
// split's pairs whose source it owns (graph::PartInfo). Refuses edge features, which parts do not
// carry.
absl::Status WritePartitionedDataset(const graph::Dataset& ds, const PartitionPlan& plan,
                                     const std::string& source, const std::string& dir);

// True when `path` is a directory holding partition.txtpb.
bool IsPartitionedDataset(const std::string& path);

// The metadata of DIR, checked for consistency (bounds tile every type, one file per part).
absl::StatusOr<flexgraph::PartitionedDataset> ReadPartitionMeta(const std::string& dir);
// The same from the metadata's text; `where` names it in errors (file:line:column for syntax).
absl::StatusOr<flexgraph::PartitionedDataset> ParsePartitionMeta(const std::string& text,
                                                                 const std::string& where);

// Part `index` of DIR, checked against the metadata (vertex space, bounds, part index).
absl::StatusOr<graph::Dataset> LoadPart(const std::string& dir, int index);

// What `flexgraph info DIR` prints: parts, per part its vertices and in-edges, the edge cut.
std::string DescribePartitioned(const flexgraph::PartitionedDataset& meta);

}  // namespace fg::partition
