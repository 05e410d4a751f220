// DropoutLinear: the sparse path (SpMM over the non-zeros of a constant input) equals the dense
// path (dense dropout mask, GEMM) in value and in the weight gradient, for training and eval.
// LayerContext::Dropout: one mask per rows, site and layer in a pass; the roots' rows gathered from
// the dropped input; dropouts drawn ahead and noted.
#include <gtest/gtest.h>

#include <algorithm>

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

TEST(LayerContext, DropsTheSameRowsOnceAPass) {
  Tensor x = testing::RandomTensor({20, 8}, 4);
  Tensor ids = Tensor::Empty({20}, DType::kInt64), same = Tensor::Empty({20}, DType::kInt64);
  for (int64_t r = 0; r < 20; ++r) ids.i64()[r] = same.i64()[r] = 7 * r;
  LayerContext ctx;
  ctx.training = true;
  ctx.seed = 3;
  ctx.layer = 1;
  const ag::Var h(x);
  ag::Var first = ctx.Dropout(h, 0.5f, 0, ids);
  // The mask is ag::Dropout's with the layer's seed.
  EXPECT_EQ(first.value().ToVector<float>(),
            ag::Dropout(h, 0.5f, ctx.DropoutSeed(0), true, ids).value().ToVector<float>());
  // The same rows again (ids equal by content): the first result, not a second mask.
  EXPECT_EQ(ctx.Dropout(h, 0.5f, 0, same).value().raw(), first.value().raw());
  // Another site, other ids or another layer: a mask of their own.
  EXPECT_NE(ctx.Dropout(h, 0.5f, 1, ids).value().raw(), first.value().raw());
  same.i64()[3] = 1000;
  EXPECT_NE(ctx.Dropout(h, 0.5f, 0, same).value().raw(), first.value().raw());
  ctx.layer = 2;
  EXPECT_NE(ctx.Dropout(h, 0.5f, 0, ids).value().ToVector<float>(), first.value().ToVector<float>());
  // Evaluation drops nothing.
  ctx.training = false;
  EXPECT_EQ(ctx.Dropout(h, 0.5f, 0, ids).value().raw(), x.raw());
}

TEST(LayerContext, DroppedRootsAreRowsOfTheDroppedInput) {
  // Roots 4, 0, 9 of a 12-row input: their mask keyed by their own ids equals the input's rows.
  Tensor x = testing::RandomTensor({12, 70}, 6);
  Tensor table_ids = Tensor::Empty({12}, DType::kInt64);
  for (int64_t r = 0; r < 12; ++r) table_ids.i64()[r] = 1000 + 5 * r;
  const std::vector<int32_t> rows = {4, 0, 9};
  Tensor index = Tensor::FromVector(rows);
  Tensor root_ids = Tensor::Empty({3}, DType::kInt64);
  for (int64_t i = 0; i < 3; ++i) root_ids.i64()[i] = table_ids.i64()[rows[i]];
  for (bool noted : {false, true}) {
    LayerContext ctx;
    ctx.training = true;
    ctx.seed = 9;
    ctx.table_global_ids = table_ids;
    ctx.root_global_ids = root_ids;
    ag::Var h(x, /*requires_grad=*/true);
    ag::Var input = ctx.Dropout(h, 0.5f, 0, ctx.table_global_ids);
    ag::Var roots = ag::GatherRows(h, index);
    if (noted) ctx.NoteRoots(h, roots, index);
    ag::Var dropped = ctx.Dropout(roots, 0.5f, 0, ctx.root_global_ids);
    // Always the mask of the roots' own ids; noted, gathered from the dropped input.
    EXPECT_EQ(dropped.value().ToVector<float>(),
              ag::Dropout(roots, 0.5f, ctx.DropoutSeed(0), true, root_ids).value().ToVector<float>());
    EXPECT_EQ(std::string(dropped.op()) == "GatherRows", noted);
    ag::Sum(ag::Add(ag::Sum(input), ag::Scale(ag::Sum(dropped), 2.0f))).Backward();
    // d/dh: the input's mask plus twice each root's own mask on its row.
    const Tensor mask = ops::DropoutMask(12, 70, 0.5f, ctx.DropoutSeed(0), table_ids);
    for (int64_t r = 0; r < 12; ++r) {
      const int copies = static_cast<int>(std::count(rows.begin(), rows.end(), static_cast<int32_t>(r)));
      for (int64_t j = 0; j < 70; ++j) {
        EXPECT_FLOAT_EQ(h.grad().f32()[r * 70 + j], (1 + 2 * copies) * mask.f32()[r * 70 + j]) << r << " " << j;
      }
    }
  }
}

// A dropout drawn elsewhere (ahead, on another thread) and noted is what Dropout returns, under
// its own keys only; DropoutsOf lists the (p, site) of a layer's dropouts of x by the same ids.
TEST(LayerContext, NotedDropoutsAreReturnedAndListed) {
  Tensor x = testing::RandomTensor({16, 24}, 8);
  Tensor ids = Tensor::Empty({16}, DType::kInt64);
  for (int64_t r = 0; r < 16; ++r) ids.i64()[r] = 40 + 3 * r;
  LayerContext ctx;
  ctx.training = true;
  ctx.seed = 5;
  ctx.epoch = 2;
  const ag::Var h(x);
  EXPECT_TRUE(ctx.DropoutsOf(h, ids).empty());
  const ag::Var ahead(ops::Dropout(x, 0.5f, ctx.DropoutSeed(1), ids));
  ctx.NoteDropped(h, 0.5f, 1, ids, ahead);
  EXPECT_EQ(ctx.Dropout(h, 0.5f, 1, ids).value().raw(), ahead.value().raw());
  EXPECT_EQ(ahead.value().ToVector<float>(), ag::Dropout(h, 0.5f, ctx.DropoutSeed(1), true, ids).value().ToVector<float>());
  // Another p or site: drawn here.
  EXPECT_NE(ctx.Dropout(h, 0.25f, 1, ids).value().raw(), ahead.value().raw());
  EXPECT_NE(ctx.Dropout(h, 0.5f, 0, ids).value().raw(), ahead.value().raw());
  const std::vector<std::pair<float, int>> listed = ctx.DropoutsOf(h, ids);
  EXPECT_EQ(listed, (std::vector<std::pair<float, int>>{{0.5f, 1}, {0.25f, 1}, {0.5f, 0}}));
  // Other ids, or the next layer: none.
  EXPECT_TRUE(ctx.DropoutsOf(h, Tensor::FromVector(std::vector<int64_t>(16, 1))).empty());
  ctx.layer = 1;
  EXPECT_TRUE(ctx.DropoutsOf(h, ids).empty());
  EXPECT_NE(ctx.Dropout(h, 0.5f, 1, ids).value().raw(), ahead.value().raw());
}

}  // namespace
}  // namespace fg::nau
