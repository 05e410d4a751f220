// Task: what a run optimises and how it is judged — it owns the labels (or positive pairs), the
// loss and the evaluation over the model's output rows. The trainer is the same for every task:
//
//   FG_ASSIGN_OR_RETURN(auto task, MakeTask(&dataset, options));   // by the dataset's supervision
//   FG_RETURN_IF_ERROR(task->SetOutputRows(last_layer_roots));
//   ag::Var loss = task->Loss(output, epoch);                     // this worker's share
//   EpochMetrics m = task->Evaluate(output.value(), sum_across_workers);
//
// In a distributed run every worker holds a task over its own output rows; loss shares add up to
// the global loss and Evaluate sums its counts across workers through the given function, so every
// worker gets the same metrics. Thread-compatible.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/autograd/var.h"
#include "flexgraph/graph/dataset.h"
#include "nau/model.h"
#include "proto/config.pb.h"

namespace fg::runtime {

struct EpochMetrics {
  // Model selection uses `valid` (accuracy for node classification, ROC-AUC for link prediction).
  // A split without vertices or pairs has NaN metrics (absent, not 0).
  double train = 0, valid = 0, test = 0;
  double valid_macro_f1 = 0, test_macro_f1 = 0, test_micro_f1 = 0;
  std::map<std::string, double> extra;  // task-specific, reported at the top of the summary
};

// Sums a vector of doubles across the workers of a run (identity in a single process); every
// worker makes the same calls, in the same order.
using WorkerSum = std::function<void(std::vector<double>*)>;

class Task {
 public:
  virtual ~Task() = default;
  virtual nau::Task kind() const = 0;
  // The node type whose vertices are the last layer's roots.
  virtual const std::string& target_type() const = 0;
  // "node classification of paper", "link prediction of user___rates___item".
  virtual std::string Describe() const = 0;
  virtual int64_t num_classes() const { return 0; }
  // `roots`: the sorted global ids (int64) of this worker's output rows. Errors name the vertex or
  // split that does not fit.
  virtual absl::Status SetOutputRows(const Tensor& roots) = 0;
  // A loss over pairs of rows that different workers own (link prediction) needs every worker's
  // output rows: the trainer then gathers them (differentiably), SetOutputRows receives all
  // workers' roots as ids of the source dataset (which a partitioned dataset renumbers), and the
  // task computes the share `rank` of `size` of the loss.
  virtual bool NeedsAllRows() const { return false; }
  virtual void SetShare(int rank, int size) {}
  // This worker's share of the training loss at `epoch` (shares sum to the global loss).
  virtual ag::Var Loss(const ag::Var& output, int epoch) const = 0;
  virtual EpochMetrics Evaluate(const Tensor& output, const WorkerSum& sum) = 0;
  // Mini-batch training cuts the task's training items into batches: the training vertices of
  // node classification, the training pairs of link prediction, numbered 0 .. n - 1 (0: the task
  // trains on the whole graph only).
  virtual int64_t NumTrainingItems() const { return 0; }
  // The vertices (ascending global ids, int64) whose output rows the loss of `items` (int64 item
  // numbers) reads at `epoch`, negative samples included.
  virtual Tensor BatchRoots(const Tensor& items, int epoch) const;
  // The mean training loss of `items` at `epoch`: `output` has one row per id of `roots`, which is
  // BatchRoots(items, epoch).
  virtual ag::Var BatchLoss(const ag::Var& output, const Tensor& roots, const Tensor& items,
                            int epoch) const;
  // One progress line for an epoch ("loss ... valid ... test ...", without the epoch number).
  virtual std::string EpochLine(double loss, const EpochMetrics& m, double seconds) const = 0;
};

// The task the dataset supervises: node classification when it has node labels, link prediction
// when it has only an edge split (which also removes the held-out edges from dataset->graph).
// `dataset` must outlive the task.
// `config` is resolved (runtime/train/config.h).
absl::StatusOr<std::unique_ptr<Task>> MakeTask(graph::Dataset* dataset,
                                               const flexgraph::RunConfig& config);

}  // namespace fg::runtime
