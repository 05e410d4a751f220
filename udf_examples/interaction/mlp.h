// The MLPs of the particle-tracking models (the Interaction Network, interaction.cc, and the edge
// filter, filter/filter.cc): Linear-LayerNorm-SiLU blocks in -> hidden -> ... -> out; with
// `bare_output`, the last block is a plain Linear (a head's logits). The first product of an MLP
// over an edge's [x_source | x_destination | e] may be split over the three parts (ForwardEdges,
// or FirstWeightRows and Rest for callers that gather the rows themselves), so that no
// [entries, 2d + de] concatenation is built and two thirds of the product run on vertex rows.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "flexgraph/autograd/var.h"
#include "flexgraph/nn/layer_norm.h"
#include "flexgraph/nn/module.h"
#include "flexgraph/tensor/csr.h"

namespace fg::udf {

class Mlp : public nn::Module {
 public:
  Mlp(int64_t in, int64_t hidden, int64_t out, int blocks, bool layer_norm, bool bare_output,
      uint64_t seed, uint64_t stream);
  ag::Var Forward(const ag::Var& x) const { return Rest(linears_[0]->Forward(x)); }
  // Forward(EdgeInput(a, xs, xd, e)) without the concatenation: the first product splits as
  // [xs | xd | e] W = (xs W_s)[source] + (xd W_d)[destination] + e W_e, the first two on vertex
  // rows (e may be undefined). The same function up to float rounding.
  ag::Var ForwardEdges(const SparseMatrixPtr& a, const ag::Var& xs, const ag::Var& xd,
                       const ag::Var& e) const;
  // Rows [begin, begin + width) of the first Linear's weight [in, out] (differentiable): the block
  // of the first product that input columns [begin, begin + width) meet.
  ag::Var FirstWeightRows(int64_t begin, int64_t width) const;
  // The first Linear's bias ([out]; undefined without one).
  const ag::Var& FirstBias() const { return linears_[0]->bias(); }
  int64_t in_features() const { return linears_[0]->in_features(); }
  // The blocks from the first Linear's output (its product plus its bias) on: LayerNorm-SiLU and
  // the further blocks.
  ag::Var Rest(const ag::Var& first_product) const;

 private:
  bool bare_output_;
  std::vector<std::unique_ptr<nn::Linear>> linears_;
  std::vector<std::unique_ptr<nn::LayerNorm>> norms_;
};

}  // namespace fg::udf
