// Trainer: single-process full-batch training of a registered NAU model — loads the dataset,
// builds each layer's HDG (once, or every period for sampled selections), runs epochs through the
// HybridExecutor, evaluates on valid and test, selects the model on validation accuracy, stops
// early on request, checkpoints and resumes bit-exactly, and reports a summary (also as JSON).
// Thread-compatible: one Trainer per thread; kernels inside use all configured threads.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nau/executor.h"
#include "nau/model.h"
#include "flexgraph/nn/optim.h"
#include "runtime/config.h"

namespace fg::runtime {

struct TrainResult {
  std::string model, dataset;
  uint64_t seed = 0;
  int epochs = 0;      // epochs completed in total
  int best_epoch = 0;  // 1-based epoch with the best validation accuracy
  double final_loss = 0;
  double train_accuracy = 0, valid_accuracy = 0;
  double test_accuracy = 0, test_macro_f1 = 0, test_micro_f1 = 0;
  std::vector<double> losses;         // training loss per epoch
  std::vector<double> epoch_seconds;  // training step time per epoch
  double epoch_seconds_median = 0;
  int64_t hdg_bytes = 0;
  int64_t peak_rss_bytes = 0;
  int64_t num_vertices = 0, num_edges = 0;
  nau::ExecStats stats;
  std::map<std::string, double> extra;  // task-specific metrics (e.g. test_auc)
};

class Trainer {
 public:
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(const TrainOptions& options);
  ~Trainer();

  // Trains for the configured epochs (continuing from a checkpoint with options.resume).
  absl::StatusOr<TrainResult> Run();

  // One training step at `epoch` (0-based): forward, loss, backward, optimizer. Returns the loss.
  double TrainStep(int epoch);
  // Loss of the current parameters without dropout and without updating (epoch-0 agreement).
  double EvalLoss();
  // The HybridExecutor's plan for every layer, one block per layer.
  std::string Explain() const;

  nau::Model& model() { return *model_; }
  const graph::Dataset& dataset() const { return dataset_; }
  const TrainOptions& options() const { return options_; }
  int64_t HdgBytes() const;

 private:
  explicit Trainer(TrainOptions options);
  absl::Status Init();
  absl::Status EnsureHdgs(int epoch);
  ag::Var Forward(int epoch, bool training);
  struct Metrics {
    double train_acc, valid_acc, test_acc, test_macro_f1, test_micro_f1;
  };
  Metrics Evaluate();
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
  std::vector<Tensor> layer_roots_;  // int64 global ids of each layer's roots
  Tensor all_vertices_;              // int64 0..N-1
  Tensor labels_;                    // int64, per root of the last layer
  int64_t num_classes_ = 0;
  Tensor train_rows_, valid_rows_, test_rows_;  // int32 rows of the last layer's output
  nau::ExecStats stats_;
};

// The summary as a JSON object (keys as in TrainResult; extra metrics at top level).
std::string SummaryJson(const TrainResult& r);
// Writes `json` to path atomically (temp file + rename); errors name the path.
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents);

}  // namespace fg::runtime
