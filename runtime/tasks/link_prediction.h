// LinkPredictionTask: the link-prediction objective and evaluation for the trainer, for models
// whose task() is nau::Task::kLinkPrediction. A dataset's edge split of one relation (src, dst)
// gives the positive pairs; the score of a pair is the dot product of the two endpoints' final
// embeddings (rows of the last layer's output).
//   - Message passing sees training edges only: Create() rebuilds the relation from its training
//     pairs, so validation and test links are never walked or aggregated over.
//   - Training: every epoch each training positive gets `negatives` destination vertices the source
//     never interacted with in training, drawn from a counter-based stream keyed by (seed, epoch,
//     source, destination) in the source dataset's ids, so the draws depend neither on threads
//     nor on how the graph is partitioned; loss "bce" (binary cross-entropy on the scores)
//     or "margin" (mean max(0, margin - s_pos + s_neg), as in PinSage).
//   - Evaluation: each validation/test positive gets a fixed set of `eval_negatives` destinations
//     the source never interacted with in any split (drawn once). ROC-AUC compares every positive
//     with its first negative (as many negatives as positives, as MAGNN evaluates); hits@10 ranks
//     each positive against all of its negatives. Test metrics are computed when the validation
//     AUC improves (the trainer reports them at the best validation epoch); other epochs repeat
//     those of the best epoch so far.
// Options (ModelConfig.options, declared by Options()): relation (the only edge split), loss (bce),
// margin (0.1), negatives (4), eval_negatives (100). Errors name the option or the split.
// Thread-compatible; evaluation runs parallel loops inside.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/autograd/var.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/tensor/csr.h"
#include "nau/context.h"
#include "nau/options.h"
#include "proto/config.pb.h"
#include "runtime/tasks/task.h"

namespace fg::runtime {

class LinkPredictionTask : public Task {
 public:
  enum class LossKind { kBce, kMargin };

  // Picks the relation, checks its split, removes the relation's non-training edges from
  // dataset->graph (graph::KeepTrainingEdges; a part holds only those already) and draws the
  // evaluation negatives. Local ids are type-local ids of the source dataset. `dataset` must
  // outlive the task.
  static absl::StatusOr<std::unique_ptr<LinkPredictionTask>> Create(
      graph::Dataset* dataset, const flexgraph::RunConfig& config);
  // The options the task reads (models that predict links accept them).
  static nau::OptionList Options();

  // "src___name___dst" of the predicted relation.
  const std::string& relation() const { return relation_; }

  nau::Task kind() const override { return nau::Task::kLinkPrediction; }
  // The relation's destination type: the last layer embeds its vertices.
  const std::string& target_type() const override { return dst_type_; }
  std::string Describe() const override { return "link prediction of " + relation_; }
  // Rows of the final embeddings: `roots` holds the global vertex id (int64) of each output row.
  // Every endpoint of the relation must have a row; the error names the first one missing.
  absl::Status SetOutputRows(const Tensor& roots) override;
  // In a distributed run every worker scores pairs of any rows: it sees all of them, and takes
  // the training pairs i with i % size == rank; on a partitioned dataset, those of its part
  // (the sources it owns), whose evaluation pairs it also scores.
  bool NeedsAllRows() const override { return true; }
  void SetShare(int rank, int size) override {
    share_rank_ = rank;
    share_size_ = size;
  }
  // This worker's share of the training loss of `embeddings` [rows, d] at `epoch` (fresh
  // negatives each epoch, drawn per pair: the same on any number of workers).
  ag::Var Loss(const ag::Var& embeddings, int epoch) const override;
  // valid = validation AUC; extra: valid_auc, test_auc, test_hits_at_10. Every worker computes
  // the same metrics (on a partitioned dataset through `sum`: collective).
  EpochMetrics Evaluate(const Tensor& embeddings, const WorkerSum& sum) override;
  // Mini-batches of training pairs; a batch's roots are their endpoints and their negatives'.
  int64_t NumTrainingItems() const override { return num_train(); }
  Tensor BatchRoots(const Tensor& items, int epoch) const override;
  ag::Var BatchLoss(const ag::Var& output, const Tensor& roots, const Tensor& items,
                    int epoch) const override;
  std::string EpochLine(double loss, const EpochMetrics& m, double seconds) const override;

  int64_t num_train() const { return static_cast<int64_t>(train_src_.size()); }
  const std::string& src_type() const { return src_type_; }

  // Top-k recommendations: for every source vertex (local id s), the k destinations (local ids)
  // of highest score among those it did not link to in training, best first (ties: lower id),
  // at dst[s * k + r] with score[s * k + r]; -1 / NaN pad a source with fewer candidates.
  // test_recall: the fraction of test pairs whose destination is among its source's k.
  struct Recommendations {
    int k = 0;
    std::vector<int32_t> dst;
    std::vector<float> score;
    double test_recall = 0;
  };
  Recommendations Recommend(const Tensor& embeddings, int k) const;

 private:
  LinkPredictionTask() = default;
  struct EvalSet {
    std::vector<int32_t> src, dst;  // positive pairs (local ids)
    std::vector<int32_t> neg;       // [pairs * eval_negatives] destinations (local ids)
  };
  int32_t SampleNegative(const std::vector<int32_t>& exclude, RandomStream& rng) const;
  // The destinations (local ids) of training pair i's negatives at `epoch`, [negatives_].
  void TrainNegatives(int64_t i, int epoch, int32_t* dst) const;
  // The loss of the training pairs `pairs` over `embeddings`, whose row of a source (destination)
  // with local id s is src_row(s) (dst_row(s)), times `scale`. `positives`: the pairs' positive
  // matrix when the caller keeps it (null: built here), with its entry order.
  ag::Var PairLoss(const ag::Var& embeddings, const std::vector<int64_t>& pairs,
                   const std::function<int32_t(int32_t)>& src_row,
                   const std::function<int32_t(int32_t)>& dst_row, int epoch, float scale,
                   SparseMatrixPtr positives, const std::vector<int64_t>& positive_entry) const;
  // Every worker's `mine`, in rank order, on a partitioned dataset (collective through `sum`);
  // `mine` otherwise.
  std::vector<float> AllWorkers(const std::vector<float>& mine, const WorkerSum& sum) const;
  // Scores of (src, dst) local-id pairs from the embeddings (plain tensors).
  std::vector<float> Scores(const Tensor& emb, const std::vector<int32_t>& src,
                            const std::vector<int32_t>& dst) const;

  std::string relation_, src_type_, dst_type_;
  int64_t num_src_ = 0, num_dst_ = 0;
  int64_t src_offset_ = 0, dst_offset_ = 0;  // global id offsets
  uint64_t seed_ = 0;
  LossKind loss_ = LossKind::kBce;
  float margin_ = 0.1f;
  int negatives_ = 1, eval_negatives_ = 100;
  int share_rank_ = 0, share_size_ = 1;
  bool partitioned_ = false;  // a part of a partitioned dataset: pairs of its own sources
  int64_t global_train_ = 0;  // training pairs over all workers
  std::vector<int32_t> train_src_, train_dst_;
  // Sorted destinations of each source: seen in training, and seen in any split.
  std::vector<std::vector<int32_t>> train_seen_, all_seen_;
  EvalSet valid_, test_;
  std::vector<int32_t> src_row_, dst_row_;  // local id -> output row
  // The training positives as a pair matrix (built on first use) and each pair's entry index.
  mutable SparseMatrixPtr positives_;
  mutable std::vector<int64_t> positive_entry_;
  struct Metrics {
    double valid_auc = 0, test_auc = 0, test_hits_at_10 = 0;
  };
  Metrics best_;  // at the best validation AUC so far
};

}  // namespace fg::runtime
