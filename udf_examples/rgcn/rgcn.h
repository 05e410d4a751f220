// R-GCN (Schlichtkrull, Kipf, Bloem, van den Berg, Titov, Welling: "Modeling Relational Data with
// Graph Convolutional Networks", ESWC 2018) as NAU UDFs, over the typed relations of a
// heterogeneous graph, no metapaths. Every relation is used in both directions (forward src -> dst
// and the reverse; a symmetric relation once): each such relation-direction r carries messages into
// its receiving node type. One layer, for a vertex i:
//
//   h_i' = σ( h_i W_0 + b + Σ_r Σ_{j ∈ N_i^r} (1 / |N_i^r|) h_j W_r ),   W_r = Σ_b a_rb V_b,
//
// with B bases V_b (basis decomposition; B = R means full per-relation weights W_r = V_r). The
// basis products are computed once per layer on the input rows, P = h [V_1 .. V_B] ([n, out * B]),
// aggregated per relation, and mixed with the coefficients afterwards: B products, not R.
//
// In NAU form (the metapath HDG schema, one "metapath" of length 2 per relation-direction: the
// root and one in-neighbour along r; nau/metapath.h):
//   Message            dropout, then the basis products P = h [V_1 .. V_B] (column o B + b)
//   NeighborSelection  every (root, neighbour) pair of each relation-direction into the root
//   Level 1 (dense)    each instance takes its neighbour's row of P
//   Level 2 (sparse)   the mean per (root, relation-direction): declared Aggregator::Mean()
//   Level 3 (dense)    the relation mix Σ_r Σ_b a_rb mean_r[:, b]  (MixRelations)
//   Update             σ(dropout(h_i) W_0 + b + mix): ReLU on hidden layers, none on the last
// Node content enters through type-specific projections (nau::TypedInput; types without features
// by the `featureless` option). Hidden layers compute every vertex; the last layer only the target
// type's. The selection is declared (Layer::Instances()), so partitioned datasets train.
// Options (spec.options): num_bases (B; 0 or ≥ the layer's relation-directions: full weights),
// featureless (embedding|onehot).
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/graph/hetero_graph.h"
#include "nau/metapath.h"
#include "nau/model.h"
#include "nau/typed_input.h"

namespace fg::udf::rgcn {

// Model options (spec.options).
struct Options {
  int64_t num_bases = 2;  // 0: full per-relation weights
  nau::Featureless featureless = nau::Featureless::kEmbedding;

  static absl::StatusOr<Options> FromSpec(const nau::ModelSpec& spec);
};

// Every relation of `g` as relation-directions, each a length-2 metapath from the receiving vertex
// (the root) to its neighbour: relation k gives (dst <-k- src) then, unless it is symmetric,
// (src -k-> dst). Names are Metapath::Describe's, e.g. "author <-written_by- paper".
std::vector<nau::Metapath> RelationDirections(const graph::HeteroGraph& g);

// The number of bases a layer over `relations` relation-directions uses for option `num_bases`:
// num_bases, or `relations` (full weights) when num_bases is 0 or not smaller.
int64_t EffectiveBases(int64_t num_bases, int64_t relations);

// The relation mix of level 3. `means` is [R * n, out * B]: rows r n .. (r + 1) n hold the per-root
// means of the basis products along relation-direction r (column o B + b: output o of basis b);
// `coefficients` is [R, B]. Returns [n, out]:
//   out[i, o] = Σ_r Σ_b coefficients[r, b] means[r n + i, o B + b].
ag::Var MixRelations(const ag::Var& means, const ag::Var& coefficients, int64_t out);

// The registered model ("rgcn").
std::unique_ptr<nau::Model> MakeRgcn();

}  // namespace fg::udf::rgcn
