#include "nau/dropout_linear.h"

#include "flexgraph/base/logging.h"

namespace fg::nau {
namespace {
// Trained activations of more bytes than this have their dropped copy drawn again in backward;
// smaller ones (mini-batch blocks) keep it: one draw fewer, and little memory.
constexpr size_t kDrawAgainBytes = size_t{64} << 20;
}  // namespace

ag::Var DropoutLinear(const LayerContext& ctx, const ag::Var& x, const Tensor& row_ids,
                      const nn::Linear& fc, float p, int site) {
  return DropoutMatMul(ctx, x, row_ids, fc.weight(), fc.bias(), p, site);
}

ag::Var DropoutMatMul(const LayerContext& ctx, const ag::Var& x, const Tensor& row_ids,
                      const ag::Var& weight, const ag::Var& bias, float p, int site,
                      const ag::Var& plus_x, const ag::Var& plus_w, bool relu) {
  const bool plus = plus_x.defined() && plus_w.defined();
  FG_CHECK(!relu || bias.defined()) << "DropoutMatMul: relu needs a bias";
  auto finish = [&](const ag::Var& y) {  // the bias, and the ReLU
    if (relu) return ag::BiasRelu(y, bias);
    return bias.defined() ? ag::AddBias(y, bias) : y;
  };
  // A constant input with a sparse view of as many rows: the table, or its roots.
  SparseMatrixPtr view;
  for (const SparseMatrixPtr& v : {ctx.input_sparse, ctx.roots_sparse}) {
    if (v != nullptr && !x.requires_grad() && v->csr().num_rows == x.rows() &&
        v->csr().num_cols == x.row_width()) {
      view = v;
      break;
    }
  }
  if (view == nullptr) {
    const int64_t in = weight.value().dim(0);
    FG_CHECK(x.row_width() == in) << "DropoutMatMul: input " << x.value().ShapeString()
                                  << " for weight " << weight.value().ShapeString();
    if (ctx.training && p > 0.0f && x.requires_grad() && x.value().rank() == 2 &&
        x.value().nbytes() > kDrawAgainBytes && !ctx.HasDropped(x, p, site, row_ids)) {
      // A large trained activation: its dropped copy is drawn again in backward rather than kept.
      return finish(ag::DropoutMatMul(x, weight, p, ctx.DropoutSeed(site), ctx.PlacedIds(row_ids, x.value().device()),
                                      plus ? plus_x : ag::Var(), plus ? plus_w : ag::Var()));
    }
    ag::Var d = ctx.Dropout(x, p, site, row_ids);
    if (d.value().rank() != 2) d = ag::Reshape(d, {d.rows(), in});
    if (relu) return ag::LinearBiasRelu(d, weight, bias, plus ? plus_x : ag::Var(), plus ? plus_w : ag::Var());
    return finish(plus ? ag::MatMulSum(d, weight, plus_x, plus_w) : ag::MatMul(d, weight));
  }
  SparseMatrixPtr a = view;
  if (ctx.training && p > 0.0f) {
    a = std::make_shared<SparseMatrix>(
        ops::SparseDropout(a->csr(), p, ctx.DropoutSeed(site), row_ids));
  }
  ag::Var y = ag::Spmm(a, weight, ops::SpmmReduce::kSum);
  if (plus) y = ag::Add(y, ag::MatMul(plus_x, plus_w));
  return finish(y);
}

}  // namespace fg::nau
