#include "nau/model.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"
#include "absl/strings/str_join.h"
#include "nau/options.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/status.h"

namespace fg::nau {

int64_t ModelSpec::FeatureDim(const std::string& type) const {
  auto it = dataset->features.find(type);
  return it == dataset->features.end() || !it->second.defined() ? 0 : it->second.dim(1);
}

ag::Var Model::Input(LayerContext& ctx, const ModelSpec& spec) {
  FG_CHECK(spec.vertices->num_types() == 1)
      << "the default Model::Input handles one node type; override it for heterogeneous graphs";
  return ag::Var(spec.dataset->features.at(spec.vertices->type_name(0)));
}

ag::Var Model::InputRows(LayerContext& ctx, const ModelSpec& spec, const Tensor& ids) {
  Tensor rows = Tensor::Empty({ids.numel()}, DType::kInt32);
  for (int64_t k = 0; k < ids.numel(); ++k) rows.i32()[k] = static_cast<int32_t>(ids.i64()[k]);
  const ag::Var input = Input(ctx, spec);
  return ag::GatherRows(input, rows.To(input.value().device()));
}

std::vector<int32_t> Model::Roots(int i, const ModelSpec& spec) const {
  int64_t lo = 0, hi = spec.vertices->size();
  if (i == num_layers() - 1) {
    const int t = spec.vertices->TypeIndex(spec.target_type);
    FG_CHECK(t >= 0) << "unknown target type " << spec.target_type;
    lo = spec.vertices->type_offset(t);
    hi = lo + spec.vertices->type_size(t);
  }
  std::vector<int32_t> roots(hi - lo);
  for (int64_t v = lo; v < hi; ++v) roots[v - lo] = static_cast<int32_t>(v);
  return roots;
}

absl::StatusOr<hdg::Hdg> SelectHdg(const Layer& layer, int index, const ModelSpec& spec, int epoch,
                                   const std::vector<int32_t>& roots) {
  const SelectContext ctx(spec.dataset, spec.vertices, spec.seed, SelectionRound(layer, epoch), index);
  FG_ASSIGN_OR_RETURN(hdg::Hdg built, hdg::HdgBuilder(layer.Schema(), spec.vertices->size())
                                          .Build(roots, [&](int32_t root, hdg::NeighborWriter& out) {
                                            layer.SelectNeighbors(ctx, root, out);
                                          }));
  if (ctx.foreign_vertex() >= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "layer ", index, ": neighbour selection needs the topology of vertex ",
        ctx.foreign_vertex(), ", which this part of the partitioned dataset does not hold"));
  }
  return built;
}

int SelectionRound(const Layer& layer, int epoch) {
  return layer.SampledSelection() ? epoch / std::max(1, layer.SelectionPeriod()) : 0;
}

std::string SharedSelectionKey(const Layer& layer) {
  return layer.SampledSelection() ? "" : layer.SelectionKey();
}

void Model::AdoptLayerParameters() {
  for (int i = 0; i < num_layers(); ++i) AddChild(absl::StrCat("layer", i), layer(i));
}

absl::Status StackedModel::Build(const ModelSpec& spec) {
  if (spec.layers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("layers must be positive, got ", spec.layers));
  }
  if (spec.hidden < 1) {
    return absl::InvalidArgumentError(absl::StrCat("hidden must be positive, got ", spec.hidden));
  }
  if (!spec.dataset->graph.IsHomogeneous()) {
    const graph::HeteroGraph& g = spec.dataset->graph;
    return absl::InvalidArgumentError(absl::StrCat(
        "a stack of homogeneous layers needs one node type and one relation; dataset '",
        spec.dataset->name, "' has node types {", absl::StrJoin(g.node_types, ", "), "} and ",
        g.relations.size(), " relations: train a heterogeneous model (magnn, pinsage) on it, or this "
        "model on a homogeneous view of one node type (--target_type T --homogeneous_view T-X-T,...)"));
  }
  const int64_t in = spec.FeatureDim(spec.target_type);
  if (in == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("node type '", spec.target_type, "' has no input features"));
  }
  layers_.clear();
  for (int i = 0; i < spec.layers; ++i) {
    const bool last = i == spec.layers - 1;
    const int64_t d_in = i == 0 ? in : spec.hidden;
    const int64_t d_out = last ? spec.num_classes : spec.hidden;
    auto layer = factory_(spec, i, d_in, d_out, last);
    if (!layer.ok()) return layer.status();
    layers_.push_back(std::move(layer).value());
  }
  AdoptLayerParameters();
  return absl::OkStatus();
}

ModelRegistry& ModelRegistry::Get() {
  static auto* registry = new ModelRegistry();
  return *registry;
}

void ModelRegistry::Register(ModelInfo info) {
  const std::string name = info.name;
  models_[name] = std::move(info);
}

const ModelInfo* ModelRegistry::Find(const std::string& name) const {
  auto it = models_.find(name);
  return it == models_.end() ? nullptr : &it->second;
}

std::vector<std::string> ModelRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, info] : models_) names.push_back(name);
  return names;
}

}  // namespace fg::nau
