// Contexts handed to NAU user functions. SelectContext: read-only topology, the vertex space and a
// counter-based random stream per root (so sampled HDGs never depend on threads or partitioning).
// LayerContext: what Message/Aggregation/Update see (training flag, epoch, seed, the global ids of the
// vertex-table rows for dropout masks). Thread-safety: SelectContext is shared by selection threads
// (const); LayerContext is used by one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "flexgraph/autograd/var.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/tensor/csr.h"
#include "nau/exec_stats.h"

namespace fg::nau {

// The unified vertex space of a (possibly heterogeneous) graph: node types laid out one after the
// other; global id = type_offset(type) + local id.
class VertexSpace {
 public:
  VertexSpace() = default;
  explicit VertexSpace(const graph::HeteroGraph& g);
  int64_t size() const { return offsets_.empty() ? 0 : offsets_.back(); }
  int num_types() const { return static_cast<int>(types_.size()); }
  const std::string& type_name(int t) const { return types_[t]; }
  int TypeIndex(const std::string& name) const;  // -1 when absent
  int64_t type_offset(int t) const { return offsets_[t]; }
  int64_t type_size(int t) const { return offsets_[t + 1] - offsets_[t]; }
  int TypeOf(int64_t global) const;

 private:
  std::vector<std::string> types_;
  std::vector<int64_t> offsets_;
};

// What a selection UDF sees. On one part of a partitioned dataset (Dataset::part) a worker holds
// only its own vertices' in-edges: InNeighbors and InDegree of other vertices are then unavailable
// (InDegree of a foreign in-neighbour is), and a call for one is recorded and reported by the
// framework after selection (the layer must declare LocalSelection()).
class SelectContext {
 public:
  SelectContext(const graph::Dataset* dataset, const VertexSpace* space, uint64_t seed, int epoch,
                int layer)
      : dataset_(dataset), space_(space), seed_(seed), epoch_(epoch), layer_(layer) {}
  const graph::Dataset& dataset() const { return *dataset_; }
  const graph::HeteroGraph& graph() const { return dataset_->graph; }
  const VertexSpace& vertices() const { return *space_; }
  int epoch() const { return epoch_; }
  int layer() const { return layer_; }
  uint64_t seed() const { return seed_; }
  // The random stream of `root` (a global vertex id) for this epoch and layer, keyed by its id in
  // the source dataset, so that partitioning never changes what is sampled.
  RandomStream Rng(int64_t root) const { return StreamOf(SourceId(root)); }
  // The stream of the vertex whose source-dataset id is `source_id`.
  RandomStream StreamOf(int64_t source_id) const {
    return RandomStream(seed_, MixKey(0x5E1EC7, static_cast<uint64_t>(epoch_), layer_, source_id));
  }
  // Homogeneous graphs: in-neighbors of v (sorted by source-dataset id).
  std::span<const int32_t> InNeighbors(int32_t v) const {
    const Csr& a = dataset_->Adjacency();
    const int64_t row = v - first_row();
    if (row < 0 || row >= a.num_rows) {
      RecordForeign(v);
      return {};
    }
    return {a.col() + a.row_ptr()[row], static_cast<size_t>(a.degree(row))};
  }
  // Homogeneous graphs: the in-degree of v.
  int64_t InDegree(int32_t v) const;
  // A vertex id as the source dataset numbers it (the id itself unless the dataset is a part).
  int64_t SourceId(int64_t v) const;
  // The first vertex whose topology was asked for but is not held here (-1: none).
  int64_t foreign_vertex() const { return foreign_.load(); }

 private:
  int64_t first_row() const { return dataset_->part ? dataset_->part->begin(0) : 0; }
  void RecordForeign(int64_t v) const {
    int64_t none = -1;
    foreign_.compare_exchange_strong(none, v);
  }

  const graph::Dataset* dataset_;
  const VertexSpace* space_;
  uint64_t seed_;
  int epoch_, layer_;
  mutable std::atomic<int64_t> foreign_{-1};
};

class LayerContext {
 public:
  bool training = false;
  int epoch = 0;
  int layer = 0;
  uint64_t seed = 0;
  // Global ids (int64) of the vertex-table rows the layer's input covers; dropout keys on them.
  Tensor table_global_ids;
  // Global ids of this layer's roots (rows of its output). Both id lists live on the host.
  Tensor root_global_ids;
  // Device runs: (host ids, the same ids on the device) pairs that Dropout uses instead of copying
  // the ids per call.
  std::vector<std::pair<Tensor, Tensor>> placed_ids;
  // Stage timings (optional).
  ExecStats* stats = nullptr;
  // The layer input as a sparse matrix, when it is a constant, mostly-zero table (bag-of-words
  // features of layer 0), and its first `roots_sparse` rows when the layer's roots are those rows
  // (a mini-batch block); DropoutLinear uses them. Null otherwise.
  SparseMatrixPtr input_sparse, roots_sparse;
  // Set by the framework in distributed runs: sums a small Var over the workers, differentiably
  // (null: one process). Layers use the declared reductions below, never this directly.
  std::function<ag::Var(const ag::Var&)> sum_across_workers;
  // Edge-state layers (Layer::UpdatesEdges): the state per entry of `edge_matrix` (the level-1
  // structure of the last such layer's HDG: rows = roots, columns = vertex-table rows), read and
  // replaced by the executor. The model sets the initial state (Model::InitialEdgeState).
  ag::Var edge_state;
  SparseMatrixPtr edge_matrix;
  // Edge-state models: the Csr entries of spec.dataset (int32, ascending) that InitialEdgeState's
  // features and Head's rows are of, in that order; undefined: every entry. A vertex-sharded
  // worker's share of a batch (runtime/train/graph_batches.h).
  Tensor entries;
  // When set, the executor stores here the aggregated neighbourhood that Update reads (inference).
  ag::Var* capture_nbr = nullptr;

  // Declared reduction: the mean of x's rows, where x has one row per root of this layer on this
  // worker, over the roots of all workers ([n, d] -> [d]). The same in one process and many;
  // every worker makes the same calls in the same order, whatever roots it owns.
  ag::Var MeanOverRoots(const ag::Var& x) const;

  // Seed for dropout number `site` of this layer and epoch.
  uint64_t DropoutSeed(int site) const {
    return MixKey(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(layer), 0xD0 + site);
  }
  // Dropout number `site` of `x`, whose rows have the global ids `row_ids`: ag::Dropout with
  // DropoutSeed(site). A layer that drops the same rows with the same site twice in one pass (its
  // input as messages and again as its roots' own rows) gets the first result back: one mask,
  // one node for backward.
  ag::Var Dropout(const ag::Var& x, float p, int site, const Tensor& row_ids) const;
  // Whether Dropout(x, p, site, row_ids) would return a result already drawn in this pass.
  bool HasDropped(const ag::Var& x, float p, int site, const Tensor& row_ids) const;
  // Records that `out` is Dropout(x, p, site, row_ids) of this layer, drawn elsewhere (ahead, by
  // ops::Dropout with DropoutSeed(site) on another thread): Dropout returns it. x needs no gradient.
  void NoteDropped(const ag::Var& x, float p, int site, const Tensor& row_ids, const ag::Var& out) const;
  // The (p, site) of the dropouts of x by row_ids that this layer has drawn in this pass.
  std::vector<std::pair<float, int>> DropoutsOf(const ag::Var& x, const Tensor& row_ids) const;
  // `row_ids` on `device`: its placed copy (placed_ids) when there is one.
  Tensor PlacedIds(const Tensor& row_ids, Device device) const;
  // Records that `roots` are the rows `index` of `input` (undefined: its first rows; the executor's
  // gather of the layer's roots): dropping the roots by root_global_ids, once the input has been
  // dropped by table_global_ids with the same site, takes those rows of the dropped input (the
  // masks key on global ids, so they are the same) instead of drawing them again.
  void NoteRoots(const ag::Var& input, const ag::Var& roots, const Tensor& index) {
    roots_of_ = {layer, input, roots, index};
  }

 private:
  struct Dropped {
    int layer;
    uint64_t seed;
    int site;
    float p;
    ag::Var x, out;
    Tensor ids;
  };
  mutable std::vector<Dropped> dropped_;  // this layer's dropouts of this pass
  struct RootsOf {
    int layer = -1;
    ag::Var input, roots;
    Tensor index;
  };
  RootsOf roots_of_;
};

using UpdateContext = LayerContext;

}  // namespace fg::nau
