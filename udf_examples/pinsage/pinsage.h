// PinSage (Ying et al., KDD 2018) as NAU UDFs: an INFA model — indirect neighbours, flat
// aggregation.
//   NeighborSelection: random walks from the root (random_walk.h); the top_k most visited vertices,
//                      weighted by visit counts. Re-drawn every `reselect_every` epochs when set.
//   Aggregation:       importance pooling n_v = sum_u α_u ReLU(Q h_u + q), α = visit counts
//                      normalised to sum to one (Aggregator::WeightedMean, so the executor may run
//                      it dense or as SpMM).
//   Update:            h'_v = normalize(ReLU(W [h_v ‖ n_v] + w)); the last layer outputs
//                      W [h_v ‖ n_v] + w (class logits, or link-prediction embeddings).
//
// The registered model "pinsage" classifies nodes when the target type has labels and otherwise
// predicts links of the dataset's edge split (runtime/tasks/link_prediction.h): node types without
// features get learned input embeddings. Options (spec.options, `--model_opt k=v,...`), with the
// defaults for node classification / link prediction:
//   num_traces (10 / 20), n_hops (3), top_k (10 / 30), restart_prob (0), reselect_every (0: select
//   once), walk ("": in-edges of a homogeneous graph; a typed walk such as artist-user-artist on a
//   heterogeneous one — for link prediction dst-src-dst of the predicted relation), count
//   (root_type / all: typed walks count their hop ends only, as PinSage counts items, or every
//   vertex a step reaches, so that a user's neighbours include the artists it listens to),
//   embedding_dim (hidden): width of learned input embeddings, pad (0; 1: pad every root to top_k
//   neighbours with zero weights, for a uniform arity the executor can run dense).
// Thread-compatible; SelectNeighbors is safe to call concurrently.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "nau/model.h"
#include "udf_examples/pinsage/random_walk.h"

namespace fg::udf {

struct PinSageOptions {
  WalkOptions walk;
  std::string walk_types;  // "" or a typed walk such as "artist-user-artist"
  int reselect_every = 0;  // 0: the walks are drawn once
  int embedding_dim = 0;   // 0: spec.hidden

  // Reads and validates spec.options, with the defaults of `task`; errors name the option.
  static absl::StatusOr<PinSageOptions> FromSpec(const nau::ModelSpec& spec, nau::Task task);
};

class PinSageLayer : public nau::Layer {
 public:
  // in: input width; pool: width of the pooled neighbour messages; out: output width.
  PinSageLayer(std::shared_ptr<const WalkPlan> plan, const PinSageOptions& options, int64_t in,
               int64_t pool, int64_t out, bool last, float dropout, uint64_t seed, int index);

  hdg::SchemaTree Schema() const override { return hdg::SchemaTree::Flat("visited", true); }
  void SelectNeighbors(const nau::SelectContext& ctx, int32_t root,
                       hdg::NeighborWriter& out) const override;
  bool SampledSelection() const override { return options_.reselect_every > 0; }
  int SelectionPeriod() const override { return std::max(1, options_.reselect_every); }
  std::string SelectionKey() const override;
  const nau::WalkSelection* Walks() const override { return plan_.get(); }

  // ReLU(Q h_u + q) for every vertex of the table (after dropout).
  ag::Var Message(nau::LayerContext& ctx, const ag::Var& h) override;
  nau::Aggregator LevelAggregator(int) const override { return nau::Aggregator::WeightedMean(); }
  ag::Var Update(nau::UpdateContext& ctx, const ag::Var& self, const ag::Var& nbr) override;
  // Q per input row, pooled (pool-wide) messages, W over [self || pooled] per root.
  nau::LayerCost Cost(int64_t in, int64_t out) const override;

 private:
  std::shared_ptr<const WalkPlan> plan_;
  PinSageOptions options_;
  nn::Linear pool_;    // Q, q
  nn::Linear update_;  // W, w
  bool last_;
  float dropout_;
};

class PinSage : public nau::Model {
 public:
  absl::Status Build(const nau::ModelSpec& spec) override;
  int num_layers() const override { return static_cast<int>(layers_.size()); }
  nau::Layer& layer(int i) override { return *layers_[i]; }
  nau::Task task() const override { return task_; }
  // Features of featured node types (projected to embedding_dim when the graph has several types)
  // and learned embeddings for the others.
  ag::Var Input(nau::LayerContext& ctx, const nau::ModelSpec& spec) override;
  ag::Var InputRows(nau::LayerContext& ctx, const nau::ModelSpec& spec, const Tensor& ids) override;
  // Link prediction scores every vertex: all layers have every vertex as a root.
  std::vector<int32_t> Roots(int i, const nau::ModelSpec& spec) const override;

  const PinSageOptions& options() const { return options_; }
  const WalkPlan& walk_plan() const { return *plan_; }

 private:
  nau::Task task_ = nau::Task::kNodeClassification;
  PinSageOptions options_;
  std::shared_ptr<const WalkPlan> plan_;
  std::vector<std::unique_ptr<PinSageLayer>> layers_;
  bool raw_features_ = false;  // one featured node type: its features are the input
  std::vector<std::unique_ptr<nn::Linear>> projections_;   // per type (featured types)
  std::vector<std::unique_ptr<nn::Embedding>> embeddings_;  // per type (featureless types)
  std::vector<Tensor> type_rows_;       // per type: int32 rows of its vertices in the input
  std::vector<Tensor> embedding_rows_;  // per type: int32 embedding rows held (a part's own; undefined: all)
  int64_t input_rows_ = 0;              // rows of the input: every vertex, or a part's own
};

}  // namespace fg::udf
