// Metapaths over a heterogeneous graph: parsing readable names ("M-D-M", "movie-director-movie"),
// validating them against the dataset's node types and relations, and enumerating the metapath
// instances of a vertex — exactly, or as a seeded uniform sample when there are too many. Used by
// INHA models (MAGNN) whose NeighborSelection writes one HDG group per (root, metapath).
//
// Syntax. A metapath is node types joined by '-': each token is a full node type name or a unique
// prefix of one (case-insensitive), so with types {movie, director, actor} "M-D-M", "m-dir-m" and
// "movie-director-movie" name the same metapath. Each step between two consecutive types walks
// the single relation joining them, in whichever direction it connects them (forward src -> dst
// through by_src, or backward dst -> src through by_dst). A list separates metapaths with ',', ';'
// or whitespace ("M-D-M,M-A-M"); "auto" names the defaults of DefaultMetapaths().
//
//   FG_ASSIGN_OR_RETURN(std::vector<Metapath> mps, ParseMetapathList("M-D-M,M-A-M", graph));
//   MetapathEnumerator walk(&graph, &space, mps);
//   walk.Enumerate(/*m=*/0, /*start=*/movie, /*max_instances=*/100, &rng, &ids);
//
// Instances are walks: a vertex may repeat (M-D-M includes m-d-m, the movie itself), as in MAGNN.
// Thread-safety: Metapath is a value type; a built MetapathEnumerator is immutable and its const
// methods may run concurrently (each caller passes its own RandomStream).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/graph/hetero_graph.h"
#include "hdg/schema.h"
#include "nau/context.h"

namespace fg::nau {

// One step of a metapath: relation `relation` (index into HeteroGraph::relations) walked from
// its source type to its destination type (forward) or back.
struct MetapathStep {
  int relation = -1;
  bool forward = true;
};

struct Metapath {
  std::string name;             // canonical: type initials when they are unique, e.g. "M-D-M"
  std::vector<int> node_types;  // indices into HeteroGraph::node_types, length() entries
  std::vector<MetapathStep> steps;  // length() - 1 entries

  int length() const { return static_cast<int>(node_types.size()); }
  int start_type() const { return node_types.front(); }
  hdg::MetapathType SchemaType() const { return {name, length()}; }
  // "movie -directed_by-> director <-directed_by- movie".
  std::string Describe(const graph::HeteroGraph& g) const;
};

// Parses one metapath. Errors name the metapath and the offending token or step: an unknown or
// ambiguous type, fewer than two types, a step matching no relation or several.
absl::StatusOr<Metapath> ParseMetapath(const std::string& text, const graph::HeteroGraph& g);
// Parses a list (separators ',', ';', whitespace) or "auto". Duplicates are an error.
absl::StatusOr<std::vector<Metapath>> ParseMetapathList(const std::string& text,
                                                        const graph::HeteroGraph& g);

// MAGNN's choice of metapaths, derived from the schema: for every node type T, T-X-T for each
// other type X related to T, then T-X-Y-X-T for each type Y not in {T, X} related to X.
// IMDB: M-D-M, M-A-M, D-M-D, D-M-A-M-D, A-M-A, A-M-D-M-A. Steps must be unambiguous (one
// relation per pair of types); pairs joined by several relations are skipped.
std::vector<Metapath> DefaultMetapaths(const graph::HeteroGraph& g);

// The canonical short name of node type t: its initial (upper case) when no other type shares
// it, else the full name.
std::string TypeToken(const graph::HeteroGraph& g, int t);

// A selection of metapath instances (INHA models such as MAGNN): every root writes, for each
// metapath of `by_type[its type]` in order, that metapath's instances starting at it
// (HdgBuilder::AddInstance with the metapath's index), all of them or, beyond max_instances, a
// uniform sample drawn from ctx.Rng(root), in MetapathEnumerator's order. A layer whose
// SelectNeighbors does exactly that returns it from Layer::Instances(): on a partitioned dataset
// the framework then expands the instances across the workers.
struct MetapathSelection {
  std::vector<Metapath> metapaths;
  std::vector<std::vector<int>> by_type;  // node type -> indices of the metapaths its roots expand
  int64_t max_instances = 0;              // 0: all
};

// Instance counts saturate here; sampling stays exact below it.
inline constexpr int64_t kMaxInstanceCount = int64_t{1} << 62;

// k distinct instance indices of [0, total), uniformly (Floyd's algorithm), ascending; k < total.
std::vector<int64_t> SampleInstanceIndices(int64_t total, int64_t k, RandomStream* rng);

class MetapathEnumerator {
 public:
  // Precomputes, per metapath, the number of instance suffixes at every vertex of every position
  // (counts saturate at 2^62; sampling stays exact below that). `space` maps local ids of each
  // type to the global ids the instances are written in. Both must outlive the enumerator.
  MetapathEnumerator(const graph::HeteroGraph* g, const VertexSpace* space,
                     std::vector<Metapath> metapaths);

  const std::vector<Metapath>& metapaths() const { return metapaths_; }
  // The number of instances of metapath m starting at local vertex `start` of its first type.
  int64_t Count(int m, int32_t start) const;
  // Appends the instances of metapath m starting at local vertex `start` to `out` as global
  // vertex ids, length() per instance, in depth-first (lexicographic neighbour) order. When
  // max_instances > 0 and there are more, appends a uniform sample without replacement of
  // max_instances of them (kept in depth-first order) drawn from `rng`. Returns the number of
  // instances appended.
  int64_t Enumerate(int m, int32_t start, int64_t max_instances, RandomStream* rng,
                    std::vector<int32_t>* out) const;
  // Metapath-based neighbours (HAN): appends the distinct end vertices of metapath m's instances
  // from local vertex `start` to `out` as global ids, ascending, and the number of instances
  // ending at each to `paths` when given. When max_neighbors > 0 and there are more, appends a
  // uniform sample without replacement of max_neighbors of them (ascending) drawn from `rng`.
  // Returns the number appended. Work: the distinct vertices reached at each position.
  int64_t Endpoints(int m, int32_t start, int64_t max_neighbors, RandomStream* rng,
                    std::vector<int32_t>* out, std::vector<int64_t>* paths = nullptr) const;

 private:
  // Neighbours of local vertex v at step s of metapath m (sorted local ids of the next type).
  std::span<const int32_t> Next(const Metapath& mp, int s, int32_t v) const;
  void Decode(int m, int32_t start, int64_t index, int32_t* path) const;

  const graph::HeteroGraph* g_;
  const VertexSpace* space_;
  std::vector<Metapath> metapaths_;
  // suffix_[m][i][v]: instances of the suffix of metapath m from position i at local vertex v.
  std::vector<std::vector<std::vector<int64_t>>> suffix_;
};

}  // namespace fg::nau
