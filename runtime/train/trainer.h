// Trainer: training of a registered NAU model on this worker's rows — the same code for
// one process and many. It puts the parts together: the dataset and the Task (labels, loss,
// evaluation), the model and its optimizer, each layer's HDG (built once, or every period for
// sampled selections), mini-batch training over them when asked (runtime/train/minibatch.h), the
// DistributedExecutor (the hybrid executor, with the exchange and the
// cross-worker reductions when there are peers), checkpoints, and the run summary.
// Thread-compatible: one Trainer per thread; kernels inside use all configured threads.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/nn/optim.h"
#include "nau/model.h"
#include "proto/saved_model.pb.h"
#include "runtime/train/config.h"
#include "runtime/distributed/distributed_executor.h"
#include "runtime/train/graph_batches.h"
#include "runtime/train/minibatch.h"
#include "runtime/train/summary.h"
#include "runtime/tasks/task.h"

namespace fg::runtime {

class Trainer {
 public:
  // `config` is resolved first (runtime/train/config.h), so unset fields take their defaults.
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(const flexgraph::RunConfig& config,
                                                          DistributedSetup dist = {});
  ~Trainer();

  // Trains for the configured epochs (continuing from a checkpoint with train.resume).
  absl::StatusOr<TrainResult> Run();
  // Called by Run() after each epoch with its record (as the summary's history holds it); an error
  // ends the run with that status (absl::CancelledError for a user's interrupt). Single process:
  // in a distributed run every worker would have to stop at the same epoch.
  using EpochCallback = std::function<absl::Status(const EpochRecord&)>;
  void set_epoch_callback(EpochCallback callback) { epoch_callback_ = std::move(callback); }

  // Training at `epoch` (0-based): forward, loss, backward, optimizer — once over the whole graph,
  // or per batch in mini-batch training. Returns the loss (the mean over batches).
  double TrainStep(int epoch);
  // Loss of the current parameters without dropout and without updating (epoch-0 agreement).
  double EvalLoss();
  // The first communication error of a distributed run (OK otherwise).
  absl::Status status() const { return exec_.status(); }
  // Every layer's HDG and plan, one block per layer.
  std::string Explain() const;

  nau::Model& model() { return *model_; }
  const graph::Dataset& dataset() const { return dataset_; }
  // The resolved configuration.
  const flexgraph::RunConfig& config() const { return config_; }
  int64_t HdgBytes() const;
  // Layer i's HDG as selected (level-1 children are global vertex ids). A distributed full-graph
  // run that exports no HDG releases them once Run() starts (ReleaseHdgs).
  const hdg::Hdg& layer_hdg(int i) const { return *layer_graphs_[i].hdg; }
  // Writes the current HDGs as OutputConfig.export_hdg describes (single process only).
  absl::Status ExportHdgs(const std::string& dir) const;
  // The run as a saved model describes it (proto/saved_model.proto), without the epoch, metrics.
  flexgraph::SavedModel Describe() const;

  // Inference with the current parameters (no dropout) and the HDGs selection draws at `epoch`
  // (0-based): the output rows of layer `layer` (-1: the model's input rows) — or, with `nbr`, the
  // aggregated neighbourhood its Update reads — with the global vertex id (int64) of each row in
  // `ids`. Single process only.
  absl::StatusOr<Tensor> Infer(int epoch, int layer, Tensor* ids, bool nbr = false);
  // The task's metrics of the current parameters at `epoch` (as training evaluates them).
  absl::StatusOr<EpochMetrics> EvaluateAt(int epoch);
  const Task& task() const { return *task_; }
  // Training on batches of whole graphs, when the dataset is a graph set (else nullptr).
  const GraphBatchTraining* graph_batches() const { return graph_batches_.get(); }
  const nau::VertexSpace& vertices() const { return space_; }

 private:
  Trainer(flexgraph::RunConfig config, DistributedSetup dist);
  absl::Status Init();
  // The dataset, the task it supervises and the feature normalisation.
  absl::Status LoadData();
  // The model over the task's target type, its initial parameters and the optimizer.
  absl::Status BuildModel();
  // Over a process grid (DistributedSetup::grid, or --exchange auto's choice): checks that the run
  // can use one and builds it.
  absl::Status StartGrid();
  // This worker's input rows and every layer's roots: all vertices alone, the owned ones with peers
  // (over a grid: the held ones, the last layer's owned).
  void PlaceRows();
  absl::Status EnsureHdgs(int epoch);
  // Mini-batch training in a distributed run: every layer's HDG over all its roots, for sampling
  // (whole_graphs_; a single process samples layer_graphs_, which already select every vertex).
  absl::Status WholeGraphHdgs(int epoch);
  // Runs layers 0..last (-1: none; the input rows); every layer by default.
  // `capture`: receives the last layer's aggregated neighbourhood (LayerContext::capture_nbr).
  ag::Var Forward(int epoch, bool training, int last = -2, ag::Var* capture = nullptr);
  EpochMetrics Evaluate(int epoch);
  bool distributed() const { return exec_.distributed(); }
  // The task pairs rows of different workers: it gets every worker's output rows (TaskRows).
  bool all_rows() const { return distributed() && task_->NeedsAllRows(); }
  ag::Var TaskRows(const ag::Var& output);

  flexgraph::RunConfig config_;
  graph::Dataset dataset_;
  nau::VertexSpace space_;
  std::string target_;  // node type of the last layer's roots
  nau::ModelSpec spec_;
  std::unique_ptr<Task> task_;
  std::unique_ptr<nau::Model> model_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  DistributedExecutor exec_;
  struct LayerGraph {
    std::shared_ptr<const hdg::Hdg> hdg;
    int64_t bytes = 0;  // the HDG's size (0 when an earlier layer's is shared)
    int built_epoch = -1;
  };
  // A distributed layer aggregates over the executor's copies of its HDG relabelled into this
  // worker's rows: the global-id HDGs are released once planned (about a third of a GCN worker's
  // sparse memory), and again after every re-selection.
  void ReleaseHdgs();
  bool keep_hdgs_ = true;
  // True when `lg` must be selected (again) for `layer` at `epoch`: never selected, or sampled in
  // an earlier selection period.
  static bool Stale(const nau::Layer& layer, const LayerGraph& lg, int epoch);
  std::vector<LayerGraph> layer_graphs_;
  std::vector<LayerGraph> whole_graphs_;
  // This worker's rows: each layer's roots and layer 0's input rows (owned ones).
  std::vector<DistributedExecutor::Rows> layer_roots_;
  DistributedExecutor::Rows table_;
  // Keys of the global row lists: each layer's roots, and the table (every vertex).
  std::vector<uint64_t> roots_key_;
  uint64_t table_key_ = 0;
  Device device_ = Device::kCpu;  // where parameters, HDGs and activations live
  Tensor input_on_device_;        // the constant layer-0 input placed on device_ (once)
  const void* input_on_device_source_ = nullptr;
  bool sparse_checked_ = false;
  SparseMatrixPtr input_sparse_;     // sparse view of a constant, mostly-zero layer-0 input
  const void* input_sparse_source_ = nullptr;
  nau::ExecStats stats_;
  std::unique_ptr<MiniBatchTraining> minibatch_;  // train.batch_size > 0
  std::optional<OwnedRows> owned_rows_;            // mini-batches over a partitioned dataset
  // A graph-set dataset: batches of whole graphs instead of layer HDGs over one graph.
  std::unique_ptr<GraphBatchTraining> graph_batches_;
  absl::Status InitGraphBatches();
  // Training on one graph: whole-graph or mini-batch (Init's other branch).
  absl::Status InitOneGraph();
  // train.max_steps: fewer epochs where the steps run out first (set-up, once the batches per
  // epoch are known); every later reader of train.epochs sees the epochs that run.
  absl::Status LimitEpochsBySteps();
  EpochCallback epoch_callback_;
};

}  // namespace fg::runtime
