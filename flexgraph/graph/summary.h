// A dataset's vital statistics for `flexgraph info` and run logs: node counts per type, edges per
// relation with degree statistics, feature dimensions, label histograms, split sizes and memory;
// for a dataset of many graphs also the graphs' size distribution, edge and graph labels, the
// split of graphs and, for tracking datasets, the graph construction's efficiency and purity.
// Thread-safe: no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/graph_set.h"
#include "flexgraph/graph/tracking.h"

namespace fg::graph {

struct DegreeStats {
  int64_t min = 0, max = 0, median = 0, zeros = 0;  // zeros: rows without entries
  double mean = 0;
};
DegreeStats ComputeDegreeStats(const Csr& csr);

struct NodeTypeSummary {
  std::string name;
  int64_t nodes = 0;
  int64_t feature_dim = 0;  // 0 when the type has no features
  int64_t classes = 0;
  std::vector<int64_t> label_counts;  // per class
  int64_t unlabeled = 0;
  int64_t train = 0, valid = 0, test = 0;
  bool has_split = false;
};

struct RelationSummary {
  std::string key;
  int64_t edges = 0;  // entries of by_src (a symmetric relation counts both directions)
  bool symmetric = false;
  DegreeStats out_degree, in_degree;
  int64_t edge_feature_dim = 0;
  int64_t train = 0, valid = 0, test = 0;
  bool has_split = false;
};

// A dataset of many graphs (Dataset::graphs).
struct GraphSetSummary {
  GraphSizeStats sizes;  // vertices and original edges per graph
  int64_t edge_feature_dim = 0;
  int64_t edge_classes = 0, graph_classes = 0;
  std::vector<int64_t> edge_label_counts, graph_label_counts;  // per class (single-task labels)
  bool graph_targets = false;  // real-valued graph labels
  int64_t train = 0, valid = 0, test = 0;  // graphs
  int64_t particles = 0;
  // Tracking datasets: MeasureConstruction over all graphs at pT > 1 GeV.
  std::optional<ConstructionQuality> construction;
  // True edges dropped by filter stages (edge_filter.h), or -1 for a set never filtered.
  int64_t dropped_true_edges = -1;
};

struct DatasetSummary {
  std::string name, split_name;
  std::vector<NodeTypeSummary> types;
  std::vector<RelationSummary> relations;
  std::optional<GraphSetSummary> graph_set;
  int64_t graph_bytes = 0, feature_bytes = 0, total_bytes = 0;

  std::string ToText() const;  // human-readable, one item per line
  std::string ToJson() const;  // one JSON object
};

DatasetSummary Summarize(const Dataset& ds);

}  // namespace fg::graph
