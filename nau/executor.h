// HybridExecutor: runs one NAU layer over its HDG — Message, then every level's aggregation
// bottom-up, then Update — choosing per level a dense, sparse or graph execution (DESIGN.md), and
// explaining the choice (--explain). An override forces a strategy for benchmarks where it is
// applicable. Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hdg/hdg.h"
#include "nau/layer.h"

namespace fg::nau {

struct LevelPlan {
  int level = 0;
  std::string aggregator;
  Reduction reduction = Reduction::kSum;
  Strategy strategy = Strategy::kSparse;
  std::string reason;
};

class HybridExecutor {
 public:
  // Forces built-in reductions to `s` where possible (dense needs uniform arity).
  void SetOverride(std::optional<Strategy> s) { override_ = s; }

  std::vector<LevelPlan> Plan(const hdg::Hdg& hdg, const Layer& layer) const;
  // One line per level: "level 1 (weighted-sum, 10556 children): sparse — variable arity".
  static std::string Explain(const std::vector<LevelPlan>& plan);

  // Runs the layer: Message(input) feeds level 1; `input` rows are the HDG's vertex table.
  // Returns the Update output, one row per root.
  ag::Var Run(const hdg::Hdg& hdg, const std::vector<LevelPlan>& plan, Layer& layer,
              const ag::Var& input, LayerContext& ctx) const;

  // Aggregation alone: `messages` are the vertex-table rows, `self` the roots' input rows.
  ag::Var Aggregate(const hdg::Hdg& hdg, const std::vector<LevelPlan>& plan, const Layer& layer,
                    const ag::Var& messages, const ag::Var& self, LayerContext& ctx) const;
  // Edge-state layers (Layer::UpdatesEdges) over a flat `hdg`: the entries' new states from
  // [messages(child) | self(root) | ctx.edge_state], kept as ctx.edge_state (ctx.edge_matrix: level
  // 1's matrix), aggregated by the layer's edge reductions into the ends `side` names (default:
  // the layer's EdgeAggregationSide).
  ag::Var AggregateEdges(const hdg::Hdg& hdg, Layer& layer, const ag::Var& messages,
                         const ag::Var& self, LayerContext& ctx) const;
  ag::Var AggregateEdges(const hdg::Hdg& hdg, Layer& layer, const ag::Var& messages,
                         const ag::Var& self, LayerContext& ctx, ag::EdgeSide side) const;

 private:
  std::optional<Strategy> override_;
};

// Rows of `x` at `hdg.roots()`, or x itself when the roots are exactly 0..n-1. With `ctx`, the
// gather is recorded there (LayerContext::NoteRoots), so that dropping the roots reuses x's mask.
ag::Var GatherRoots(const hdg::Hdg& hdg, const ag::Var& x, LayerContext* ctx = nullptr);

}  // namespace fg::nau
