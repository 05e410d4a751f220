#include "nau/dropout_linear.h"

namespace fg::nau {

ag::Var DropoutLinear(const LayerContext& ctx, const ag::Var& x, const Tensor& row_ids,
                      const nn::Linear& fc, float p, int site) {
  const bool sparse = ctx.input_sparse != nullptr && !x.requires_grad() &&
                      ctx.input_sparse->csr().num_rows == x.rows() &&
                      ctx.input_sparse->csr().num_cols == x.row_width();
  if (!sparse) {
    return fc.Forward(ag::Dropout(x, p, ctx.DropoutSeed(site), ctx.training, row_ids));
  }
  SparseMatrixPtr a = ctx.input_sparse;
  if (ctx.training && p > 0.0f) {
    a = std::make_shared<SparseMatrix>(
        ops::SparseDropout(a->csr(), p, ctx.DropoutSeed(site), row_ids));
  }
  ag::Var y = ag::Spmm(a, fc.weight(), ops::SpmmReduce::kSum);
  return fc.bias().defined() ? ag::AddBias(y, fc.bias()) : y;
}

}  // namespace fg::nau
