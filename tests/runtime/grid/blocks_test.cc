// The pieces of the grid products: the random vertex permutation and its blocks, a sparse block's
// wire format (and its damage named), and the exact block counts of the volume model (the aware
// variant never sends more than the oblivious one).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "flexgraph/ops/ops.h"
#include "runtime/grid/blocks.h"
#include "runtime/plan/volumes.h"
#include "tests/runtime/grid/grid_test_util.h"

namespace fg::grid {
namespace {

using namespace fg::grid::testing;  // NOLINT: the test helpers

TEST(BlockCounts, AwareSendsFewerBytesThanOblivious) {
  const Csr a = RandomMatrix(400, 2, 3);
  const VertexBlocks blocks = VertexBlocks::Make(400, 3, 9);
  std::vector<int32_t> block_of(400);
  for (int64_t v = 0; v < 400; ++v) block_of[v] = blocks.BlockOf(blocks.position[v]);
  plan::StrategySpec spec;
  spec.scheme = plan::Scheme::kTwoD;
  spec.grid[0] = spec.grid[1] = 3;
  const plan::BlockCounts counts = plan::CountBlocks(a, block_of, 3);
  spec.aware = true;
  const double aware = plan::TwoDVolume(spec, counts, 9, 16, 0).bytes_sent;
  spec.aware = false;
  EXPECT_LT(aware, plan::TwoDVolume(spec, counts, 9, 16, 0).bytes_sent);
}

TEST(Blocks, WireFormatRoundTripsAndRejectsDamage) {
  const Csr a = RandomMatrix(30, 3, 4);
  const std::string bytes = EncodeBlock(a);
  EXPECT_EQ(bytes.size(), static_cast<size_t>(4 * 30 + 8 * a.nnz()));
  auto back = DecodeBlock(bytes, 30, 30, 2);
  ASSERT_TRUE(back.ok()) << back.status();
  const Tensor x = RandomDense(30, 3, 1);
  EXPECT_LT(RelativeError(ops::Spmm(*back, x, ops::SpmmReduce::kSum), ops::Spmm(a, x, ops::SpmmReduce::kSum)), 1e-7);
  auto cut = DecodeBlock(bytes.substr(0, bytes.size() - 8), 30, 30, 2);
  EXPECT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("grid worker 2"), std::string::npos) << cut.status();
  EXPECT_FALSE(DecodeBlock(bytes, 30, 5, 2).ok());  // columns outside the block
}

TEST(Blocks, PermutationIsABijectionAndBlocksCoverIt) {
  const VertexBlocks b = VertexBlocks::Make(103, 4, 77);
  std::vector<bool> seen(103, false);
  for (int64_t p = 0; p < 103; ++p) {
    EXPECT_EQ(b.position[b.order[p]], p);
    seen[b.order[p]] = true;
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 103);
  EXPECT_NE(b.order, VertexBlocks::Make(103, 4, 0).order);  // seed 0 is the identity; 77 is not
  int64_t total = 0;
  for (int k = 0; k < 4; ++k) {
    total += b.Size(k);
    for (int64_t p = b.Lo(k); p < b.Lo(k + 1); ++p) EXPECT_EQ(b.BlockOf(p), k);
  }
  EXPECT_EQ(total, 103);
}

// Blocks cut at given bounds (a partitioned dataset's parts): the identity order, empty blocks allowed.
TEST(Blocks, FromBoundsCutsTheIdentityOrder) {
  const VertexBlocks b = VertexBlocks::FromBounds({0, 4, 4, 10});
  EXPECT_EQ(b.blocks, 3);
  EXPECT_EQ(b.n, 10);
  EXPECT_EQ(b.Size(1), 0);
  for (int64_t p = 0; p < 10; ++p) {
    EXPECT_EQ(b.order[p], p);
    EXPECT_EQ(b.BlockOf(p), p < 4 ? 0 : 2) << p;
  }
}

// A block's rows from entries sent by several workers equal BlockRows of the whole matrix; a bad
// length, an entry outside the block and a non-finite weight name the sender.
TEST(Blocks, BlockRowsFromSentEntries) {
  const Csr a = RandomMatrix(40, 3, 9);
  const VertexBlocks b = VertexBlocks::Make(40, 3, 5);
  std::vector<std::string> got(2);
  a.VisitIndices([&](const auto* col) {
    for (int64_t v = 0; v < 40; ++v) {
      for (int64_t e = a.row_ptr()[v]; e < a.row_ptr()[v + 1]; ++e) {
        const int64_t p = b.position[v];
        if (b.BlockOf(p) == 1) AppendEntry(&got[v % 2], static_cast<int32_t>(p), static_cast<int32_t>(b.position[col[e]]), a.val()[e]);
      }
    }
  });
  auto rows = DecodeBlockRows(got, b, 1);
  ASSERT_TRUE(rows.ok()) << rows.status();
  const Tensor x = RandomDense(40, 2, 3);
  EXPECT_LT(RelativeError(ops::Spmm(*rows, x, ops::SpmmReduce::kSum), ops::Spmm(BlockRows(a, b, 1), x, ops::SpmmReduce::kSum)),
            1e-6);
  auto fails_naming_worker_1 = [&](std::string bad, const std::string& why) {
    std::vector<std::string> sent = {got[0], std::move(bad)};
    auto r = DecodeBlockRows(sent, b, 1);
    ASSERT_FALSE(r.ok()) << why;
    EXPECT_NE(r.status().message().find("worker 1"), std::string::npos) << r.status();
  };
  fails_naming_worker_1(got[1] + "x", "length");
  std::string outside;
  AppendEntry(&outside, static_cast<int32_t>(b.Lo(0)), 0, 1.0f);
  fails_naming_worker_1(outside, "a row of block 0");
  std::string nan;
  AppendEntry(&nan, static_cast<int32_t>(b.Lo(1)), 0, std::nanf(""));
  fails_naming_worker_1(nan, "a NaN weight");
}

}  // namespace
}  // namespace fg::grid
