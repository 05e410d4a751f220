// Mini-batch training (train.batch_size > 0): each epoch, the task's training items (vertices to
// classify, or pairs to link) in a random order are cut into batches; bulks of train.bulk batches are sampled at once
// (sampling/sampler.h), the next bulk on a background thread (BecomeBackground) while the current one trains; per batch,
// the model's layers run over the batch's blocks with the hybrid executor, then the batch loss,
// backward and one optimizer step. Evaluation stays with the trainer (full-graph inference).
// Distributed, each worker samples and computes its items of every batch — every P-th one when
// every worker holds the whole graph; over a partitioned dataset, the training vertices it owns,
// with frontier vertices drawn by their owners and the input rows fetched from them
// (runtime/distributed/distributed_sampling.h). Sampling is keyed by the batch and the vertex's source id, so
// each root's subtree is the single-process one; the gradients are summed across workers every
// step, and every worker takes the same step. Thread-compatible.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/nn/optim.h"
#include "nau/executor.h"
#include "nau/model.h"
#include "runtime/distributed/distributed_executor.h"
#include "runtime/distributed/distributed_sampling.h"
#include "proto/config.pb.h"
#include "runtime/tasks/task.h"
#include "sampling/device_sampler.h"
#include "sampling/sampler.h"

namespace fg::runtime {

class MiniBatchTraining {
 public:
  // What training uses and does not own; all must outlive this object.
  struct Parts {
    nau::Model* model = nullptr;
    const nau::ModelSpec* spec = nullptr;
    const Task* task = nullptr;
    nn::Optimizer* optimizer = nullptr;
    nau::ExecStats* stats = nullptr;
    DistributedExecutor* exec = nullptr;  // the gradient and loss sums across workers
    // Over a partitioned dataset: this worker's rows, which sampling reads (null: whole graph).
    const OwnedRows* owned = nullptr;
    // Where the batches train (the model's parameters and input features are there): each batch's
    // blocks and keys are placed there after sampling on the host.
    Device device = Device::kCpu;
  };
  // `config` is resolved. Errors: a task without mini-batch loss, a layer whose neighbourhood is
  // not flat, sampler options that do not fit the model.
  static absl::StatusOr<std::unique_ptr<MiniBatchTraining>> Create(const flexgraph::RunConfig& config,
                                                                  Parts parts);

  // One epoch over every training vertex, with the layers' HDGs `layer_hdgs` as neighbourhood
  // matrices (level-1 children and roots are global vertex ids): over the whole graph, or over
  // this worker's vertices of a partitioned dataset, whose roots' source ids are `root_keys`
  // (per layer). Returns the mean batch loss.
  absl::StatusOr<double> RunEpoch(int epoch, const std::vector<hdg::HdgPtr>& layer_hdgs,
                                  const std::vector<Tensor>& root_keys = {});

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  // Of the last epoch: each batch's loss in batch order, the whole batch's (every worker's share
  // summed), as a single process computes it.
  const std::vector<double>& batch_losses() const { return batch_losses_; }
  // Batches sampled together (train.bulk, or the automatic choice for 0).
  int bulk() const { return bulk_; }
  // Of the last epoch: HDG entries sampled, and the seconds training waited for samples.
  int64_t sampled_edges() const { return sampled_edges_; }
  double sampling_wait_seconds() const { return sampling_wait_; }
  // Over a partitioned dataset (else null): other workers' input rows kept, and the epoch's rows
  // fetched and read from it.
  const RemoteRowCache* remote_rows() const { return remote_rows_.get(); }
  const RemoteNeighbourhoodCache* remote_neighbourhoods() const { return remote_neighbourhoods_.get(); }
  // "neighbor sampler, fanouts 25,10, batches of 1024 in bulks of 8: 3 batches per epoch".
  std::string Describe() const;
  // ShaDow: evaluation runs the model on each vertex's own subgraph too, as the method defines it
  // (the other samplers' models are evaluated on the whole graph).
  bool EvaluatesOnSubgraphs() const { return options_.kind == sampling::SamplerKind::kShadow; }
  // The model's output rows (on the host) for vertices `ids` (int64 global ids; over parts, this
  // worker's), each read out from its ShaDow subgraph, the same in every evaluation and for any
  // worker count; no gradients. `layer_hdgs` and `root_keys` as RunEpoch takes them. Over parts it
  // is collective (the subgraphs are drawn across the parts); `epoch` names its messages.
  absl::StatusOr<Tensor> InferOnSubgraphs(const Tensor& ids, const std::vector<hdg::HdgPtr>& layer_hdgs,
                                          const std::vector<Tensor>& root_keys, int epoch);
  // Whether each batch is drawn whole by one worker in turn (LADIES across workers).
  bool LeadersDrawBatches() const {
    return parts_.exec->distributed() && options_.kind == sampling::SamplerKind::kLayerWise;
  }

 private:
  MiniBatchTraining() = default;
  // A dropout that layer 0 draws of its input rows (LayerContext::Dropout's p and site), and one
  // drawn ahead for a batch's rows.
  struct InputDropout {
    float p;
    int site;
  };
  using DroppedInputs = std::vector<std::pair<InputDropout, Tensor>>;
  // A bulk's batches and, per batch, the dropouts of its input rows drawn ahead (maybe none).
  struct SampledBulk {
    std::vector<sampling::MiniBatch> batches;
    std::vector<DroppedInputs> dropped;
  };
  // The step number of batch `index` of `epoch`, and a training step's layer context (layer 0):
  // its dropout keys.
  int64_t Step(int epoch, int64_t index) const { return static_cast<int64_t>(epoch) * batches_per_epoch_ + index; }
  nau::LayerContext StepContext(int64_t step) const;
  // One step on this worker's `items` of a batch of `batch_total` training items (the task's;
  // `batch` holds their roots' blocks, `dropped` its input rows' dropouts drawn ahead); returns
  // this worker's share of the batch loss.
  double TrainBatch(const sampling::MiniBatch& batch, const DroppedInputs& dropped, const Tensor& items,
                    int64_t batch_total, int epoch, int64_t step);
  // The model's layers over a batch's blocks (then a ShaDow readout): its seeds' output rows.
  ag::Var RunLayers(const sampling::MiniBatch& batch, const DroppedInputs& dropped, nau::LayerContext* ctx);
  // The layers' neighbourhood matrices (RunEpoch's arguments), rebuilt when selection has made new
  // HDGs; `held` keeps them.
  absl::StatusOr<std::vector<const sampling::NeighbourhoodMatrix*>> Matrices(
      const std::vector<hdg::HdgPtr>& layer_hdgs, const std::vector<Tensor>& root_keys,
      std::vector<std::shared_ptr<const sampling::NeighbourhoodMatrix>>* held);

  // Sparse views of a constant, mostly-zero layer-0 input `h` (bag-of-words features) and of its
  // first `roots` rows, for DropoutLinear's SpMM path (LayerContext::input_sparse).
  void SparseInputViews(const ag::Var& h, int64_t roots, nau::LayerContext* ctx);

  Parts parts_;
  int sparse_input_ = -1;  // whether layer-0 inputs are sparse: -1 undecided, 0 no, 1 yes
  // Whether each batch's input rows are read with its samples, on the sampling thread (they need no
  // gradient and the batches train on the host): -1 undecided, 0 no, 1 yes.
  int prefetch_inputs_ = -1;
  int64_t input_row_bytes_ = 0;
  // Layer 0's dropouts of its input rows, learned from the first batch (input_dropouts_known_):
  // the sampling thread draws them too for the rows it reads ahead.
  std::vector<InputDropout> input_dropouts_;
  bool input_dropouts_known_ = false;
  sampling::SamplerOptions options_;
  nau::HybridExecutor executor_;
  int64_t batch_size_ = 0;
  int bulk_ = 1;
  Tensor items_;  // int64 0 .. n - 1: the task's training items (over all parts)
  // Over a partitioned dataset: the task's item number on this worker of every item (-1: another
  // worker's), items numbered in source-id order as a single process numbers them.
  std::vector<int32_t> local_item_;
  int64_t batches_per_epoch_ = 0;
  std::vector<double> batch_losses_;
  std::map<const hdg::Hdg*, std::shared_ptr<const sampling::NeighbourhoodMatrix>> matrices_;
  // Sampling on the device (train.sample_on): the sampler, and the layers' matrices it copied
  // (held, so that a new matrix is never taken for one of them).
  bool sample_on_device_ = false;
  std::unique_ptr<sampling::DeviceSampler> device_sampler_;
  std::vector<std::shared_ptr<const sampling::NeighbourhoodMatrix>> device_layers_;
  std::unique_ptr<RemoteRowCache> remote_rows_;
  std::unique_ptr<RemoteNeighbourhoodCache> remote_neighbourhoods_;
  int64_t sampled_edges_ = 0;
  double sampling_wait_ = 0;
};

// The fanouts of train.fanouts: node-wise, for a model of `layers` layers ("25,10"; "" = 25 for the
// seeds' neighbours, 10 below); shadow, per hop from the seed out, any number ("" = "10,5").
// Errors name the flag's text.
absl::StatusOr<std::vector<int>> ParseFanouts(const std::string& text, int layers,
                                              sampling::SamplerKind kind = sampling::SamplerKind::kNodeWise);

}  // namespace fg::runtime
