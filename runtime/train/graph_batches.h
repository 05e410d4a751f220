// Training on batches of whole graphs (a graph-set dataset, graph_set.h, with an edge or graph
// task, runtime/tasks/graph_tasks.h): each epoch the training graphs are shuffled with a
// counter-based seed (seed, epoch) and cut into batches of train.batch_size graphs (0: all at
// once); per batch, the block-diagonal union of its graphs (BatchGraphs) is a dataset of its own,
// over which every layer selects its HDG, the model runs (input, initial edge state, the layers
// through the hybrid executor, Head), then the batch loss, backward and one optimizer step.
//
// Data-parallel across the workers of a distributed run: every worker holds the whole graph set
// and draws the same batches; worker r of P takes the batch's graphs k with k % P == r, its loss
// share divides by the batch's labelled items over all workers (known to each without asking), so
// the summed gradients and losses are the single process's. With vertex sharding (graphs too large
// for one worker; edge tasks), every worker takes the whole batch instead: METIS splits its
// vertices over the workers, each computes its own vertices' rows and their in-edges' states and
// scores, fetching the rows of neighbours other workers own per layer (DistributedExecutor, row
// fetch), and its loss share covers its own vertices' in-edges (one state per edge aggregated into
// both ends: the states travel to their sources' owners, runtime/distributed/edge_return.h, and the
// loss share covers both entries of the edges stored into its vertices); the sums are again the single
// process's, and so is the evaluation: each worker computes its own entries' outputs, which every
// worker then sums into the batch's. Without vertex sharding, evaluation runs each split's graphs
// on every worker (identical metrics, no exchange). Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/nn/optim.h"
#include "nau/executor.h"
#include "nau/model.h"
#include "partition/partitioner.h"
#include "runtime/distributed/distributed_executor.h"
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
    // The run's workers (gradient and loss sums); nullptr or not distributed: one process.
    DistributedExecutor* exec = nullptr;
    nau::ExecStats* stats = nullptr;  // optional: stage times
    // Where the model's parameters live and the batches run (their structure and selection stay
    // on the host; vertex sharding runs on the CPU).
    Device device = Device::kCpu;
  };
  // `shard_vertices`: vertex sharding (above) in a distributed run, each batch partitioned with
  // `method` (kBalanced: METIS). Errors: a distributed run of more steps than its messages can
  // number; vertex sharding of a task that is not edge classification, or on a device.
  // `reflect`: each training batch's graphs are mirrored (tasks/graph_batch.h ReflectEvents; the
  // dataset must have tracking.h's layout: an InvalidArgument error naming it otherwise).
  static absl::StatusOr<std::unique_ptr<GraphBatchTraining>> Create(
      Parts parts, int64_t batch_size, uint64_t seed, int epochs, bool shard_vertices = false,
      partition::Method method = partition::Method::kMetis, bool reflect = false);

  // The model's output rows for `batch` (the task's rows: entries or graphs). Errors come from
  // neighbour selection.
  absl::StatusOr<ag::Var> Forward(const GraphBatch& batch, int epoch, bool training) const;
  // One epoch over the training graphs; returns the mean batch loss (the same on every worker).
  absl::StatusOr<double> RunEpoch(int epoch);
  // The training loss over all training graphs as one batch, without dropout or update.
  absl::StatusOr<double> TrainingLoss() const;
  // The task's metrics over the graphs of split `split` (0 train, 1 valid, 2 test), without
  // dropout, in batches of `batch_size` graphs (0: one batch); metrics are of the whole split when
  // it is one batch, else the mean over batches weighted by their items.
  absl::StatusOr<std::map<std::string, double>> Evaluate(int split, int64_t batch_size = 0) const;
  // Binary edge tasks: the score (probability of a true edge) of every original edge of the
  // dataset, NaN outside graphs `graphs`; run in batches of `batch_size` graphs (0: one batch).
  // Errors: another task.
  absl::StatusOr<std::vector<float>> EdgeScores(const std::vector<int64_t>& graphs,
                                                int64_t batch_size) const;

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  // Whether each batch's vertices are partitioned over the workers (vertex sharding above).
  bool shards_vertices() const { return shard_vertices_; }
  const std::vector<double>& batch_losses() const { return batch_losses_; }

 private:
  GraphBatchTraining(Parts parts, int64_t batch_size, uint64_t seed)
      : parts_(parts), batch_size_(batch_size), seed_(seed) {}
  // Vertex sharding: the owner of each batch vertex, as worker 0 partitioned the batch and sent
  // it. Errors: fewer vertices than workers; a damaged message. Collective.
  absl::StatusOr<std::vector<int32_t>> PartitionBatch(const GraphBatch& batch, int step) const;
  // Vertex sharding: what a pass over a batch keeps until its backward has run: its exchange, and
  // this worker's vertices of the batch and its entries (Csr entry ids, in order): its vertices'
  // in-entries, or where edges reach both ends, both entries of the edges stored into its vertices.
  struct ShardedPass {
    std::unique_ptr<DistributedExecutor> exec;
    std::vector<int32_t> vertices, entries;
  };
  // Vertex sharding: the model's output rows for this worker's entries of `batch` (pass->entries).
  // Collective; `step` names its messages.
  absl::StatusOr<ag::Var> ShardedForward(const GraphBatch& batch, int epoch, int step, bool training,
                                         ShardedPass* pass) const;
  // Vertex sharding: forward, this worker's loss share and backward for `batch`, the whole
  // batch's labelled items being `items`; returns the loss share. Collective; `step` tags it.
  absl::StatusOr<double> ShardedStep(const GraphBatch& batch, int epoch, int step, double items) const;
  // Vertex sharding, without gradients: every entry's output row of `batch`, on every worker.
  // Collective; `step` names its messages.
  absl::StatusOr<Tensor> ShardedOutput(const GraphBatch& batch, int step) const;
  int rank() const { return parts_.exec != nullptr ? parts_.exec->rank() : 0; }
  int workers() const {
    return parts_.exec != nullptr && parts_.exec->distributed() ? parts_.exec->setup().comm->size() : 1;
  }

  Parts parts_;
  int64_t batch_size_;
  uint64_t seed_;
  int64_t batches_per_epoch_ = 0;
  bool shard_vertices_ = false;
  bool reflect_ = false;
  partition::Method method_ = partition::Method::kMetis;
  std::vector<double> batch_losses_;  // the last epoch's, in batch order
};

}  // namespace fg::runtime
