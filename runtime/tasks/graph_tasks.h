// Tasks over datasets of many graphs (graph_set.h), trained on batches of whole graphs
// (graph_batch.h): the training loss reads only the training graphs, metrics are per split of
// whole graphs.
//
// Edge classification: per-edge labels (-1 = unlabeled), binary (one logit per Csr entry, binary
// cross-entropy with a positive weight) or multi-class (C logits, cross-entropy with class
// weights). The model's output has one row per entry of the batch's in-edge Csr; an edge stored
// as two entries (reverse edges added) is scored by the mean of its entries (probabilities for
// binary, logits for multi-class). Binary metrics at a cut on the score: efficiency (recall,
// TP / (TP + FN)), purity (precision, TP / (TP + FP)), ROC AUC and accuracy; multi-class:
// accuracy. Model selection (EpochMetrics.valid) uses ROC AUC (binary) or accuracy.
//
// Graph classification: one row of C logits per batch graph (the model reads its vertices out:
// sum, mean or max), softmax cross-entropy over labelled training graphs; accuracy, and ROC AUC
// of class 1 for two classes. Model selection uses accuracy.
//
// Options (ModelConfig.options; models of these tasks declare Options()): see each Options().
// Single-process metrics (WorkerSum sums only the counts). Thread-compatible.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nau/options.h"
#include "runtime/tasks/graph_batch.h"
#include "runtime/tasks/task.h"

namespace fg::runtime {

class GraphSetTask : public Task {
 public:
  const std::string& target_type() const override { return target_; }
  absl::Status SetOutputRows(const Tensor& roots) override { return absl::OkStatus(); }
  // Whole-set forms (the output over WholeSet(dataset)).
  ag::Var Loss(const ag::Var& output, int epoch) const override;
  EpochMetrics Evaluate(const Tensor& output, const WorkerSum& sum) override;
  std::string EpochLine(double loss, const EpochMetrics& m, double seconds) const override;

  // The training loss over `batch`'s labelled items of training graphs, summed and divided by
  // `denominator` (0: their count, the batch's mean); `output` has one row per entry of
  // batch.data->Adjacency() (edge tasks) or per batch graph (graph tasks). A data-parallel
  // worker passes the whole batch's count (TrainingItems over all its graphs).
  virtual ag::Var BatchLoss(const ag::Var& output, const GraphBatch& batch,
                            double denominator = 0) const = 0;
  // The labelled items dataset graph `graph` adds to a batch loss's count (0 unless a training
  // graph).
  int64_t TrainingItems(int64_t graph) const { return training_items_[graph]; }
  // The run's metrics from each split's Metrics (train, valid, test): `valid` selects the model.
  EpochMetrics SplitMetrics(const std::map<std::string, double> (&splits)[3]) const;
  // Metrics over the labelled items of `batch`'s graphs of split `split` (0 train, 1 valid, 2
  // test; -1: every graph of the batch): edge tasks "efficiency", "purity", "auc", "accuracy",
  // "items"; graph tasks "accuracy", "auc" (two classes), "items". No items: NaN metrics.
  virtual std::map<std::string, double> Metrics(const Tensor& output, const GraphBatch& batch,
                                                int split = -1) const = 0;
  const graph::Dataset& dataset() const { return *dataset_; }

 protected:
  explicit GraphSetTask(const graph::Dataset* dataset);
  // 0 train, 1 valid, 2 test, -1 none, per dataset graph.
  std::vector<int> split_of_;
  // Whether batch graph i is in `split` (-1: every graph).
  bool InSplit(const GraphBatch& batch, int64_t i, int split) const {
    return split < 0 || split_of_[batch.graphs[i]] == split;
  }
  const graph::Dataset* dataset_;
  std::string target_ = "node";
  std::vector<int64_t> training_items_;  // per dataset graph, set by Create
};

class EdgeClassificationTask : public GraphSetTask {
 public:
  // pos_weight (binary), class_weights (multi-class, comma-separated, "" = 1 each), cut.
  static nau::OptionList Options();
  // Errors name the dataset or the option.
  static absl::StatusOr<std::unique_ptr<EdgeClassificationTask>> Create(
      const graph::Dataset* dataset, const nau::OptionValues& options);

  nau::Task kind() const override { return nau::Task::kEdgeClassification; }
  std::string Describe() const override { return "edge classification"; }
  // 1 for binary labels (one logit per entry), else the classes.
  int64_t num_classes() const override { return binary_ ? 1 : classes_; }
  bool binary() const { return binary_; }
  float cut() const { return cut_; }
  ag::Var BatchLoss(const ag::Var& output, const GraphBatch& batch,
                    double denominator = 0) const override;
  std::map<std::string, double> Metrics(const Tensor& output, const GraphBatch& batch,
                                        int split = -1) const override;
  // BatchLoss for a worker holding entries `entries` of the batch's Csr: `output` row j scores
  // entry entries[j]. Workers holding disjoint entries that cover the batch sum to BatchLoss with
  // the same denominator. Null `entries`: every entry in order (BatchLoss).
  ag::Var RowsLoss(const ag::Var& output, const GraphBatch& batch, const std::vector<int32_t>* entries,
                   double denominator) const;
  // Binary: per original edge of the batch (bs.num_edges()), the mean probability of its entries
  // (NaN for an edge without entries). Multi-class: not defined (FG_CHECK).
  std::vector<double> EdgeScores(const Tensor& output, const GraphBatch& batch) const;

 private:
  using GraphSetTask::GraphSetTask;
  // Per original edge of the batch, row-major [M, num_classes()]: the mean over its entries of
  // the probability (binary) or the logits (multi-class); NaN without entries.
  std::vector<double> MeanEdgeScores(const Tensor& output, const GraphBatch& batch) const;
  // The label of every entry of the batch's Csr (-1: unlabeled or an added self loop).
  std::vector<int64_t> EntryLabels(const GraphBatch& batch) const;
  bool binary_ = true;
  int64_t classes_ = 2;
  float pos_weight_ = 1, cut_ = 0.5f;
  std::vector<float> class_weights_;
};

class GraphClassificationTask : public GraphSetTask {
 public:
  static absl::StatusOr<std::unique_ptr<GraphClassificationTask>> Create(
      const graph::Dataset* dataset);

  nau::Task kind() const override { return nau::Task::kGraphClassification; }
  std::string Describe() const override { return "graph classification"; }
  int64_t num_classes() const override { return classes_; }
  ag::Var BatchLoss(const ag::Var& output, const GraphBatch& batch,
                    double denominator = 0) const override;
  std::map<std::string, double> Metrics(const Tensor& output, const GraphBatch& batch,
                                        int split = -1) const override;

 private:
  using GraphSetTask::GraphSetTask;
  int64_t classes_ = 2;
};

// The task a graph-set dataset supervises: edge classification when it has edge labels, else graph
// classification when it has int64 graph labels. Errors name the dataset.
absl::StatusOr<std::unique_ptr<GraphSetTask>> MakeGraphSetTask(const graph::Dataset* dataset,
                                                               const nau::OptionValues& options);

}  // namespace fg::runtime
