// Dataset: a graph with per-type node features, labels and splits, as loaded from the OGB raw
// layout, SNAP edge lists, the binary cache, or made by a generator. Thread-safe for reads.
//
//   FG_ASSIGN_OR_RETURN(Dataset ds, LoadDataset("../shared/data/cora", {}));
//   FG_ASSIGN_OR_RETURN(Dataset sbm, LoadDataset("sbm:nodes=20000,classes=8,features=64", {}));
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/hetero_graph.h"

namespace fg::graph {

struct Split {
  Tensor train, valid, test;  // int64 node ids of one node type (valid may be empty)
};

// Link-prediction split of one relation: int64 [k, 2] (src, dst) pairs.
struct EdgeSplit {
  Tensor train, valid, test;
};

struct Dataset {
  std::string name;
  HeteroGraph graph;
  std::map<std::string, Tensor> features;  // node type -> float [n, f]
  std::map<std::string, Tensor> labels;    // node type -> int64 [n] (-1 = unlabeled); [n, k] for
                                           // k-task datasets (then num_classes = k)
  std::map<std::string, int64_t> num_classes;  // node type -> classes
  std::string split_name;
  std::map<std::string, Split> splits;          // node type -> split
  std::map<std::string, EdgeSplit> edge_splits;  // relation key -> split

  // The homogeneous graph's in-edge Csr (rows = destinations); requires IsHomogeneous().
  const Csr& Adjacency() const { return graph.relations[0].by_dst; }
  // The node type that carries labels: the only labeled type, else "node" when labeled, else the
  // only type with a split.
  std::string LabeledType() const;
  size_t Bytes() const;
};

// Row normalisation (Kipf & Welling) for non-negative features such as bag-of-words: divides each
// row of every non-negative feature matrix by its sum (rows summing to 0 stay). Returns the node
// types whose features have negative values and were left as they are.
std::vector<std::string> NormalizeFeatureRows(Dataset* dataset);

struct LoadOptions {
  // Split directory name under split/ ("" = the only one present).
  std::string split;
  // Homogeneous graphs: add reverse edges (undirected datasets list each edge once).
  bool add_reverse_edges = true;
  bool remove_self_loops = true;
  bool deduplicate = true;
  // Heterogeneous relations keep their edges as listed (both directions are always available as
  // by_src and by_dst). Binary cache directory ("" = none): the first load writes
  // <cache_dir>/<name>-<key>.fgc, keyed by the source files' sizes and mtimes and these options;
  // later loads read it.
  std::string cache_dir;
  int threads = 0;        // 0 = NumThreads()
};

// Loads a dataset directory (OGB raw layout, homogeneous or heterogeneous, or a .npy workload
// directory with indptr.npy), a SNAP edge list file, a binary cache file (*.fgc), or a generator
// spec (see gen/spec.h): "sbm:nodes=..,classes=..,features=..[,avg_degree=..,p_in=..,seed=..]"
// or "rmat:scale=..,edge_factor=..,features=..[,classes=..,seed=..]". Errors name the file and line.
absl::StatusOr<Dataset> LoadDataset(const std::string& path_or_spec, const LoadOptions& options);

}  // namespace fg::graph
