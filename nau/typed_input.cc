#include "nau/typed_input.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"

namespace fg::nau {

absl::StatusOr<Featureless> ParseFeatureless(const std::string& name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "embedding") return Featureless::kEmbedding;
  if (n == "onehot") return Featureless::kOneHot;
  return absl::InvalidArgumentError(absl::StrCat(
      "model option 'featureless': unknown encoding '", name, "' (choices: embedding, onehot)"));
}

OptionSpec FeaturelessOption() {
  return {"featureless", OptionType::kString, "embedding",
          "node types without features: embedding (learned vector per vertex) or onehot"};
}

TypedInput::TypedInput(const ModelSpec& spec, int64_t width, Featureless featureless,
                       uint64_t stream_base, std::vector<bool> read)
    : width_(width), featureless_(featureless) {
  for (int t = 0; t < spec.vertices->num_types(); ++t) {
    const std::string& type = spec.vertices->type_name(t);
    const int64_t f = spec.FeatureDim(type);
    const uint64_t stream = stream_base + static_cast<uint64_t>(t);
    Projection p;
    p.read = read.empty() || read[t];
    if (!p.read) {
      p.zero_rows = spec.dataset->part ? spec.dataset->part->end(t) - spec.dataset->part->begin(t)
                                       : spec.vertices->type_size(t);
      projections_.push_back(std::move(p));
      continue;
    }
    p.has_features = f > 0;
    if (p.has_features) {
      p.linear = nn::Linear(f, width, /*bias=*/true, nn::Init::kGlorot, spec.seed, stream);
      AddChild(absl::StrCat("project.", type), p.linear);
    } else if (featureless == Featureless::kOneHot) {
      p.linear = nn::Linear(spec.vertices->type_size(t), width, /*bias=*/true, nn::Init::kGlorot,
                            spec.seed, stream);
      AddChild(absl::StrCat("project.", type), p.linear);
    } else {
      p.embedding = nn::Embedding(spec.vertices->type_size(t), width, spec.seed, stream);
      AddChild(absl::StrCat("embed.", type), p.embedding);
    }
    if (!p.has_features && spec.dataset->part) {
      // A part takes its own vertices' rows, by source-dataset id: every vertex gets the row (and
      // initial value) it has in the unpartitioned run.
      p.rows = spec.dataset->part->SourceRows(type);
    }
    projections_.push_back(std::move(p));
  }
}

ag::Var TypedInput::Forward(const ModelSpec& spec) const {
  // Rows of unread types are zeros on the parameters' device.
  Device device = Device::kCpu;
  for (const Projection& p : projections_) {
    for (const ag::Var& v : {p.linear.weight(), p.embedding.table()}) {
      if (v.defined()) device = v.value().device();
    }
  }
  std::vector<ag::Var> parts;
  int64_t rows = 0;
  for (int t = 0; t < spec.vertices->num_types(); ++t) {
    const Projection& p = projections_[t];
    ag::Var h;
    if (!p.read) {
      h = ag::Var(Tensor::Zeros({p.zero_rows, width_}, DType::kFloat32, device));
    } else if (p.has_features) {
      h = p.linear.Forward(ag::Var(spec.dataset->features.at(spec.vertices->type_name(t))));
    } else {
      const ag::Var& table =
          featureless_ == Featureless::kOneHot ? p.linear.weight() : p.embedding.table();
      h = p.rows.defined() ? ag::GatherRows(table, p.rows) : table;
      if (featureless_ == Featureless::kOneHot) h = ag::AddBias(h, p.linear.bias());
    }
    if (h.rows() == 0) continue;
    rows += h.rows();
    parts.push_back(ag::Reshape(h, {1, h.rows() * width_}));
  }
  if (parts.empty()) return ag::Var(Tensor::Zeros({0, width_}, DType::kFloat32, device));
  if (parts.size() == 1) return ag::Reshape(parts[0], {rows, width_});
  return ag::Reshape(ag::Concat(parts), {rows, width_});
}

}  // namespace fg::nau
