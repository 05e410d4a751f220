// Training on batches of whole graphs (a graph-set dataset, graph_set.h, with an edge or graph
// task, runtime/tasks/graph_tasks.h): each epoch the training graphs are shuffled with a
// counter-based seed (seed, epoch) and cut into batches of train.batch_size graphs (0: all at
// once); per batch, the block-diagonal union of its graphs (BatchGraphs) is a dataset of its own,
// over which every layer selects its HDG, the model runs (input, initial edge state, the layers
// through the hybrid executor, Head), then the batch loss, backward and one optimizer step.
// Evaluation runs each split's graphs as one batch. Single process. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "flexgraph/nn/optim.h"
#include "nau/executor.h"
#include "nau/model.h"
#include "runtime/tasks/graph_tasks.h"

namespace fg::runtime {

class GraphBatchTraining {
 public:
  struct Parts {
    nau::Model* model = nullptr;
    // The run's spec: its dataset is the graph set; each batch runs over a copy pointing at the
    // batch's union.
    const nau::ModelSpec* spec = nullptr;
    const GraphSetTask* task = nullptr;
    nn::Optimizer* optimizer = nullptr;
  };
  GraphBatchTraining(Parts parts, int64_t batch_size, uint64_t seed)
      : parts_(parts), batch_size_(batch_size), seed_(seed) {}

  // The model's output rows for `batch` (the task's rows: entries or graphs). Errors come from
  // neighbour selection.
  absl::StatusOr<ag::Var> Forward(const GraphBatch& batch, int epoch, bool training) const;
  // One epoch over the training graphs; returns the mean batch loss.
  absl::StatusOr<double> RunEpoch(int epoch);
  // The task's metrics over the graphs of split `split` (0 train, 1 valid, 2 test), without
  // dropout, in batches of `batch_size` graphs (0: one batch); metrics are of the whole split when
  // it is one batch, else the mean over batches weighted by their items.
  absl::StatusOr<std::map<std::string, double>> Evaluate(int split, int64_t batch_size = 0) const;

 private:
  Parts parts_;
  int64_t batch_size_;
  uint64_t seed_;
};

}  // namespace fg::runtime
