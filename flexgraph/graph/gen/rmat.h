// RMAT (recursive matrix) graph generator with the Graph500 parameters, for scale tests and
// benchmarks. Each edge is drawn from a counter-based Philox stream keyed by (seed, edge index), so
// the edge list is identical for any thread count; generation runs in parallel. Vertex ids are then
// relabeled by a seeded random permutation, as Graph500 does, so that high-degree vertices are not
// clustered at small ids. Thread-safe: functions have no shared state.
//
//   RmatOptions opt{.scale = 20, .edge_factor = 16, .seed = 7};
//   std::vector<Edge> edges = GenerateRmatEdges(opt);             // 16 * 2^20 directed edges
//   Csr adj = BuildSymmetricCsr(int64_t{1} << opt.scale, edges);  // undirected, no loops/dups
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "flexgraph/tensor/csr.h"

namespace fg::graph {

// A directed edge (source, destination).
using Edge = std::pair<int32_t, int32_t>;

struct RmatOptions {
  int scale = 16;        // 2^scale vertices, 1 <= scale <= 31
  int edge_factor = 16;  // edge_factor * 2^scale edges
  uint64_t seed = 1;
  // Quadrant probabilities (top-left, top-right, bottom-left); d = 1 - a - b - c.
  double a = 0.57, b = 0.19, c = 0.19;
  // Relabel vertices by a seeded random permutation (Graph500 does).
  bool permute = true;
};

// Generates edge_factor * 2^scale directed edges. Self loops and duplicates are kept (as in
// Graph500); BuildSymmetricCsr removes them. Edge k depends only on (options, k).
std::vector<Edge> GenerateRmatEdges(const RmatOptions& options);

// The seeded vertex relabeling GenerateRmatEdges applies when options.permute is set:
// new id = perm[old id]. Exposed for tests.
std::vector<int32_t> RmatVertexPermutation(int64_t num_nodes, uint64_t seed);

// An undirected graph as a square Csr: each edge (u, v) appears as u -> v and v -> u, self loops
// and duplicate edges are dropped, and each row's neighbours are sorted. Ids must lie in
// [0, num_nodes). Deterministic for any thread count.
Csr BuildSymmetricCsr(int64_t num_nodes, const std::vector<Edge>& edges);

}  // namespace fg::graph
