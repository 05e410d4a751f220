// Random-walk neighbour selection for PinSage (Ying et al., KDD 2018): from a root, `num_traces`
// walks of `n_hops` hops (each hop restarting at the root with probability `restart_prob`); the
// `top_k` most visited vertices other than the root become its neighbours, weighted by their visit
// counts. Ties in visit counts are broken by the smaller source-dataset id, so the selection is a
// function of the root's random stream alone.
//
// On a homogeneous graph one hop follows one in-edge. On a heterogeneous graph a typed walk such as
// "artist-user-artist" is a cycle of node types: one hop walks the whole cycle (artist -> user ->
// artist), and only the hop ends — vertices of the root's type — are counted (or, with
// count_all_types, every vertex a step reaches). A root of another
// type on the cycle walks the rotated cycle (a user root walks user -> artist -> user); roots of
// types off the cycle get no neighbours. Steps between consecutive types follow the relation that
// connects them (by_src or by_dst, whichever starts at the current type).
//
// On one part of a partitioned dataset a step reads the adjacency row of the current vertex only
// where it is held (its own vertices); elsewhere the walker stops and the framework ships it to the
// vertex's owner (nau/walk.h).
//
//   FG_ASSIGN_OR_RETURN(WalkPlan plan, WalkPlan::Make(dataset, space, "artist-user-artist", options));
//   nau::WalkLocally(plan, ctx, root, out);  // one process
//
// Immutable after Make(); safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/tensor/csr.h"
#include "nau/context.h"
#include "nau/walk.h"

namespace fg::udf {

struct WalkOptions {
  int num_traces = 10;
  int n_hops = 3;
  int top_k = 10;
  double restart_prob = 0.0;
  // Typed walks: count only hop ends, the vertices of the root's type (PinSage), or every vertex
  // a step reaches (then a user's neighbours include the artists it listens to).
  bool count_all_types = false;
  // Pad every root to exactly top_k neighbours with zero-weight entries (the root itself), for a
  // uniform arity the executor can run dense; the weighted mean is unchanged.
  bool pad = false;

  // Errors name the offending option: num_traces, n_hops and top_k must be >= 1, restart_prob in
  // [0, 1].
  absl::Status Validate() const;
};

class WalkPlan : public nau::WalkSelection {
 public:
  // `walk` empty: one hop follows one in-edge of the homogeneous graph (an error on heterogeneous
  // graphs). Otherwise a typed walk "t0-t1-...-t0" over the node types of `dataset`: the first and
  // last types must be the same, every type must exist and consecutive types must be connected by
  // exactly one relation; errors name the walk and the offending type or pair. A part of a
  // partitioned dataset must hold both directions of the relations walked.
  static absl::StatusOr<WalkPlan> Make(const graph::Dataset& dataset, const nau::VertexSpace& space,
                                       const std::string& walk, const WalkOptions& options);

  // nau::WalkSelection: the walks of a root, then its `top_k` most visited vertices other than
  // itself, most visited first, ties by source id, weighted by their visit counts.
  bool Start(nau::Walker* w) const override;
  bool Advance(const nau::SelectContext& ctx, nau::Walker* w, RandomStream& rng,
               std::vector<int32_t>* visits) const override;
  void Finish(int64_t root, std::vector<nau::Visit>& visits, hdg::NeighborWriter& out) const override;

  const WalkOptions& options() const { return options_; }
  // The node types of the cycle (the walk without its repeated last type).
  const std::vector<std::string>& cycle() const { return cycle_; }
  // "in-edges" or "artist-user-artist".
  std::string ToString() const;

 private:
  struct Step {
    Csr adj;  // rows: the step's source type from `first_row`; columns: local ids of its target type
    int64_t from_offset = 0, to_offset = 0;  // global id offsets of the two types
    int64_t first_row = 0;                   // local id of row 0 (a part's first vertex)
  };
  int TypeOf(int64_t global) const;

  WalkOptions options_;
  std::vector<std::string> cycle_;
  bool typed_ = false;
  std::vector<Step> steps_;  // steps_[i] goes from cycle_[i] to cycle_[(i + 1) % size]
  // Per node type of the vertex space: its first position on the cycle, or -1.
  std::vector<int> start_;
  std::vector<int64_t> type_offsets_;  // vertex space offsets, size num_types + 1
};

}  // namespace fg::udf
