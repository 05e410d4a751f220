// Locality-improving vertex relabelings for square (graph) Csr matrices. Gathering neighbour rows
// (SpMM, GatherRows) is latency-bound when neighbours are scattered over a feature matrix larger
// than the cache; relabeling so that vertices used together sit close together turns part of those
// gathers into cache hits. Each ordering returns a permutation `new_id` (new_id[old] = new);
// PermuteCsr applies it to a graph and ops::GatherRows(x, InversePermutation(new_id)) to features.
// All functions are deterministic and thread-safe (no shared state).
//
//   std::vector<int32_t> new_id = graph::RcmOrder(adj);
//   Csr adj2 = graph::PermuteCsr(adj, new_id);
//   Tensor x2 = ops::GatherRows(x, Tensor::FromVector(graph::InversePermutation(new_id)));
#pragma once

#include <cstdint>
#include <vector>

#include "flexgraph/tensor/csr.h"

namespace fg::graph {

// Vertices by decreasing degree (ties by old id): hubs, gathered most often, share cache lines and
// pages at the front.
std::vector<int32_t> DegreeSortOrder(const Csr& adj);

// Reverse Cuthill-McKee: breadth-first from a minimum-degree vertex of each component, neighbours
// visited by increasing degree, the whole order reversed. Neighbours of a vertex get nearby ids, so
// consecutive output rows gather overlapping rows. Treats adj as undirected (expects it symmetric).
std::vector<int32_t> RcmOrder(const Csr& adj);

// old = inverse[new] for a permutation new = perm[old].
std::vector<int32_t> InversePermutation(const std::vector<int32_t>& perm);

// The graph relabeled: entry (r, c) becomes (new_id[r], new_id[c]); rows sorted by column, values
// carried along. Requires a square Csr and a permutation of its rows.
Csr PermuteCsr(const Csr& adj, const std::vector<int32_t>& new_id);

}  // namespace fg::graph
