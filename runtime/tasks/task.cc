#include "runtime/tasks/task.h"

#include "absl/strings/str_cat.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/status.h"
#include "nau/model.h"
#include "runtime/tasks/graph_tasks.h"
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
  // A graph set without node labels: edge classification (edge labels) or graph classification.
  if (dataset->IsGraphSet() && dataset->labels.empty()) {
    // The task's options with the model's defaults where it declares them (a filter weighs true
    // edges more than the classifier after it).
    nau::OptionList declared = EdgeClassificationTask::Options();
    if (const nau::ModelInfo* info = nau::ModelRegistry::Get().Find(config.model().name())) {
      for (nau::OptionSpec& o : declared) {
        if (const nau::OptionSpec* m = nau::FindOption(info->options, o.name)) o.default_value = m->default_value;
      }
    }
    nau::OptionValues options(declared,
                              std::map<std::string, std::string>(config.model().options().begin(),
                                                                 config.model().options().end()));
    FG_ASSIGN_OR_RETURN(auto task, MakeGraphSetTask(dataset, options));
    return std::unique_ptr<Task>(std::move(task));
  }
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
