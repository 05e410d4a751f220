#include "runtime/tasks/task.h"

#include "absl/strings/str_cat.h"
#include "flexgraph/base/logging.h"
#include "runtime/tasks/link_prediction.h"
#include "runtime/tasks/node_classification.h"

namespace fg::runtime {

Tensor Task::BatchRoots(const Tensor&, int) const {
  FG_CHECK(false) << Describe() << " has no mini-batches (NumTrainingItems() is 0)";
  return Tensor();
}

ag::Var Task::BatchLoss(const ag::Var&, const Tensor&, const Tensor&, int) const {
  FG_CHECK(false) << Describe() << " has no mini-batches (NumTrainingItems() is 0)";
  return ag::Var();
}

absl::StatusOr<std::unique_ptr<Task>> MakeTask(graph::Dataset* dataset,
                                               const flexgraph::RunConfig& config) {
  if (dataset->labels.empty() && !dataset->edge_splits.empty()) {
    return LinkPredictionTask::Create(dataset, config);
  }
  const flexgraph::DatasetConfig& data = config.dataset();
  const std::string target = data.target_type().empty() ? dataset->LabeledType() : data.target_type();
  if (nau::VertexSpace(dataset->graph).TypeIndex(target) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("target_type: node type '", target, "' not in dataset ", data.path()));
  }
  return NodeClassificationTask::Create(*dataset, target, data.path());
}

}  // namespace fg::runtime
