#include "udf_examples/interaction/mlp.h"

#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"

namespace fg::udf {

Mlp::Mlp(int64_t in, int64_t hidden, int64_t out, int blocks, bool layer_norm, bool bare_output,
         uint64_t seed, uint64_t stream)
    : bare_output_(bare_output) {
  for (int b = 0; b < blocks; ++b) {
    const int64_t d_in = b == 0 ? in : hidden, d_out = b == blocks - 1 ? out : hidden;
    linears_.push_back(
        std::make_unique<nn::Linear>(d_in, d_out, true, nn::Init::kGlorot, seed, stream * 16 + b));
    AddChild(absl::StrCat("linear", b), *linears_.back());
    if (layer_norm && !(bare_output && b == blocks - 1)) {
      norms_.push_back(std::make_unique<nn::LayerNorm>(d_out));
      AddChild(absl::StrCat("norm", b), *norms_.back());
    } else {
      norms_.push_back(nullptr);
    }
  }
}

ag::Var Mlp::FirstWeightRows(int64_t begin, int64_t width) const {
  std::vector<int32_t> rows(width);
  for (int64_t i = 0; i < width; ++i) rows[i] = static_cast<int32_t>(begin + i);
  const ag::Var& w = linears_[0]->weight();
  return ag::GatherRows(w, Tensor::FromVector(rows).To(w.value().device()));
}

ag::Var Mlp::ForwardEdges(const SparseMatrixPtr& a, const ag::Var& xs, const ag::Var& xd,
                          const ag::Var& e) const {
  const nn::Linear& first = *linears_[0];
  const int64_t ds = xs.row_width(), dd = xd.row_width(), de = e.defined() ? e.row_width() : 0;
  FG_CHECK(first.in_features() == ds + dd + de)
      << "Mlp::ForwardEdges: " << ds << " + " << dd << " + " << de << " columns for "
      << first.in_features() << " inputs";
  ag::Var y = ag::SddmmAdd(a, ag::MatMul(xd, FirstWeightRows(ds, dd)),
                           ag::MatMul(xs, FirstWeightRows(0, ds)));
  if (e.defined()) y = ag::Add(y, ag::MatMul(e, FirstWeightRows(ds + dd, de)));
  return Rest(first.bias().defined() ? ag::AddBias(y, first.bias()) : y);
}

ag::Var Mlp::Rest(const ag::Var& first) const {
  ag::Var h = first;
  for (size_t b = 0; b < linears_.size(); ++b) {
    if (b > 0) h = linears_[b]->Forward(h);
    if (bare_output_ && b + 1 == linears_.size()) break;
    h = norms_[b] ? norms_[b]->ForwardSilu(h) : ag::Silu(h);
  }
  return h;
}

}  // namespace fg::udf
