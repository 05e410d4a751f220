// Trainer: single-process full-batch training of a registered NAU model — loads the dataset,
// builds each layer's HDG (once, or every period for sampled selections), runs epochs through the
// HybridExecutor, evaluates on valid and test, selects the model on validation accuracy, stops
// early on request, checkpoints and resumes bit-exactly, and reports a summary (also as JSON).
// Thread-compatible: one Trainer per thread; kernels inside use all configured threads.
#pragma once

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nau/executor.h"
#include "nau/model.h"
#include "flexgraph/nn/optim.h"
#include "runtime/communicator.h"
#include "runtime/config.h"
#include "runtime/exchange.h"

namespace fg::runtime {

class LinkPredictionTask;

struct TrainResult {
  std::string model, dataset;
  uint64_t seed = 0;
  int epochs = 0;      // epochs completed in total
  int best_epoch = 0;  // 1-based epoch with the best validation accuracy
  double final_loss = 0;
  double train_accuracy = 0, valid_accuracy = 0;
  double test_accuracy = 0, test_macro_f1 = 0, test_micro_f1 = 0;
  double epoch0_loss = std::nan("");  // loss of the initial parameters (options.epoch0_loss)
  std::vector<double> losses;         // training loss per epoch
  std::vector<double> epoch_seconds;  // training step time per epoch
  double epoch_seconds_median = 0;
  int64_t hdg_bytes = 0;
  int64_t peak_rss_bytes = 0;
  int64_t num_vertices = 0, num_edges = 0;
  nau::ExecStats stats;
  std::map<std::string, double> extra;  // task-specific metrics (e.g. test_auc)
  // Distributed runs: this worker's traffic and time split (zero in single-process runs).
  int world_size = 1;
  int64_t bytes_features = 0, bytes_partials = 0, bytes_gradients = 0, bytes_allreduce = 0;
  double compute_seconds = 0, wait_seconds = 0, overlap = 0;
  // Vectors received per forward pass (all layers): as chosen per peer, and the alternatives.
  int64_t vectors_chosen = 0, vectors_rows_only = 0, vectors_partial_only = 0, vectors_naive = 0;
};

// A worker's place in a distributed run: its communicator and the partition plan (the owning
// rank of every global vertex). Null communicator: single process.
struct DistributedSetup {
  Communicator* comm = nullptr;
  std::vector<int32_t> owners;
  ExchangeMode exchange = ExchangeMode::kAuto;
  bool pipeline = true;  // overlap sends with local aggregation
};

class Trainer {
 public:
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(const TrainOptions& options,
                                                          DistributedSetup dist = {});
  ~Trainer();

  // Trains for the configured epochs (continuing from a checkpoint with options.resume).
  absl::StatusOr<TrainResult> Run();

  // One training step at `epoch` (0-based): forward, loss, backward, optimizer. Returns the loss.
  double TrainStep(int epoch);
  // Loss of the current parameters without dropout and without updating (epoch-0 agreement).
  double EvalLoss();
  // The first communication error of a distributed run (OK otherwise).
  absl::Status status() const { return *xctx_.error; }
  // The HybridExecutor's plan for every layer, one block per layer.
  std::string Explain() const;

  nau::Model& model() { return *model_; }
  const graph::Dataset& dataset() const { return dataset_; }
  const TrainOptions& options() const { return options_; }
  int64_t HdgBytes() const;
  // Writes the current HDGs as TrainOptions::export_hdg describes (single process only).
  absl::Status ExportHdgs(const std::string& dir) const;

 private:
  explicit Trainer(TrainOptions options);
  absl::Status Init();
  // Labels, splits and their rows in the last layer's output, for node classification.
  absl::Status InitNodeClassification(const std::string& target);
  absl::Status EnsureHdgs(int epoch);
  ag::Var Forward(int epoch, bool training);
  // One layer on this worker's rows: exchange with peers, aggregate, update.
  ag::Var DistributedLayer(int i, const ag::Var& h, nau::LayerContext& ctx);
  // Sums the parameter gradients across workers (one flattened buffer, ring all-reduce).
  void AllReduceGradients(int epoch);
  bool distributed() const { return dist_.comm != nullptr && dist_.comm->size() > 1; }
  struct Metrics {
    double train_acc, valid_acc, test_acc, test_macro_f1, test_micro_f1;
    std::map<std::string, double> extra;  // task-specific (link prediction: AUC, hits@10)
  };
  Metrics Evaluate(int epoch);
  absl::Status SaveCheckpoint(int epochs_done, const TrainResult& state) const;
  absl::Status LoadCheckpoint(TrainResult* state, int* epochs_done);

  TrainOptions options_;
  graph::Dataset dataset_;
  nau::VertexSpace space_;
  nau::ModelSpec spec_;
  std::unique_ptr<nau::Model> model_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  nau::HybridExecutor executor_;
  struct LayerGraph {
    std::shared_ptr<const hdg::Hdg> hdg;
    std::vector<nau::LevelPlan> plan;
    int built_epoch = -1;
  };
  std::vector<LayerGraph> layer_graphs_;
  std::vector<Tensor> layer_roots_;  // int64 global ids of each layer's roots (owned ones)
  Tensor table_ids_;                 // int64 global ids of layer 0's input rows (owned ones)
  DistributedSetup dist_;
  std::vector<LayerExchange> exchanges_;  // per layer, distributed runs
  ExchangeContext xctx_;
  int64_t global_train_ = 0;          // training rows across all workers
  bool sparse_checked_ = false;
  SparseMatrixPtr input_sparse_;      // sparse view of a constant, mostly-zero layer-0 input
  const void* input_sparse_source_ = nullptr;
  Tensor labels_;                    // int64, per root of the last layer
  int64_t num_classes_ = 0;
  Tensor train_rows_, valid_rows_, test_rows_;  // int32 rows of the last layer's output
  nau::ExecStats stats_;
  std::unique_ptr<LinkPredictionTask> link_;  // set when the model predicts links
};

// The file holding parameter `param` of `model` in the DGL/PyG baselines' weights/ layout
// (bench/baselines/README.md), e.g. ("gcn", "layer1.linear.weight") -> "gcn_l1_weight.npy";
// "" when the baselines have no such parameter.
std::string BaselineWeightFile(const std::string& model, const std::string& param);
// Sets every parameter from <dir>/<name>.npy or, failing that, <dir>/BaselineWeightFile(...).
// Errors name the parameter and the file (missing file, wrong dtype or shape).
absl::Status LoadInitialParameters(const std::string& dir, const std::string& model,
                                   const std::vector<nn::NamedParameter>& params);

// The summary as a JSON object (keys as in TrainResult; extra metrics at top level).
std::string SummaryJson(const TrainResult& r);
// Writes `json` to path atomically (temp file + rename); errors name the path.
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents);

}  // namespace fg::runtime
