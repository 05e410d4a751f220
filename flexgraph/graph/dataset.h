// Dataset: a graph with per-type node features, labels and splits, as loaded from the OGB raw
// layout, SNAP edge lists, the binary cache, or made by a generator. Thread-safe for reads.
//
//   FG_ASSIGN_OR_RETURN(Dataset ds, LoadDataset("../shared/data/cora", {}));
//   FG_ASSIGN_OR_RETURN(Dataset sbm, LoadDataset("sbm:nodes=20000,classes=8,features=64", {}));
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/graph_set.h"
#include "flexgraph/graph/hetero_graph.h"

namespace fg::graph {

struct Split {
  Tensor train, valid, test;  // int64 node ids of one node type (valid may be empty)
};

// Link-prediction split of one relation: int64 [k, 2] (src, dst) pairs.
struct EdgeSplit {
  Tensor train, valid, test;
};

// The metadata file that marks a directory as a partitioned dataset.
inline constexpr char kPartitionedDatasetMeta[] = "partition.txtpb";

// One part of a partitioned dataset (partition/partitioned_dataset.h). Vertices are numbered so
// that every part owns one contiguous range of ids per node type, [bounds[t][p], bounds[t][p + 1]).
// A part's tables hold only its own rows: row k of a type's features and labels is vertex
// begin(t) + k, its splits list only its own vertices, and each relation holds the edges of its own
// vertices: by_dst row k the in-edges of destination begin(dst) + k, by_src row k the out-edges of
// source begin(src) + k. A row's neighbours keep the source dataset's order.
struct PartInfo {
  int index = 0;
  std::vector<std::vector<int64_t>> bounds;     // per node type: num_parts + 1 ascending ids
  std::map<std::string, Tensor> original_ids;   // node type -> int64 [owned]: source dataset ids
  std::map<std::string, int64_t> train_total;   // node type -> training vertices over all parts
  // Homogeneous graphs: the in-neighbours this part does not own (int64, ascending) and their
  // in-degrees (int64), for selections that weigh a neighbour by its degree.
  Tensor halo_ids, halo_in_degrees;
  // Edges of each relation over the whole graph (filled from the partitioned dataset's metadata).
  std::vector<int64_t> relation_edges;
  // Link prediction: the edge split's training pairs over all parts (relation key -> count). A
  // part's edge split holds the pairs whose source it owns, in the source dataset's ids (the task
  // keys its negative draws on them), and its relation only the training edges.
  std::map<std::string, int64_t> train_pairs_total;

  int num_parts() const { return bounds.empty() ? 0 : static_cast<int>(bounds[0].size()) - 1; }
  int64_t begin(int type) const { return bounds[type][index]; }
  int64_t end(int type) const { return bounds[type][index + 1]; }
  int Owner(int type, int64_t id) const;  // the part owning type-local `id`
  // int32 source-dataset ids of the owned vertices of `type`: the rows a table over all of the
  // type's vertices (a learned embedding) gives them, the same in every partitioning.
  Tensor SourceRows(const std::string& type) const;
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
  std::optional<PartInfo> part;                  // set for one part of a partitioned dataset
  // Set for a dataset of many graphs (graph_set.h): `graph` is then their block-diagonal union,
  // `splits` and `edge_splits` are empty and the split of whole graphs is graphs->train/valid/test.
  std::optional<GraphSet> graphs;

  // The homogeneous graph's in-edge Csr (rows = destinations, from part->begin(0) in a part);
  // requires IsHomogeneous().
  const Csr& Adjacency() const { return graph.relations[0].by_dst; }
  // The node type that carries labels: the only labeled type, else "node" when labeled, else the
  // only type with a split, else the destination type of the only edge split.
  std::string LabeledType() const;
  // What the dataset supervises: links when it has edge splits and no node labels.
  bool PredictsLinks() const { return labels.empty() && !edge_splits.empty(); }
  bool IsGraphSet() const { return graphs.has_value(); }
  size_t Bytes() const;
};

// Link prediction's message-passing graph: relation `key` rebuilt from its edge split's training
// pairs (deduplicated; a symmetric relation gets both directions, edge features are dropped), so
// that held-out links are never walked or aggregated over. Errors name the relation.
absl::Status KeepTrainingEdges(Dataset* dataset, const std::string& key);

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

// Loads a dataset directory (OGB raw layout, homogeneous or heterogeneous, including the
// graph-property layout of many graphs (io/ogb.h), a directory of TrackML event CSVs
// (io/trackml_csv.h), or a .npy workload directory with indptr.npy), a SNAP edge list file, a binary cache file (*.fgc), or a generator
// spec (see gen/spec.h): "sbm:nodes=..,classes=..,features=..[,avg_degree=..,p_in=..,seed=..]"
// or "rmat:scale=..,edge_factor=..,features=..[,classes=..,seed=..]". Errors name the file and line.
// "memory:NAME" is a dataset a program registered (RegisterMemoryDataset): loads share its
// tensors and ignore the options' cache.
absl::StatusOr<Dataset> LoadDataset(const std::string& path_or_spec, const LoadOptions& options);

// In-memory datasets (built from a program's arrays, such as the Python package's) that LoadDataset
// finds as "memory:NAME", so that they train, predict and embed through the same code as files.
// Registering a name again replaces its dataset. Thread-safe.
inline constexpr char kMemoryDatasetPrefix[] = "memory:";
void RegisterMemoryDataset(const std::string& name, Dataset dataset);
void UnregisterMemoryDataset(const std::string& name);

}  // namespace fg::graph
