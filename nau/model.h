// Models: a stack of NAU layers plus the input transform, and the registry that finds a model by
// name (`flexgraph train --model gcn`). A model registers itself with its paper's setup as defaults
// (a flexgraph.RunConfig in text format, proto/config.proto) and the options it reads:
//
//   FG_REGISTER_MODEL(gcn, "GCN (Kipf & Welling)",
//                     "model { hidden: 16 dropout: 0.5 } train { lr: 0.01 weight_decay: 5e-4 }",
//                     {{"input_dropout", nau::OptionType::kInt, "1", "dropout on the input: 0 or 1"}},
//                     [] { return std::make_unique<Gcn>(); });
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"
#include "nau/context.h"
#include "nau/layer.h"
#include "nau/options.h"

namespace fg::nau {

// What a model's output rows are: vertices, vertex pairs, the entries of a graph batch's in-edge
// Csr (edge classification) or the graphs of a batch (graph classification).
enum class Task { kNodeClassification, kLinkPrediction, kEdgeClassification, kGraphClassification };

// What a model builds against: the resolved hyperparameters of the run (runtime/train/config.h resolves
// them from the RunConfig), its options and the data.
struct ModelSpec {
  const graph::Dataset* dataset = nullptr;
  const VertexSpace* vertices = nullptr;
  std::string target_type;   // node type whose vertices are classified
  int64_t num_classes = 0;
  int hidden = 16;
  int layers = 2;
  float dropout = 0.5f;
  int heads = 1;
  uint64_t seed = 0;
  OptionValues options;  // the model's declared options (and its task's), as set or defaulted
  // Input feature width of a node type (0 when it has none).
  int64_t FeatureDim(const std::string& type) const;
};

class Model : public nn::Module {
 public:
  ~Model() override = default;
  // Creates the layers and parameters. Errors name the offending option.
  virtual absl::Status Build(const ModelSpec& spec) = 0;
  virtual int num_layers() const = 0;
  virtual Layer& layer(int i) = 0;
  virtual Task task() const { return Task::kNodeClassification; }
  // What Build chose by itself (automatic choices and their estimates), for the user: the trainer
  // prints it unless quiet. Empty: nothing to say.
  virtual std::string Explain() const { return ""; }
  // Input rows of the vertex table [spec.vertices->size(), f]. Default: the features of the only
  // node type (heterogeneous models override, e.g. with type-specific projections).
  virtual ag::Var Input(LayerContext& ctx, const ModelSpec& spec);
  // The input rows of the vertices `ids` (int64 global ids; a dataset loaded whole), in that order:
  // what mini-batches read. Default: Input() gathered; models whose input is computed (typed
  // projections, learned tables) override it to compute only those rows. Where the rows need no
  // gradient, mini-batch training reads them ahead on its sampling thread, concurrently with
  // training: an override then reads only the dataset and changes no state.
  virtual ag::Var InputRows(LayerContext& ctx, const ModelSpec& spec, const Tensor& ids);
  // Edge-state models (Layer::UpdatesEdges): the initial edge state, one row per level-1 entry of
  // the first layer's HDG (the entries of the in-edge Csr of spec.dataset when it selects every
  // in-neighbour; entry_features: [nnz, f] edge features per Csr entry, or undefined; per entry of
  // ctx.entries where that is set). Default: none (undefined).
  virtual ag::Var InitialEdgeState(LayerContext& ctx, const ModelSpec& spec,
                                   const Tensor& entry_features) {
    return ag::Var();
  }
  // The task's output rows from the last layer's output `h` (and ctx.edge_state): one row per
  // entry of spec.dataset's in-edge Csr for edge classification (of ctx.entries where that is
  // set; ctx.edge_matrix's entries when the layers select every in-neighbour), per graph of
  // spec.dataset->graphs for graph classification (a readout). Default: h.
  // Edge-state models: `h` holds the rows of ctx.edge_matrix's columns, the roots (its rows) first;
  // they are all the vertices alone, and a vertex-sharded worker's own vertices then the ghosts
  // (runtime/train/graph_batches.h).
  virtual ag::Var Head(LayerContext& ctx, const ModelSpec& spec, const ag::Var& h) { return h; }
  // Whether training on a set of graphs runs each layer under ag::Checkpoint: its inputs (the
  // vertex rows and the edge state) kept, its intermediates recomputed in the backward pass.
  // Its layers must then compute the same values when run again (counter-based randomness) and
  // make no call across workers (LayerContext::MeanOverRoots): the second run happens in the
  // backward pass, on this worker alone. Default: no.
  virtual bool RecomputeLayers() const { return false; }
  // Roots (global vertex ids) of layer i. Default: every vertex for hidden layers, the target
  // type's vertices for the last layer.
  virtual std::vector<int32_t> Roots(int i, const ModelSpec& spec) const;

 protected:
  // Adopts the parameters of layer i (call at the end of Build).
  void AdoptLayerParameters();
};

// A model of `spec.layers` layers of one kind, widths in -> hidden -> ... -> num_classes.
class StackedModel : public Model {
 public:
  using LayerFactory = std::function<absl::StatusOr<std::unique_ptr<Layer>>(
      const ModelSpec& spec, int index, int64_t in, int64_t out, bool last)>;
  explicit StackedModel(LayerFactory factory) : factory_(std::move(factory)) {}
  absl::Status Build(const ModelSpec& spec) override;
  int num_layers() const override { return static_cast<int>(layers_.size()); }
  Layer& layer(int i) override { return *layers_[i]; }

 private:
  LayerFactory factory_;
  std::vector<std::unique_ptr<Layer>> layers_;
};

// NeighborSelection as training runs it (the trainer and the partitioner's cost model both use it).
// The HDG of `layer`, layer `index` of a model built from `spec`, over `roots` (global vertex ids)
// at training epoch `epoch`: randomness keyed by (spec.seed, round, index, root), the round being
// epoch / SelectionPeriod() for sampled selections and 0 for the others. Errors name the root.
absl::StatusOr<hdg::Hdg> SelectHdg(const Layer& layer, int index, const ModelSpec& spec, int epoch,
                                   const std::vector<int32_t>& roots);
// The selection round of `layer` at training epoch `epoch` (what its SelectContext is keyed by).
int SelectionRound(const Layer& layer, int epoch);
// The key under which layers over as many roots share one HDG (the first one built): the layer's
// SelectionKey() when its selection is deterministic, "" (never shared) when it samples.
std::string SharedSelectionKey(const Layer& layer);

struct ModelInfo {
  std::string name;
  std::string description;
  // The model's defaults: a flexgraph.RunConfig in text format (its paper's setup).
  std::string defaults;
  OptionList options;
  std::function<std::unique_ptr<Model>()> factory;
  // The model also predicts links (datasets with only an edge split); it then reads the
  // link-prediction task's options too.
  bool predicts_links = false;
};

class ModelRegistry {
 public:
  static ModelRegistry& Get();
  void Register(ModelInfo info);
  const ModelInfo* Find(const std::string& name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, ModelInfo> models_;
};

struct ModelRegistrar {
  explicit ModelRegistrar(ModelInfo info) { ModelRegistry::Get().Register(std::move(info)); }
};

}  // namespace fg::nau

// FG_REGISTER_MODEL(id, description, defaults, options, factory[, predicts_links]).
#define FG_REGISTER_MODEL(id, ...)                              \
  static ::fg::nau::ModelRegistrar fg_model_registrar_##id(     \
      ::fg::nau::ModelInfo{#id, __VA_ARGS__})
