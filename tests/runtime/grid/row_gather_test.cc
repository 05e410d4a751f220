// The grid row's gather of column blocks: forward places every member's block at its columns;
// backward gives each member the sum over the members of its columns of their gradients; each
// member sends (pc - 1) copies of its block forward and rows x (w - w_j) floats backward.
#include "runtime/grid/row_gather.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "flexgraph/autograd/functions.h"
#include "runtime/comm/communicator.h"
#include "runtime/grid/blocks.h"
#include "tests/runtime/grid/grid_test_util.h"

namespace fg::grid {
namespace {

TEST(RowGather, GathersColumnsAndReduceScattersGradients) {
  constexpr int kMembers = 3;
  constexpr int64_t kRows = 5, kWidth = 8;  // column blocks of 2, 3 and 3
  const Tensor whole = testing::RandomDense(kRows, kWidth, 7);
  std::vector<Tensor> upstream;  // each member's gradient of the gathered rows
  for (int k = 0; k < kMembers; ++k) upstream.push_back(testing::RandomDense(kRows, kWidth, 100 + k));
  auto group = runtime::MakeInProcessGroup(kMembers);
  std::vector<Tensor> gathered(kMembers), grads(kMembers);
  std::vector<int64_t> sent_features(kMembers), sent_gradients(kMembers);
  std::vector<std::thread> threads;
  for (int j = 0; j < kMembers; ++j) {
    threads.emplace_back([&, j] {
      int64_t calls = 0;
      RowGather gather(*group[j], &calls);
      const int64_t lo = ColumnLo(kWidth, kMembers, j), w = ColumnLo(kWidth, kMembers, j + 1) - lo;
      Tensor mine = Tensor::Empty({kRows, w});
      for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t c = 0; c < w; ++c) mine.f32()[r * w + c] = whole.f32()[r * kWidth + lo + c];
      }
      ag::Var x = ag::Var::Parameter(mine);
      auto full = gather(x, kWidth);
      ASSERT_TRUE(full.ok()) << full.status();
      gathered[j] = full->value();
      ag::Sum(ag::Mul(*full, ag::Var(upstream[j]))).Backward();
      ASSERT_TRUE(gather.status().ok()) << gather.status();
      grads[j] = x.grad();
      sent_features[j] = group[j]->bytes_sent(runtime::TrafficKind::kFeatures);
      sent_gradients[j] = group[j]->bytes_sent(runtime::TrafficKind::kGradients);
    });
  }
  for (auto& t : threads) t.join();
  for (int j = 0; j < kMembers; ++j) {
    EXPECT_EQ(testing::RelativeError(gathered[j], whole), 0.0) << "member " << j;
    const int64_t lo = ColumnLo(kWidth, kMembers, j), w = ColumnLo(kWidth, kMembers, j + 1) - lo;
    Tensor want = Tensor::Zeros({kRows, w});
    for (int k = 0; k < kMembers; ++k) {
      for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t c = 0; c < w; ++c) want.f32()[r * w + c] += upstream[k].f32()[r * kWidth + lo + c];
      }
    }
    EXPECT_LT(testing::RelativeError(grads[j], want), 1e-6) << "member " << j;
    EXPECT_EQ(sent_features[j], (kMembers - 1) * kRows * w * 4) << "member " << j;
    EXPECT_EQ(sent_gradients[j], kRows * (kWidth - w) * 4) << "member " << j;
  }
}

}  // namespace
}  // namespace fg::grid
