// The dataset a run trains on: the one loaded, or the homogeneous view of one node type of a
// heterogeneous dataset (DatasetConfig.homogeneous_view), so that homogeneous models (GCN, SAGE,
// GIN) train on heterogeneous data: vertices of the target type, an edge u - v wherever a listed
// metapath instance starts at u and ends at v (u != v), the type's features, labels and split.
// The trainer, the coordinator and `flexgraph partition` all apply it. Thread-compatible.
#pragma once

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"
#include "proto/config.pb.h"

namespace fg::runtime {

// `ds` itself when the config asks for no view; errors name the metapath or the type.
absl::StatusOr<graph::Dataset> ApplyView(graph::Dataset ds, const flexgraph::DatasetConfig& config);

}  // namespace fg::runtime
