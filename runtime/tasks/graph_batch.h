// Mini-batches of whole graphs of a graph-set dataset (graph_set.h): the block-diagonal union of
// B graphs, as PyG and DGL batch them, and the per-epoch shuffled batches of a split. The union is
// a Dataset of its own (homogeneous, one relation whose by_dst is the batch's in-edge Csr; by_src
// is left empty), so that neighbour selection and models run on it as on any dataset.
// Thread-safe: functions of their arguments.
//
//   for (const auto& ids : ShuffledBatches(gs.train, 32, seed, epoch)) {
//     GraphBatch b = BatchGraphs(dataset, ids);  // b.data->Adjacency(), b.entry_features, ...
//   }
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "flexgraph/graph/dataset.h"

namespace fg::runtime {

struct GraphBatch {
  // The dataset's graph ids in batch order: batch graph i is dataset graph graphs[i].
  std::vector<int64_t> graphs;
  // The union: graph i owns vertices [node_offsets[i], node_offsets[i + 1]) of data->graph and
  // original edges [edge_offsets[i], edge_offsets[i + 1]) of data->graphs (edges, entry_edges,
  // edge_feat, edge_labels renumbered; graph_labels one row per batch graph). The dataset itself
  // (no copy) when the batch is every graph in order (WholeSet).
  const graph::Dataset* data = nullptr;
  std::shared_ptr<const graph::Dataset> owned;
  // float [nnz, f]: the edge features of every entry of data->Adjacency() (a reversed entry has
  // its edge's features, an added self loop zeros), or undefined without edge features.
  Tensor entry_features;

  int64_t num_graphs() const { return static_cast<int64_t>(graphs.size()); }
};

// The union of graphs `ids` (each in [0, G), any order, no repeats) of a graph-set dataset.
GraphBatch BatchGraphs(const graph::Dataset& ds, const std::vector<int64_t>& ids);
// Every graph of `ds` in order, over the dataset itself.
GraphBatch WholeSet(const graph::Dataset& ds);

// Training-time augmentation of tracking events (requires graph/tracking.h's layout: HasTrackingLayout):
// each graph of `batch` becomes its mirror image in z, in phi, in both or in neither, as two bits
// drawn for (seed, epoch, its dataset graph id) say, so that a graph gets the same image on
// whichever worker takes it. The result shares `batch`'s structure and owns the negated features
// (node features, original edges' and entries' features).
GraphBatch ReflectEvents(const GraphBatch& batch, uint64_t seed, int epoch);

// The graph ids of `split` (int64, may be undefined = none) in an order drawn for (seed, epoch)
// from a counter-based stream (the same on every machine and thread count), cut into batches of
// `batch_size` (the last may be smaller; batch_size <= 0: one batch of all).
std::vector<std::vector<int64_t>> ShuffledBatches(const Tensor& split, int64_t batch_size,
                                                  uint64_t seed, int epoch);
// The graph ids of `split` in their order, in batches of `batch_size` (evaluation).
std::vector<std::vector<int64_t>> OrderedBatches(const Tensor& split, int64_t batch_size);

}  // namespace fg::runtime
