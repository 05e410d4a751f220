#include "runtime/task.h"

#include "absl/strings/str_cat.h"
#include "runtime/link_prediction.h"
#include "runtime/node_classification.h"

namespace fg::runtime {

absl::StatusOr<std::unique_ptr<Task>> MakeTask(graph::Dataset* dataset, const TrainOptions& options) {
  if (dataset->labels.empty() && !dataset->edge_splits.empty()) {
    return LinkPredictionTask::Create(dataset, options);
  }
  const std::string target =
      options.target_type.empty() ? dataset->LabeledType() : options.target_type;
  if (nau::VertexSpace(dataset->graph).TypeIndex(target) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("target_type: node type '", target, "' not in dataset ", options.dataset));
  }
  return NodeClassificationTask::Create(*dataset, target, options.dataset);
}

}  // namespace fg::runtime
