// The result of a training run and its reports: the human-readable summary lines and the
// machine-readable summary (`--summary_json`), a google.protobuf.Struct printed as JSON.
// Thread-compatible.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <google/protobuf/struct.pb.h>

#include "absl/status/statusor.h"
#include "nau/exec_stats.h"
#include "runtime/distributed/distributed_executor.h"
#include "runtime/tasks/task.h"

namespace fg::runtime {

// One epoch of a run, as the summary's "history" and the TensorBoard scalars report it.
struct EpochRecord {
  int epoch = 0;  // 1-based
  double loss = 0, seconds = 0;
  double lr = 0;
  nau::ExecStats stats;    // the epoch's stages, its evaluation included
  bool evaluated = false;  // `metrics` holds the epoch's evaluation
  EpochMetrics metrics;
  // Distributed runs with TensorBoard output: every worker's bytes sent and seconds waited in
  // this epoch, by rank (gathered to all workers; empty otherwise).
  std::vector<double> worker_bytes_sent, worker_wait_seconds;
};

struct TrainResult {
  std::string model, dataset;
  uint64_t seed = 0;
  int epochs = 0;      // epochs completed in total
  int best_epoch = 0;  // 1-based epoch with the best validation metric
  int resumed_from_epoch = 0;  // epochs restored from a checkpoint (0: trained from epoch 1)
  // The task's metrics: accuracies and F1 scores for node classification (NaN for a split that is
  // empty or absent: null in the summary), the `extra` ROC-AUC and hits@10 for link prediction (its
  // accuracy fields are NaN).
  nau::Task task = nau::Task::kNodeClassification;
  // The validation value model selection compared at best_epoch (accuracy, macro-F1, or ROC-AUC);
  // NaN without a validation split, where the last evaluated epoch is the one selected.
  double best_selection = std::nan("");
  double final_loss = 0;
  double train_accuracy = 0, valid_accuracy = 0, valid_macro_f1 = 0;
  double test_accuracy = 0, test_macro_f1 = 0, test_micro_f1 = 0;
  double epoch0_loss = std::nan("");  // loss of the initial parameters (--epoch0_loss)
  std::vector<double> losses;         // training loss per epoch
  std::vector<double> epoch_seconds;  // training step time per epoch
  double epoch_seconds_median = 0;
  std::vector<nau::ExecStats> epoch_stats;  // the training step's stages, per epoch
  int64_t hdg_bytes = 0;
  int64_t peak_rss_bytes = 0;
  int64_t peak_tensor_bytes = 0;  // host tensor blocks of 64 KiB and more in use at once, at most
  int64_t host_fresh_bytes = 0;   // of those, bytes taken from the system (page faults) over the run
  int64_t peak_device_bytes = 0;  // the GPU allocator's peak in use (0 on the CPU)
  // Times the host waited for the GPU during each training step (0 on the CPU): reading the loss
  // back is one; every other wait is a stall to remove.
  std::vector<double> epoch_host_syncs;
  int64_t num_vertices = 0, num_edges = 0;
  nau::ExecStats stats;
  // Mini-batch training (zero otherwise): batches and sampled HDG entries per epoch (the last),
  // and the seconds training waited for samples over the run.
  int64_t batches_per_epoch = 0, sampled_edges_per_epoch = 0;
  // Mini-batch training: every batch's loss (the whole batch's), epoch after epoch of those this
  // process trained, in batch order (batches_per_epoch per epoch; not in the summary JSON).
  std::vector<double> batch_losses;
  int bulk = 0;  // batches sampled together
  double sampling_wait_seconds = 0;
  // Over a partitioned dataset (-1 otherwise): other workers' input rows fetched and read from the
  // cache of them, in the last epoch, and the most rows that cache keeps.
  int64_t remote_rows_fetched = -1, remote_rows_cached = -1, remote_rows_capacity = -1;
  // LADIES over parts, the last epoch: other workers' neighbourhood entries fetched, and read from
  // the cache (-1: none).
  int64_t remote_neighbourhood_entries_fetched = -1, remote_neighbourhood_entries_cached = -1;
  std::vector<EpochRecord> history;  // the epochs run in this process
  std::map<std::string, double> extra;  // task-specific metrics (e.g. test_auc)
  Traffic traffic;  // distributed runs: this worker's traffic and time split
};

// Median of `v` (0 when empty).
double Median(std::vector<double> v);
// The epochs a median epoch time is taken over: all but the first (warm-up) when there are more
// than five.
size_t FirstSteadyEpoch(size_t epochs);

// The metrics of an evaluated epoch by their summary names: train_accuracy, valid_accuracy,
// valid_macro_f1, test_accuracy, test_macro_f1, test_micro_f1 and the task's extras.
std::vector<std::pair<std::string, double>> NamedMetrics(const EpochMetrics& m);

// The summary: keys as in TrainResult (stage times of the whole run under "stage_seconds", their
// per-epoch medians over the epochs of epoch_seconds_median under "stage_seconds_median_epoch"),
// task metrics at the top level, and "history": one object per epoch run in this process,
// {"epoch", "loss", "seconds", "stage_seconds": {stage: seconds}} and, on evaluated epochs, the
// NamedMetrics; non-finite numbers are null.
google::protobuf::Struct SummaryStruct(const TrainResult& r);
std::string SummaryJson(const TrainResult& r);

// JSON text of a Struct (indented), and back; parse errors name `where`.
std::string StructToJson(const google::protobuf::Struct& s);
absl::StatusOr<google::protobuf::Struct> StructFromJson(const std::string& json,
                                                        const std::string& where);
// A number, or null when not finite.
google::protobuf::Value NumberValue(double v);

// The "summary:" and "stages:" lines for stderr.
void PrintSummary(const TrainResult& r, std::FILE* out);
// The result in one line, in the task's own metrics: "gcn on cora: test accuracy 0.8130, macro-F1
// ..., micro-F1 ... (best valid 0.7940, macro-F1 ..., at epoch 57), final loss 0.4512";
// "no test split" without one; "(no validation split: the last epoch, 200)" without that;
// "pinsage on lastfm: test AUC 0.91, hits@10 0.42 (best valid AUC 0.90, at epoch 3), ...".
std::string ResultLine(const TrainResult& r);

}  // namespace fg::runtime
