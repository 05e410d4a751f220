// Node classification: softmax cross-entropy over the training vertices of the target type;
// accuracy on train, valid and test, and macro/micro-F1 on test. Labels and split rows are indexed
// by this worker's output rows. Thread-compatible.
#pragma once

#include <memory>
#include <string>

#include "runtime/tasks/task.h"

namespace fg::runtime {

class NodeClassificationTask : public Task {
 public:
  // `target`: the labelled node type to classify. Errors name the dataset, type or split.
  static absl::StatusOr<std::unique_ptr<NodeClassificationTask>> Create(
      const graph::Dataset& dataset, const std::string& target, const std::string& dataset_name);

  nau::Task kind() const override { return nau::Task::kNodeClassification; }
  const std::string& target_type() const override { return target_; }
  std::string Describe() const override { return "node classification of " + target_; }
  int64_t num_classes() const override { return num_classes_; }
  absl::Status SetOutputRows(const Tensor& roots) override;
  ag::Var Loss(const ag::Var& output, int epoch) const override;
  EpochMetrics Evaluate(const Tensor& output, const WorkerSum& sum) override;
  int64_t NumTrainingItems() const override;
  Tensor BatchRoots(const Tensor& items, int epoch) const override;
  ag::Var BatchLoss(const ag::Var& output, const Tensor& roots, const Tensor& items,
                    int epoch) const override;
  std::string EpochLine(double loss, const EpochMetrics& m, double seconds) const override;

 private:
  NodeClassificationTask() = default;

  const graph::Dataset* dataset_ = nullptr;
  std::string target_, dataset_name_;
  int64_t base_ = 0, num_target_ = 0, num_classes_ = 0;
  int64_t first_label_ = 0;                     // type-local id of the labels' row 0 (a part's first)
  int64_t global_train_ = 0;                    // training vertices over all workers
  Tensor labels_;                               // int64, per output row
  Tensor train_rows_, valid_rows_, test_rows_;  // int32 output rows
  mutable Tensor placed_labels_, placed_train_rows_;  // on the outputs' device (placed once)
  std::vector<int64_t> train_ids_;              // global ids of the training vertices, ascending
};

// Labels of `type` that skip classes (no vertex has class c below the largest label, as a typo in
// one label makes): a sentence naming them and the largest label's vertex; empty otherwise.
std::string SkippedClassesWarning(const graph::Dataset& dataset, const std::string& type);

}  // namespace fg::runtime
