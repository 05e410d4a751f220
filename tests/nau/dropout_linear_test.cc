// DropoutLinear: the sparse path (SpMM over the non-zeros of a constant input) equals the dense
// path (dense dropout mask, GEMM) in value and in the weight gradient, for training and eval.
#include <gtest/gtest.h>

#include "nau/dropout_linear.h"
#include "tests/core/gradcheck.h"

namespace fg::nau {
namespace {

TEST(DropoutLinear, SparseAndDensePathsAgree) {
  // A 30 x 41 input with about 10% non-zeros.
  Tensor x = Tensor::Zeros({30, 41});
  RandomStream rng(5, 1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (rng.Uniform() < 0.1f) x.f32()[i] = rng.Uniform() + 0.5f;
  }
  Tensor ids = Tensor::Empty({30}, DType::kInt64);
  for (int64_t r = 0; r < 30; ++r) ids.i64()[r] = 100 + 3 * r;
  for (bool training : {true, false}) {
    std::vector<std::vector<float>> values, grads;
    for (bool sparse : {false, true}) {
      nn::Linear fc(41, 6, true, nn::Init::kGlorot, 7);
      LayerContext ctx;
      ctx.training = training;
      ctx.epoch = 3;
      ctx.seed = 11;
      if (sparse) ctx.input_sparse = std::make_shared<SparseMatrix>(ops::DenseToCsr(x));
      ag::Var y = DropoutLinear(ctx, ag::Var(x), ids, fc, 0.5f, 0);
      ag::Sum(ag::Mul(y, ag::Var(testing::RandomTensor({30, 6}, 3)))).Backward();
      values.push_back(y.value().ToVector<float>());
      grads.push_back(fc.weight().grad().ToVector<float>());
    }
    ASSERT_EQ(values[0].size(), values[1].size());
    for (size_t i = 0; i < values[0].size(); ++i) EXPECT_NEAR(values[0][i], values[1][i], 1e-5);
    for (size_t i = 0; i < grads[0].size(); ++i) EXPECT_NEAR(grads[0][i], grads[1][i], 1e-5);
  }
}

}  // namespace
}  // namespace fg::nau
