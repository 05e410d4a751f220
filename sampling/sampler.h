// Mini-batch sampling: each batch of seed vertices becomes one HDG per layer (a Block), which the
// NAU layers and the hybrid executor run as they run the whole graph's. Three samplers:
//   node-wise (GraphSAGE): each root keeps `fanout` of its neighbours, uniformly without
//     replacement;
//   layer-wise (LADIES): each batch keeps `layer_size` vertices per layer, drawn with probability
//     proportional to the squared weights of their edges into the batch's roots; every root keeps
//     its edges into them, importance-weighted;
//   ShaDow (Zeng et al. 2021): each root's k-hop neighbourhood, drawn hop by hop as node-wise
//     sampling draws it (fanouts[h] of each vertex new at hop h, 0: all), taken as the subgraph it
//     induces (every edge among its vertices); the batch is the block-diagonal union of its roots'
//     subgraphs (a vertex in two of them is two rows), and every layer of the model runs on it, so
//     that the model's depth is independent of k (sampling/shadow.cc).
// Sampling runs in bulk (CAGNET): K batches at once, per layer one product Q·A of the stacked
// frontiers' selection matrix Q with the layer's neighbourhood matrix A (Q has one 1 per row, so
// the product is A's rows, extracted in one parallel pass), then sampling, then per batch the next
// frontier, built from the sampled rows while the rest are drawn. Randomness is counter-based,
// keyed by (seed, epoch, batch number, layer, vertex): a batch is the same whatever K and the
// thread count.
//
// Weights: where A is weighted (GCN's normalised adjacency, PinSage's visit counts), node-wise
// sampling scales a root's kept weights by degree / fanout and layer-wise sampling by the
// importance ratio, then rescales each row to its full sum, so that a sampled weighted sum
// estimates the full one and full-graph inference matches training. Mean aggregations need no
// scaling; unweighted sums add the sampled neighbours (as DGL and PyG do).
//
//   auto batches = EpochBatches(train_ids, 1024, seed, epoch);
//   FG_ASSIGN_OR_RETURN(auto bulk, SampleBulk(matrices, options, epoch, 0, {batches.begin(),
//                                                                             batches.begin() + 8}));
//   // bulk[k].blocks[l]: layer l's input rows (global ids) and HDG.
//
// On a GPU, sampling/device_sampler.h draws the rows there (the same draws: pick.h, layer_pick.h).
//
// A distributed run over a partitioned dataset (runtime/distributed/distributed_sampling.h) samples with the
// same steps: SampleBlocks takes the layer step from its caller, which sends the frontier vertices
// of other parts to their owners; the owners draw them with SampleRows under the same keys. A
// LADIES batch is drawn whole by one worker, with SampleLayerWiseRows over rows gathered from
// their owners.
//
// Thread-safety: NeighbourhoodMatrix is immutable; SampleBulk, SampleRows, SampleLayerWiseRows and
// SampleBlocks are reentrant.
//
// ShaDow batches: the table is [the roots | root 0's other vertices | root 1's | ...], every
// block's table is all of it; every layer's roots are all of its rows, except the last layer's,
// which are the seeds (or, pooled, all rows again, read out by MiniBatch::readout: a root's output
// plus the mean of its subgraph's). A layer's induced rows keep the entries of its matrix among
// the subgraph's vertices in stored order, weights rescaled to the row's full sum as node-wise
// sampling rescales them. Root j of batch b draws its hops as node-wise sampling draws layer h of
// batch ShadowDrawBatch(b, the root's key): each root's sample of a shared vertex is its own.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hdg/hdg.h"

namespace fg::sampling {

enum class SamplerKind { kNodeWise, kLayerWise, kShadow };
// "neighbor" (node-wise, GraphSAGE), "ladies" (layer-wise) or "shadow" (ShaDow subgraphs).
bool ParseSamplerKind(const std::string& name, SamplerKind* out);
const char* SamplerKindName(SamplerKind kind);

struct SamplerOptions {
  SamplerKind kind = SamplerKind::kNodeWise;
  // Node-wise: neighbours kept per root, by hop from the seeds: fanouts[0] for the last layer (the
  // seeds' neighbours), fanouts[1] for the layer below, and so on. 0: all of them.
  std::vector<int> fanouts;
  // Layer-wise: vertices drawn per batch and layer (with replacement; distinct ones are kept).
  int64_t layer_size = 0;
  uint64_t seed = 0;
  // ShaDow: fanouts[h] of each vertex reached at hop h, from the root out (0: all); any number of
  // hops. Pooled: the model's output is read out as the root's plus the mean over its subgraph.
  enum class Pool { kNone, kMean };
  Pool pool = Pool::kNone;
};

// Sampler options beyond the fanouts and layer size, "key=value,..." (--sampler_opt): for the shadow
// sampler, pool=none|mean. Errors name the flag and the key.
absl::Status ParseSamplerOptions(const std::string& text, SamplerOptions* out);

// A layer's neighbourhood matrix A: its NeighborSelection over the whole graph, a flat-schema HDG
// whose level-1 children are global vertex ids, with the row of every global vertex.
class NeighbourhoodMatrix {
 public:
  // `num_vertices`: size of the global vertex space. `root_keys` (int64, one per root; undefined:
  // the roots' ids): the keys that sampling's randomness uses for each root, the source dataset's
  // ids where a partitioned dataset renumbers them. Errors: a schema that is not flat.
  static absl::StatusOr<NeighbourhoodMatrix> Create(hdg::HdgPtr hdg, int64_t num_vertices,
                                                    Tensor root_keys = Tensor());
  // Row of global vertex v (0 <= v < num_vertices()), -1 when v is not a root of the HDG.
  int64_t RowOf(int64_t v) const {
    if (!row_of_.empty()) return row_of_[v];
    const int64_t r = v - first_root_;
    return r >= 0 && r < num_roots_ ? r : -1;
  }
  // The keys of the rows (null: each row's key is its root's global id).
  const int64_t* keys() const { return keys_.defined() ? keys_.i64() : nullptr; }
  // RowOf's map: the row of every vertex, or null where the rows are the vertices
  // first_root() .. first_root() + num_roots() - 1.
  const int32_t* row_of() const { return row_of_.empty() ? nullptr : row_of_.data(); }
  int64_t first_root() const { return first_root_; }
  int64_t num_roots() const { return num_roots_; }
  // Sampling sees a row as its root's own entry first (where it has one), then the others in
  // stored order: a selection that places the root among its neighbours by id (GCN's Â) places
  // it differently where a partitioned dataset renumbers them, and the sample must not change.
  // Per row, the stored position of its own entry, -1 when it has none (null: no row has one).
  const int32_t* own_entries() const { return own_entry_.empty() ? nullptr : own_entry_.data(); }
  const Csr& csr() const { return hdg_->level(1).csr(); }
  const float* weights() const {
    return hdg_->level(1).weights.defined() ? hdg_->level(1).weights.f32() : nullptr;
  }
  const hdg::SchemaTree& schema() const { return hdg_->schema(); }
  int64_t num_vertices() const { return num_vertices_; }

 private:
  NeighbourhoodMatrix() = default;
  hdg::HdgPtr hdg_;
  int64_t num_vertices_ = 0;
  // The row of every global vertex; empty where the roots are the consecutive ids first_root_ ..
  // first_root_ + num_roots_ - 1 (a whole graph's, or a part's): no array over the vertex space.
  std::vector<int32_t> row_of_;
  int64_t first_root_ = 0, num_roots_ = 0;
  Tensor keys_;
  std::vector<int32_t> own_entry_;  // empty: no row holds its root
};

// One layer of a mini-batch: its input rows and its HDG over them.
struct Block {
  Tensor table;  // int64 [rows]: global ids of the layer's input rows; the first num_roots are
                 // its roots, in order (the next layer's input rows are this layer's roots)
  hdg::HdgPtr hdg;  // roots are table rows 0 .. num_roots - 1; level-1 children index the table
};

struct MiniBatch {
  int64_t index = 0;         // batch number within its epoch
  Tensor seeds;              // int64 global ids: the last layer's roots
  std::vector<Block> blocks;  // one per layer, bottom-up; blocks[0].table: the input rows
  int64_t sampled_edges = 0;  // HDG entries over all blocks
  // Set where the rows came from other workers (runtime/distributed/distributed_sampling.h): the input rows'
  // features (float [rows, f]) and the randomness keys (int64) of blocks[0].table's rows. Every
  // block's table is a prefix of blocks[0].table, so its keys are a prefix of these.
  Tensor inputs, keys;
  // ShaDow, pooled: [seeds x the last block's roots], the readout of the last layer's output (its
  // values the weights); num_rows 0 where the output is the seeds' rows as they are.
  Csr readout;
};

// One batch's sampled rows at one layer: row j keeps cols[offsets[j] .. offsets[j + 1]) (global
// ids), with weights when the matrix is weighted.
struct SampledRows {
  std::vector<int64_t> offsets;
  std::vector<int32_t> cols;
  std::vector<float> weights;
};

// The seed batches of `epoch`: `ids` (int64 global ids) in a random order keyed by (seed, epoch),
// cut into batches of `batch_size` (the last one may be smaller).
std::vector<Tensor> EpochBatches(const Tensor& ids, int64_t batch_size, uint64_t seed, int epoch);

// Samples batches first_index, first_index + 1, ... of `epoch`, whose seeds are `seeds`, for a
// model whose layer l selects neighbourhoods `layers[l]`. Errors name a seed or frontier vertex
// that has no row in its layer's matrix and options that do not fit the layers.
absl::StatusOr<std::vector<MiniBatch>> SampleBulk(
    const std::vector<const NeighbourhoodMatrix*>& layers, const SamplerOptions& options,
    int epoch, int64_t first_index, const std::vector<Tensor>& seeds);

// Told, from any thread, that stacked rows [begin, end) of a layer step's output are final: their
// cols and weights, and every group's offsets, stay as they are (in place) from then on. Group k's
// row j is stacked row sum(|rows of groups before k|) + j. Each row is told once at most.
using RowsReady = std::function<void(int64_t begin, int64_t end)>;

// Node-wise sampling of layer `layer` with `fanout` (0: every entry): group g draws the rows
// `rows[g]` of `a`, whose roots are the vertices `vertices[g]`, for batch number `batch[g]` into
// out[g]; each row is keyed by (seed, epoch, batch, layer, the row's key: a.keys()[row], or the
// vertex), so that a row gives the same sample wherever it is drawn. `ready` (optional) is told
// of every row as it is drawn.
void SampleRows(const NeighbourhoodMatrix& a, const SamplerOptions& options, int fanout, int epoch,
                int layer, const std::vector<int64_t>& batch,
                const std::vector<std::vector<int64_t>>& vertices,
                const std::vector<std::vector<int64_t>>& rows, std::vector<SampledRows>* out,
                const RowsReady& ready = nullptr);

// Rows of a neighbourhood matrix gathered from where they are held (another worker): row j holds
// cols[offsets[j] .. offsets[j + 1]) (global ids) in stored order, with their weights where the
// matrix is weighted; own[j] is the position of its root's own entry among them, -1 where it has
// none (NeighbourhoodMatrix::own_entries).
struct GatheredRows {
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> cols;
  std::vector<float> weights;
  std::vector<int32_t> own;
};

// Layer-wise (LADIES) sampling of layer `layer`: batch k (number batch[k]) draws `layer_size`
// columns over all of its rows, rows[k] of `a` (or of `gathered`, whose column ids are below
// `num_vertices`), in order, into out[k]; the same draws whichever holds the rows.
void SampleLayerWiseRows(const NeighbourhoodMatrix& a, const SamplerOptions& options, int epoch, int layer,
                         const std::vector<int64_t>& batch, const std::vector<std::vector<int64_t>>& rows,
                         std::vector<SampledRows>* out);
void SampleLayerWiseRows(const GatheredRows& gathered, int64_t num_vertices, const SamplerOptions& options,
                         int epoch, int layer, const std::vector<int64_t>& batch,
                         const std::vector<std::vector<int64_t>>& rows, std::vector<SampledRows>* out);

// The layer step of SampleBlocks: samples layer `layer` for every batch's frontier (global ids)
// into out[k] (one row per frontier vertex, in order), telling `ready` of the rows it has drawn
// where it can (blocks are built from them meanwhile; rows it does not tell of are used once it
// returns).
using FrontierSampler = std::function<absl::Status(
    int layer, const std::vector<std::vector<int64_t>>& frontier, std::vector<SampledRows>* out,
    const RowsReady& ready)>;
// SampleBulk's blocks with the layer step `sample` (`layers` give the schemas and the vertex
// space): per layer, from the seeds down, the sampled rows, then each batch's block and next
// frontier. Errors: those of `sample`.
absl::StatusOr<std::vector<MiniBatch>> SampleBlocks(const std::vector<const NeighbourhoodMatrix*>& layers,
                                                    int64_t first_index, const std::vector<Tensor>& seeds,
                                                    const FrontierSampler& sample);

// SampleBulk's shadow batches (options.kind kShadow): the vertex sets drawn on the last layer's
// matrix (the seeds'), each layer's subgraphs induced by its own matrix.
absl::StatusOr<std::vector<MiniBatch>> SampleShadowBulk(const std::vector<const NeighbourhoodMatrix*>& layers,
                                                        const SamplerOptions& options, int epoch,
                                                        int64_t first_index, const std::vector<Tensor>& seeds);

// ShaDow (sampler.h's header): the batch number under which the subgraph of root `root_key` (its
// matrix key, or its id) in batch `batch` draws its hops.
int64_t ShadowDrawBatch(int64_t batch, int64_t root_key);

// The hop step of ShadowVertexSets: for every group g, `fanout` entries (0: all) of the rows of
// vertices `frontier[g]`, drawn as SampleRows draws layer `hop` of batch draw[g], into out[g].
using HopSampler = std::function<absl::Status(int hop, int fanout, const std::vector<int64_t>& draw,
                                              const std::vector<std::vector<int64_t>>& frontier,
                                              std::vector<SampledRows>* out)>;
// The vertex sets of ShaDow subgraphs: set g is roots[g], then per hop the vertices its frontier's
// draws reach that it does not hold yet, in order of first appearance (the next hop's frontier).
// Vertex ids lie below `num_vertices`. Errors: those of `sample`.
absl::StatusOr<std::vector<std::vector<int64_t>>> ShadowVertexSets(const std::vector<int>& fanouts,
                                                                   int64_t num_vertices,
                                                                   const std::vector<int64_t>& draw,
                                                                   const std::vector<int64_t>& roots,
                                                                   const HopSampler& sample);

// Where a layer's rows are read for the induced subgraphs: the CSR arrays (a matrix's, or
// GatheredRows'), and per stacked vertex of the vertex sets its row in them.
struct InducedRows {
  const int64_t* row_ptr = nullptr;
  const int32_t* col = nullptr;
  const float* weights = nullptr;  // null: unweighted
  std::vector<int64_t> row;
};
// Gives layer l's InducedRows for the stacked vertices `vertices` (set 0's, then set 1's, ...).
using InducedRowsSource = std::function<absl::Status(int layer, const std::vector<int64_t>& vertices,
                                                     InducedRows* out)>;
// ShaDow batches from their roots' vertex sets (sets[g], g = batch k's root j in stacked order) and
// each layer's rows (asked once per distinct matrix of `layers`). Errors: those of `rows`.
absl::StatusOr<std::vector<MiniBatch>> ShadowBatches(const std::vector<const NeighbourhoodMatrix*>& layers,
                                                     const SamplerOptions& options, int64_t first_index,
                                                     const std::vector<Tensor>& seeds,
                                                     const std::vector<std::vector<int64_t>>& sets,
                                                     const InducedRowsSource& rows);

}  // namespace fg::sampling
