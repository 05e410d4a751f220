// Type-specific input projections of heterogeneous models (MAGNN, HAN, R-GCN): every node type
// maps its content into one hidden space,
//   h_v = x_v W_{type(v)} + b_{type(v)}                         types with features,
// and a type without features gets, by the `featureless` option,
//   embedding   a learned vector per vertex (parameters embed.<type>.table),
//   onehot      the one-hot encoding of the vertex through the type's linear map, e_v W + b
//               (parameters project.<type>.weight [type size, width] and .bias; Glorot-initialised
//               as a linear layer over one-hot features, as DGL's and PyG's examples feed them).
// Rows follow the VertexSpace: all vertices, or a part's own vertices on a partitioned dataset
// (tables of featureless types are indexed by source-dataset id, so a vertex has the same row in
// every partitioning).
// Thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/nn/module.h"
#include "nau/model.h"
#include "nau/options.h"

namespace fg::nau {

enum class Featureless { kEmbedding, kOneHot };
// "embedding" or "onehot"; errors name the option and the choices.
absl::StatusOr<Featureless> ParseFeatureless(const std::string& name);
// The model option that chooses it ("featureless", default "embedding").
OptionSpec FeaturelessOption();

class TypedInput : public nn::Module {
 public:
  TypedInput() = default;
  // Parameters are named project.<type>.{weight,bias} or embed.<type>.table; initialisers draw
  // from streams stream_base + type index. Types with read[t] false (default: all read) give
  // zero rows and have no parameters.
  TypedInput(const ModelSpec& spec, int64_t width, Featureless featureless, uint64_t stream_base,
             std::vector<bool> read = {});
  // [spec.vertices->size(), width] in VertexSpace order.
  ag::Var Forward(const ModelSpec& spec) const;
  int64_t width() const { return width_; }

 private:
  struct Projection {
    bool read = true;
    int64_t zero_rows = 0;    // rows of a type not read
    bool has_features = false;
    nn::Linear linear;        // features, or one-hot rows
    nn::Embedding embedding;  // featureless types with kEmbedding
    Tensor rows;              // int32 rows of a part's own vertices (undefined: all)
  };
  int64_t width_ = 0;
  Featureless featureless_ = Featureless::kEmbedding;
  std::vector<Projection> projections_;
};

}  // namespace fg::nau
