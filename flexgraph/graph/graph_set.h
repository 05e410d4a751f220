// GraphSet: the part of a Dataset that describes a collection of many graphs (the OGB
// graph-property layout, generated or read particle-tracking events). The Dataset's graph is then
// the block-diagonal union of all graphs, homogeneous ("node", "node___edge___node"), vertices and
// edges concatenated in graph order as PyG and DGL batch them: graph g owns the union's vertices
// [node_offsets[g], node_offsets[g + 1]) and its original edges [edge_offsets[g],
// edge_offsets[g + 1]). Because no edge crosses graphs, graph g's entries of the in-edge Csr
// (Dataset::Adjacency()) are the entries of its vertices' rows, [offsets[node_offsets[g]],
// offsets[node_offsets[g + 1]]). Node features and node labels stay in Dataset::features["node"]
// and Dataset::labels["node"], indexed by union vertex id.
//
// Edges keep their identity: edge k (0 <= k < M, the order of the source files) is `edges[k]`,
// its features `edge_feat[k]` and its label `edge_labels[k]`; `entry_edges` maps every entry of
// the Csr (with reverse edges added, duplicates and self loops dropped as the load options say)
// back to its original edge, so per-entry features are GatherEntryRows(edge_feat, entry_edges, M)
// (graph/builder.h). The relation's own edge_feat is left undefined for a graph set.
//
// Side tables for metrics (not model inputs): `node_info` holds named per-vertex columns and
// `particles` named per-particle columns (a particle = a truth object behind several vertices,
// e.g. the particle that left a detector hit), particle_offsets splitting them by graph like
// node_offsets. Tracking datasets fill the columns named by the constants below.
// Immutable after building; thread-safe for reads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/tensor/tensor.h"

namespace fg::graph {

struct Dataset;
struct LoadOptions;
struct HeteroGraph;

// Per-vertex columns (node_info) of tracking datasets: kHitParticle, int64, the hit's row of
// `particles` (a global row, -1 = noise); kHitLayer, int64, the detector layer (0 = innermost).
inline constexpr char kHitParticle[] = "particle";
inline constexpr char kHitLayer[] = "layer";
// Per-particle columns (particles) of tracking datasets.
inline constexpr char kParticleId[] = "particle_id";  // int64: id in the source (unique per graph)
inline constexpr char kParticlePt[] = "pt";           // float: transverse momentum, GeV
inline constexpr char kParticleEta[] = "eta";         // float: pseudorapidity at production
inline constexpr char kParticleHits[] = "num_hits";   // int64: hits the particle left in the graph

// Longest name of a node_info or particles column (names also exclude tabs and line breaks).
inline constexpr size_t kMaxColumnName = 64;

struct GraphSet {
  Tensor node_offsets;  // int64 [G + 1]: 0, ascending, last = the union's vertex count
  Tensor edge_offsets;  // int64 [G + 1]: 0, ascending, last = M
  Tensor edges;  // int64 [M, 2]: (source, destination) union vertex ids, both in the edge's graph
  // int64 [nnz of Dataset::Adjacency()]: per entry (row = destination r, column = source c), k when
  // original edge k is c -> r; M + k when the entry is edge k reversed (edge k is r -> c); -1 for
  // an added self loop.
  Tensor entry_edges;
  Tensor edge_feat;              // float [M, f] or undefined
  Tensor edge_labels;            // int64 [M] or [M, k] (k tasks); -1 = unlabeled; or undefined
  int64_t num_edge_classes = 0;  // max label + 1, or k for [M, k]
  // int64 [G] or [G, k] class labels (-1 = unlabeled), or float [G] / [G, k] regression targets
  // (NaN = missing); or undefined.
  Tensor graph_labels;
  int64_t num_graph_classes = 0;  // int64 labels: max + 1 or k; 0 for float targets
  // Whole graphs: train/valid/test hold int64 graph ids in [0, G) (valid/test may be empty).
  Tensor train, valid, test;
  std::map<std::string, Tensor> node_info;  // name -> int64 or float [N]
  Tensor particle_offsets;                  // int64 [G + 1], or undefined when no particles
  std::map<std::string, Tensor> particles;  // name -> int64 or float [P]

  int64_t num_graphs() const { return node_offsets.defined() ? node_offsets.numel() - 1 : 0; }
  int64_t num_edges() const { return edges.defined() ? edges.dim(0) : 0; }
  int64_t num_particles() const {
    return particle_offsets.defined() ? particle_offsets.i64()[particle_offsets.numel() - 1] : 0;
  }
  // Vertices / original edges of graph g.
  int64_t NodeBegin(int64_t g) const { return node_offsets.i64()[g]; }
  int64_t NodeEnd(int64_t g) const { return node_offsets.i64()[g + 1]; }
  int64_t EdgeBegin(int64_t g) const { return edge_offsets.i64()[g]; }
  int64_t EdgeEnd(int64_t g) const { return edge_offsets.i64()[g + 1]; }
  // The graph owning union vertex v (binary search).
  int64_t GraphOfNode(int64_t v) const;
  size_t Bytes() const;
};

// Builds the union graph of a graph set: `ds->graphs` must hold node_offsets, edge_offsets and
// edges (validated here: an edge outside its graph is an InvalidArgument error naming the edge
// and graph); fills ds->graph (homogeneous, built with the load options' reverse edges, self loops
// and deduplication) and ds->graphs->entry_edges.
absl::Status BuildGraphSetGraph(Dataset* ds, const LoadOptions& options);

// Checks every invariant stated above against ds.graph and ds.features/labels (array types,
// shapes, offsets, ids in range, entry_edges consistent with the Csr). Errors name the field.
absl::Status ValidateGraphSet(const Dataset& ds);

// Summary of graph sizes: count, min, median, mean, max of vertices and of edges per graph.
struct GraphSizeStats {
  int64_t graphs = 0;
  int64_t min_nodes = 0, median_nodes = 0, max_nodes = 0;
  int64_t min_edges = 0, median_edges = 0, max_edges = 0;
  double mean_nodes = 0, mean_edges = 0;
};
GraphSizeStats SizeStats(const GraphSet& gs);

}  // namespace fg::graph
