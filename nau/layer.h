// The NAU interface: one GNN layer as NeighborSelection -> Aggregation -> Update over an HDG.
// A Layer holds its parameters (it is an nn::Module). Thread-compatible: SelectNeighbors is called
// concurrently for different roots and must only read shared state; the other functions run on one
// thread.
//
//   class GcnLayer : public nau::Layer {
//     hdg::SchemaTree Schema() const override { return hdg::SchemaTree::Flat("neighbor", true); }
//     void SelectNeighbors(const SelectContext& c, int32_t v, hdg::NeighborWriter& out) const override;
//     Aggregator LevelAggregator(int level) const override { return Aggregator::WeightedSum(); }
//     ag::Var Update(UpdateContext& c, const ag::Var& self, const ag::Var& nbr) override;
//   };
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flexgraph/autograd/edge_functions.h"
#include "flexgraph/autograd/var.h"
#include "flexgraph/nn/module.h"
#include "hdg/builder.h"
#include "hdg/schema.h"
#include "nau/aggregator.h"
#include "nau/context.h"
#include "nau/metapath.h"
#include "nau/walk.h"

namespace fg::nau {

// What one layer computes per vertex and forward pass, for the partitioner's cost model
// (partition/workload.h). Widths are floats per row.
struct LayerCost {
  int64_t in = 0, out = 0;  // widths of the layer's input rows and output rows
  // Width of the vectors aggregated at HDG level k: level_widths[k - 1], levels past the end take
  // the last entry. Level 1's width is also what peers exchange per remote leaf.
  std::vector<int64_t> level_widths;
  double message_flops = 0;  // dense flops per input row, before aggregation (Message)
  double update_flops = 0;   // dense flops per root (Update)
};

class Layer : public nn::Module {
 public:
  ~Layer() override = default;

  // The HDG schema: root -> neighbor types (leaves).
  virtual hdg::SchemaTree Schema() const = 0;
  // NeighborSelection UDF: write the neighbor instances of `root` (a global vertex id).
  // Randomness only from ctx.Rng(root).
  virtual void SelectNeighbors(const SelectContext& ctx, int32_t root,
                               hdg::NeighborWriter& out) const = 0;
  // True when selection samples (rebuilt every SelectionPeriod() epochs); false: built once.
  virtual bool SampledSelection() const { return false; }
  virtual int SelectionPeriod() const { return 1; }
  // True when SelectNeighbors reads only the root's in-neighbours and their in-degrees
  // (ctx.InNeighbors(root), ctx.InDegree), so that a worker holding only its own vertices'
  // in-edges (a part of a partitioned dataset) can run it.
  virtual bool LocalSelection() const { return false; }
  // A selection made of random walks (nau/walk.h) returns them here, and its SelectNeighbors is
  // WalkLocally(*Walks(), ...): on a partitioned dataset the framework then runs the walks across
  // the workers. Null: not a walk selection.
  virtual const WalkSelection* Walks() const { return nullptr; }
  // A selection of metapath instances (nau/metapath.h) returns it here, and its SelectNeighbors
  // writes exactly those instances: on a partitioned dataset the framework then expands them
  // across the workers. Null: not a metapath selection.
  virtual const MetapathSelection* Instances() const { return nullptr; }
  // Layers whose selections are identical share one HDG: return the same non-empty key.
  virtual std::string SelectionKey() const { return ""; }

  // Optional per-vertex transform applied to the layer input before aggregation (e.g. dropout and
  // a projection that commutes with a linear aggregation). Default: identity.
  virtual ag::Var Message(LayerContext& ctx, const ag::Var& h) { return h; }
  // Aggregation UDF of HDG level `level` (1 = bottom).
  virtual Aggregator LevelAggregator(int level) const = 0;
  // Update UDF: `self` is the layer input at the roots, `nbr` the aggregated neighborhood.
  virtual ag::Var Update(UpdateContext& ctx, const ag::Var& self, const ag::Var& nbr) = 0;
  // Edge state (DESIGN.md, "Edges are first-class"): a layer over a flat HDG may carry a state per
  // level-1 entry (one per edge of an in-neighbour selection). When UpdatesEdges(), the executor
  // hands UpdateEdges the rows [message(source) | self(root) | ctx.edge_state] of every entry
  // (ag::EdgeInput), stores its result as the new ctx.edge_state (ctx.edge_matrix: the entries'
  // structure), aggregates it into the roots with EdgeAggregation() (ag::AggregateEdges, by
  // destination) and passes that to Update as `nbr`. LevelAggregator is then not called.
  virtual bool UpdatesEdges() const { return false; }
  virtual ag::Var UpdateEdges(LayerContext& ctx, const ag::Var& edge_input, const ag::Var& edge) {
    return edge;
  }
  // What the executor calls: the new edge state from the entries of `a` (sources: rows of
  // `messages`, destinations: rows of `self`) and their state. Default: UpdateEdges of their
  // concatenation (ag::EdgeInput); a layer whose first product splits over the three parts may
  // override it to skip the [nnz, 2d + de] rows.
  virtual ag::Var UpdateEdgesFrom(LayerContext& ctx, const SparseMatrixPtr& a,
                                  const ag::Var& messages, const ag::Var& self, const ag::Var& edge) {
    return UpdateEdges(ctx, ag::EdgeInput(a, messages, self, edge), edge);
  }
  virtual std::vector<ag::EdgeReduce> EdgeAggregation() const { return {ag::EdgeReduce::kSum}; }
  // Which ends of its entries the edge states are aggregated into: the destination (the root, the
  // default), or both ends (ag::EdgeSide::kBoth: per root, the blocks of the entries it is the
  // destination of, then of those it is the source of; the level's rows and columns must be the
  // same vertices), for a selection that holds each undirected edge once.
  virtual ag::EdgeSide EdgeAggregationSide() const { return ag::EdgeSide::kDestination; }

  // True when `nbr` is the roots' embedding and Update only maps it to the output (attention
  // models fuse their metapaths into it): `flexgraph embed` then writes it for the last layer.
  virtual bool NbrIsEmbedding() const { return false; }

  // Cost figures of the layer when the model feeds it rows of width `in` and expects rows of width
  // `out`; a layer that knows its own widths reports those. Default, a plain layer: Message is the
  // identity, every level aggregates input rows, Update is one in x out transform per root.
  virtual LayerCost Cost(int64_t in, int64_t out) const {
    return {.in = in, .out = out, .level_widths = {in}, .update_flops = 2.0 * in * out};
  }
};

}  // namespace fg::nau
