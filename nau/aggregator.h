// Aggregators: the Aggregation UDF of one HDG level. Built-in reductions are declared (Sum, Mean,
// Max, WeightedSum) so the HybridExecutor may run them as SpMM, dense batched ops or partial
// aggregation at the data's owner; custom aggregators are functions of autograd ops over a
// LevelInput. Value type; thread-safe.
//
//   Aggregator::Mean()                                        // GraphSAGE-mean
//   Aggregator::Custom("instance-attention", Strategy::kGraph, [](const LevelInput& in) { ... })
#pragma once

#include <functional>
#include <string>

#include "flexgraph/autograd/functions.h"
#include "hdg/hdg.h"
#include "nau/context.h"

namespace fg::nau {

// How a level is executed (DESIGN.md, hybrid execution).
enum class Strategy {
  kDense,   // uniform arity: gather into [n, k, d] and use batched dense ops
  kSparse,  // SpMM over the level's CSR
  kGraph,   // segment ops (segment softmax, max with argmax)
};
const char* StrategyName(Strategy s);
// Parses "dense", "sparse" or "graph".
bool ParseStrategy(const std::string& name, Strategy* out);

enum class Reduction { kSum, kMean, kMax, kWeightedSum, kCustom };
const char* ReductionName(Reduction r);

// What a custom aggregator sees for one level.
struct LevelInput {
  const hdg::Hdg* hdg = nullptr;
  int level = 0;                    // 1-based
  ag::Var children;                 // [nodes of level-1 (or vertex table), d]
  ag::Var self;                     // root features [num_roots, d_in] (the layer's input rows)
  LayerContext* ctx = nullptr;
  Strategy strategy = Strategy::kSparse;

  const hdg::HdgLevel& lvl() const { return hdg->level(level); }
  // Children of block t gathered densely: [n_t, arity_t, d]; requires uniform arity in block t.
  ag::Var GatherBlock(int t) const;
  // For every node of this level, the index of its root (int32 [n]).
  Tensor NodeRoots() const;
};

using CustomAggregateFn = std::function<ag::Var(const LevelInput&)>;

class Aggregator {
 public:
  static Aggregator Sum() { return Aggregator(Reduction::kSum, "sum"); }
  static Aggregator Mean() { return Aggregator(Reduction::kMean, "mean"); }
  static Aggregator Max() { return Aggregator(Reduction::kMax, "max"); }
  // Sum of children weighted by the level's stored weights.
  static Aggregator WeightedSum() { return Aggregator(Reduction::kWeightedSum, "weighted-sum"); }
  // Weighted mean: weights normalised to sum to 1 per node (PinSage importance pooling).
  static Aggregator WeightedMean() {
    Aggregator a(Reduction::kWeightedSum, "weighted-mean");
    a.normalize_weights_ = true;
    return a;
  }
  static Aggregator Custom(std::string name, Strategy strategy, CustomAggregateFn fn) {
    Aggregator a(Reduction::kCustom, std::move(name));
    a.custom_strategy_ = strategy;
    a.fn_ = std::move(fn);
    return a;
  }

  Reduction reduction() const { return reduction_; }
  const std::string& name() const { return name_; }
  bool normalize_weights() const { return normalize_weights_; }
  Strategy custom_strategy() const { return custom_strategy_; }
  const CustomAggregateFn& fn() const { return fn_; }
  // Decomposable reductions can be split across partitions (partial aggregation).
  bool decomposable() const { return reduction_ != Reduction::kCustom; }

 private:
  Aggregator(Reduction r, std::string name) : reduction_(r), name_(std::move(name)) {}
  Reduction reduction_;
  std::string name_;
  bool normalize_weights_ = false;
  Strategy custom_strategy_ = Strategy::kGraph;
  CustomAggregateFn fn_;
};

}  // namespace fg::nau
