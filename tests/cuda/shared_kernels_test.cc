// The FG_HD kernel bodies of ops/shared, run on the CPU exactly as the CUDA kernels run them (one
// call per output element, row, or (segment, head)), against hand-computed cases and against the
// CPU backend's independent kernels (ops/cpu/sparse.cc) on random matrices with empty rows and
// skewed degrees.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "flexgraph/ops/ops.h"
#include "flexgraph/ops/shared/elementwise.h"
#include "flexgraph/ops/shared/rows.h"
#include "flexgraph/ops/shared/sparse.h"
#include "tests/core/gradcheck.h"
#include "tests/core/test_graphs.h"

namespace fg {
namespace {

using testing::RandomCsr;
using testing::RandomTensor;

void ExpectNear(const Tensor& expected, const std::vector<float>& got, float tol = 1e-5f) {
  ASSERT_EQ(expected.numel(), static_cast<int64_t>(got.size()));
  for (int64_t i = 0; i < expected.numel(); ++i) {
    EXPECT_NEAR(got[i], expected.f32()[i], tol * (1.0f + std::fabs(expected.f32()[i])))
        << "element " << i;
  }
}

// Segment offsets [0, 3, 3, 5, 9]: segment 1 is empty.
Tensor Segments() { return Tensor::FromVector<int64_t>({0, 3, 3, 5, 9}); }

TEST(SharedElementwise, ActivationsMatchClosedForms) {
  const float alpha = 0.2f;
  for (float x : {-2.0f, -0.3f, 0.0f, 0.7f, 3.0f}) {
    EXPECT_EQ(ops::shared::UnaryValue<ops::UnaryOp::kRelu>(x, alpha), x > 0 ? x : 0.0f);
    EXPECT_FLOAT_EQ(ops::shared::UnaryValue<ops::UnaryOp::kLeakyRelu>(x, alpha),
                    x > 0 ? x : alpha * x);
    EXPECT_NEAR(ops::shared::UnaryValue<ops::UnaryOp::kElu>(x, alpha),
                x > 0 ? x : alpha * std::expm1(x), 1e-7);
    EXPECT_NEAR(ops::shared::UnaryValue<ops::UnaryOp::kTanh>(x, alpha), std::tanh(x), 1e-7);
    EXPECT_NEAR(ops::shared::UnaryValue<ops::UnaryOp::kSigmoid>(x, alpha),
                1.0 / (1.0 + std::exp(-x)), 1e-7);
    EXPECT_NEAR(ops::shared::UnaryValue<ops::UnaryOp::kExp>(x, alpha), std::exp(x), 1e-5);
  }
}

// Gradients against central differences of the forward bodies.
template <ops::UnaryOp Op>
void ExpectGradMatchesDifference(float alpha) {
  for (float x : {-1.5f, -0.4f, 0.3f, 1.2f}) {
    const double h = 1e-3;
    const double fd = (ops::shared::UnaryValue<Op>(static_cast<float>(x + h), alpha) -
                       ops::shared::UnaryValue<Op>(static_cast<float>(x - h), alpha)) /
                      (2 * h);
    const float y = ops::shared::UnaryValue<Op>(x, alpha);
    EXPECT_NEAR(ops::shared::UnaryGrad<Op>(x, y, 2.0f, alpha), 2.0 * fd, 2e-2)
        << static_cast<int>(Op) << " at " << x;
  }
}

TEST(SharedElementwise, GradientsMatchFiniteDifferences) {
  ExpectGradMatchesDifference<ops::UnaryOp::kRelu>(0.0f);
  ExpectGradMatchesDifference<ops::UnaryOp::kLeakyRelu>(0.1f);
  ExpectGradMatchesDifference<ops::UnaryOp::kElu>(1.0f);
  ExpectGradMatchesDifference<ops::UnaryOp::kTanh>(0.0f);
  ExpectGradMatchesDifference<ops::UnaryOp::kSigmoid>(0.0f);
  ExpectGradMatchesDifference<ops::UnaryOp::kExp>(0.0f);
}

TEST(SharedElementwise, BroadcastAddScaleRowsAndCopyColumns) {
  // a [2, 3] + 2 * b[3] broadcast.
  const float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30};
  EXPECT_FLOAT_EQ(ops::shared::AddScaledValue(a, b, 2.0f, 4, 3), 5.0f + 40.0f);
  EXPECT_FLOAT_EQ(ops::shared::AddScaledValue(a, a, -1.0f, 4, 0), 0.0f);
  // x [1, 4] with 2 heads scaled by s = [3, 5].
  const float x[4] = {1, 2, 3, 4}, s[2] = {3, 5};
  std::vector<float> y(4);
  for (int i = 0; i < 4; ++i) y[i] = ops::shared::ScaleRowsValue(x, s, 4, 2, i);
  EXPECT_EQ(y, (std::vector<float>{3, 6, 15, 20}));
  // The GPU's 32-bit index instances give the 64-bit ones' values.
  const std::vector<float> big = [] {
    std::vector<float> v(3 * 12);
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>(i) - 7.0f;
    return v;
  }();
  const float scales[9] = {1, -2, 3, 0.5f, 5, -6, 7, 8, 0.25f};
  for (int64_t i = 0; i < 36; ++i) {
    const auto u = static_cast<uint32_t>(i);
    EXPECT_EQ(ops::shared::ScaleRowsValue<uint32_t>(big.data(), scales, 12u, 3u, u),
              ops::shared::ScaleRowsValue<int64_t>(big.data(), scales, 12, 3, i));
    EXPECT_EQ(ops::shared::AddScaledValue<uint32_t>(big.data(), scales, 0.5f, u, 9u),
              ops::shared::AddScaledValue<int64_t>(big.data(), scales, 0.5f, i, 9));
  }
  // Copy column block [1, 3) of a [2, 3] into columns [0, 2) of out [2, 2].
  std::vector<float> out(4, -1.0f);
  for (int i = 0; i < 4; ++i) ops::shared::CopyColumnsElement(a, 3, 1, out.data(), 2, 0, 2, i);
  EXPECT_EQ(out, (std::vector<float>{2, 3, 5, 6}));
}

TEST(SharedElementwise, ChunkedColumnSumsMatchSumRows) {
  // The CUDA SumRows adds chunk partials (SumColumn over row chunks, then over partials).
  Tensor x = RandomTensor({1100, 5}, 3);
  const int64_t chunk = 512, chunks = 3;
  std::vector<float> partial(chunks * 5), got(5);
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * chunk, count = std::min<int64_t>(chunk, 1100 - lo);
    for (int64_t j = 0; j < 5; ++j) {
      partial[c * 5 + j] = ops::shared::SumColumn(x.f32() + lo * 5, count, 5, j);
    }
  }
  for (int64_t j = 0; j < 5; ++j) got[j] = ops::shared::SumColumn(partial.data(), chunks, 5, j);
  ExpectNear(ops::SumRows(x), got, 1e-4f);
}

// The CPU dropout mask of [64, cols] against shared::DropoutBlock, entry by entry.
void CheckDropoutBlocks(int64_t cols) {
  const int64_t rows = 64;
  const float p = 0.3f;
  Tensor ids = Tensor::FromVector<int64_t>(std::vector<int64_t>(rows, 0));
  for (int64_t r = 0; r < rows; ++r) ids.i64()[r] = (r % 2 == 0 ? 1000 : int64_t{5} << 33) + 7 * r;
  Tensor mask = ops::DropoutMask(rows, cols, p, 42, ids);
  std::vector<float> got(rows * cols, -1.0f);
  int64_t kept = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; j += ops::shared::kDropoutBlockCols) {
      ops::shared::DropoutBlock(42, ids.i64()[r], j, cols, p, 1.0f / (1.0f - p), nullptr,
                                got.data() + r * cols);
    }
  }
  for (float v : got) kept += v != 0.0f;
  ExpectNear(mask, got, 0.0f);
  EXPECT_NEAR(static_cast<double>(kept) / got.size(), 1.0 - p, 0.05);
}

TEST(SharedElementwise, DropoutBlocksMatchTheCpuMaskAndKeepRate) {
  // A partial last block; the CPU's vector stretches of 64 and 256 columns, then single blocks.
  for (const int64_t cols : {37, 64, 128, 300, 520}) {
    SCOPED_TRACE(cols);
    CheckDropoutBlocks(cols);
  }
}

// The GPU's warp-per-256-columns dropout, its lane shuffles emulated: every column is written
// once, with the value of the CPU's dropout, for widths below, at and across group boundaries.
TEST(SharedElementwise, WarpDropoutRoundsMatchTheCpuDropout) {
  const float p = 0.5f, scale = 1.0f / (1.0f - p);
  const uint32_t threshold = ops::shared::DropoutThreshold(p);
  for (int64_t cols : {1, 7, 8, 9, 100, 255, 256, 257, 600}) {
    const int64_t rows = 5;
    Tensor ids = Tensor::FromVector<int64_t>({3, 90, 17, 4000, 5});
    Tensor x = Tensor::Empty({rows, cols});
    for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = 0.25f * static_cast<float>(i % 13) - 1.0f;
    const Tensor expected = ops::Dropout(x, p, 42, ids);
    std::vector<float> got(rows * cols, std::nanf(""));
    const int64_t groups =
        (cols + ops::shared::kDropoutGroupCols - 1) / ops::shared::kDropoutGroupCols;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t g = 0; g < groups; ++g) {
        uint32_t bits[32];
        for (int lane = 0; lane < 32; ++lane) {
          const int64_t block = g * 32 + lane;
          bits[lane] = block * ops::shared::kDropoutBlockCols < cols
                           ? ops::shared::DropoutKeepBits(42, ids.i64()[r], block, threshold)
                           : 0u;
        }
        for (int k = 0; k < ops::shared::kDropoutBlockCols; ++k) {
          for (int lane = 0; lane < 32; ++lane) {
            const int64_t c = ops::shared::DropoutRoundColumn(g, k, lane);
            if (c >= cols) continue;
            ASSERT_TRUE(std::isnan(got[r * cols + c])) << "column " << c << " written twice";
            got[r * cols + c] = ops::shared::DropoutRoundValue(
                bits[ops::shared::DropoutRoundOwner(k, lane)], lane, scale, x.f32() + r * cols, c);
          }
        }
      }
    }
    ExpectNear(expected, got, 0.0f);
  }
}

TEST(SharedSparse, RowOfEntrySkipsEmptyRows) {
  // offsets [0, 2, 2, 2, 5]: rows 1 and 2 are empty.
  const int64_t off[5] = {0, 2, 2, 2, 5};
  std::vector<int64_t> rows;
  for (int64_t e = 0; e < 5; ++e) rows.push_back(ops::shared::RowOfEntry(off, 4, e));
  EXPECT_EQ(rows, (std::vector<int64_t>{0, 0, 3, 3, 3}));
}

TEST(SharedSparse, SpmmElementMatchesCpuSpmm) {
  Csr a = RandomCsr(60, 45, 6, /*skewed=*/true, 1);
  Tensor x = RandomTensor({45, 8}, 2);
  Tensor w1 = RandomTensor({a.nnz()}, 3);
  Tensor w2 = RandomTensor({a.nnz(), 2}, 4);
  for (int mean : {0, 1}) {
    for (const Tensor* w : std::vector<const Tensor*>{nullptr, &w1, &w2}) {
      const Tensor ew = w ? *w : Tensor();
      Tensor expected = ops::Spmm(a, x, mean ? ops::SpmmReduce::kMean : ops::SpmmReduce::kSum, ew);
      const int64_t heads = w ? w->row_width() : 1;
      std::vector<float> got(60 * 8);
      for (int64_t i = 0; i < 60 * 8; ++i) {
        got[i] = ops::shared::SpmmElement(a.row_ptr(), a.col(), w ? w->f32() : nullptr, heads,
                                          i / 8, x.f32(), 8, i % 8, mean);
      }
      ExpectNear(expected, got);
    }
  }
}

TEST(SharedSparse, SpmmMaxAndGradientMatchCpu) {
  Csr a = RandomCsr(50, 40, 5, true, 5);
  Tensor x = RandomTensor({40, 6}, 6);
  Tensor argmax;
  Tensor expected = ops::SpmmMax(a, x, &argmax);
  std::vector<float> got(50 * 6);
  std::vector<int32_t> got_arg(50 * 6);
  for (int64_t i = 0; i < 50 * 6; ++i) {
    got[i] = ops::shared::SpmmMaxElement(a.row_ptr(), a.col(), i / 6, x.f32(), 6, i % 6,
                                         &got_arg[i]);
  }
  ExpectNear(expected, got, 0.0f);
  EXPECT_EQ(argmax.ToVector<int32_t>(), got_arg);

  Tensor gy = RandomTensor({50, 6}, 7);
  Csr at = a.Transpose();
  Tensor expected_gx = ops::SpmmMaxBackward(at, argmax, gy);
  std::vector<float> gx(40 * 6);
  for (int64_t i = 0; i < 40 * 6; ++i) {
    gx[i] = ops::shared::SpmmMaxBackwardElement(at.row_ptr(), at.col(), i / 6, argmax.i32(),
                                                gy.f32(), 6, i % 6);
  }
  ExpectNear(expected_gx, gx);
}

TEST(SharedSparse, SddmmEntriesMatchCpu) {
  Csr c = RandomCsr(30, 25, 5, true, 8);
  Tensor a = RandomTensor({30, 8}, 9), b = RandomTensor({25, 8}, 10);
  for (int64_t heads : {1, 2, 4}) {
    Tensor expected = ops::SddmmDot(c, a, b, heads);
    std::vector<float> got(c.nnz() * heads);
    for (int64_t i = 0; i < c.nnz() * heads; ++i) {
      const int64_t e = i / heads, h = i % heads;
      const int64_t r = ops::shared::RowOfEntry(c.row_ptr(), c.num_rows, e);
      got[i] = ops::shared::DotSlice(a.f32() + r * 8, b.f32() + c.col()[e] * 8, h, 8 / heads);
    }
    ExpectNear(expected, got);
  }
  Tensor u = RandomTensor({30, 3}, 11), v = RandomTensor({25, 3}, 12);
  Tensor expected = ops::SddmmAdd(c, u, v);
  std::vector<float> got(c.nnz() * 3);
  for (int64_t i = 0; i < c.nnz() * 3; ++i) {
    const int64_t e = i / 3, h = i % 3;
    const int64_t r = ops::shared::RowOfEntry(c.row_ptr(), c.num_rows, e);
    got[i] = u.f32()[r * 3 + h] + v.f32()[c.col()[e] * 3 + h];
  }
  ExpectNear(expected, got, 0.0f);
}

TEST(SharedSegments, SoftmaxAndGradientMatchCpu) {
  Tensor off = Segments();
  Tensor s = RandomTensor({9, 2}, 13, -3.0f, 3.0f);
  Tensor expected = ops::SegmentSoftmax(off, s);
  std::vector<float> y(18, 0.0f);
  for (int64_t i = 0; i < 4 * 2; ++i) {
    const int64_t seg = i / 2;
    ops::shared::SegmentSoftmaxColumn(off.i64()[seg], off.i64()[seg + 1], s.f32(), 2, i % 2,
                                      y.data());
  }
  ExpectNear(expected, y);
  // Each (segment, head) sums to one.
  EXPECT_NEAR(y[0] + y[2] + y[4], 1.0f, 1e-6);

  Tensor gy = RandomTensor({9, 2}, 14);
  Tensor expected_gs = ops::SegmentSoftmaxBackward(off, expected, gy);
  std::vector<float> gs(18, 0.0f);
  for (int64_t i = 0; i < 4 * 2; ++i) {
    const int64_t seg = i / 2;
    ops::shared::SegmentSoftmaxBackwardColumn(off.i64()[seg], off.i64()[seg + 1],
                                              expected.f32(), gy.f32(), 2, i % 2, gs.data());
  }
  ExpectNear(expected_gs, gs);
}

TEST(SharedSegments, ReductionsMatchCpu) {
  Tensor off = Segments();
  Tensor x = RandomTensor({9, 3}, 15);
  for (auto op : {ops::SegmentReduceOp::kSum, ops::SegmentReduceOp::kMean,
                  ops::SegmentReduceOp::kMax}) {
    Tensor argmax;
    Tensor expected = ops::SegmentReduce(off, x, op, &argmax);
    std::vector<float> got(4 * 3);
    std::vector<int32_t> got_arg(4 * 3);
    for (int64_t i = 0; i < 4 * 3; ++i) {
      const int64_t seg = i / 3;
      got[i] = ops::shared::SegmentReduceElement(off.i64()[seg], off.i64()[seg + 1], x.f32(), 3,
                                                 i % 3, static_cast<int>(op), &got_arg[i]);
    }
    ExpectNear(expected, got);
    if (op == ops::SegmentReduceOp::kMax) {
      EXPECT_EQ(argmax.ToVector<int32_t>(), got_arg);
      EXPECT_EQ(got_arg[3], -1);  // the empty segment
    }
  }
}

TEST(SharedRows, LogSoftmaxAndL2NormalizeByHand) {
  // log-softmax of [0, ln 3]: probabilities 1/4 and 3/4.
  const float x[2] = {0.0f, std::log(3.0f)};
  float y[2];
  ops::shared::LogSoftmaxRow(x, 2, y);
  EXPECT_NEAR(y[0], std::log(0.25f), 1e-6);
  EXPECT_NEAR(y[1], std::log(0.75f), 1e-6);
  // gx = gy - p * sum(gy).
  const float gy[2] = {1.0f, 0.0f};
  float gx[2];
  ops::shared::LogSoftmaxRowBackward(y, gy, 2, gx);
  EXPECT_NEAR(gx[0], 0.75f, 1e-6);
  EXPECT_NEAR(gx[1], -0.75f, 1e-6);
  // [3, 4] has norm 5; a zero row is clamped to eps.
  const float v[2] = {3.0f, 4.0f}, zero[2] = {0.0f, 0.0f};
  float n[2];
  EXPECT_FLOAT_EQ(ops::shared::RowL2NormalizeRow(v, 2, 1e-6f, n), 5.0f);
  EXPECT_FLOAT_EQ(n[0], 0.6f);
  EXPECT_FLOAT_EQ(ops::shared::RowL2NormalizeRow(zero, 2, 1e-6f, n), 1e-6f);
  // Gradient orthogonal to the output: moving along y does not change y / ||y||.
  const float along[2] = {0.6f, 0.8f};
  float g[2];
  ops::shared::RowL2NormalizeRowBackward(along, 5.0f, along, 2, 1e-6f, g);
  EXPECT_NEAR(g[0], 0.0f, 1e-6);
  EXPECT_NEAR(g[1], 0.0f, 1e-6);
}

}  // namespace
}  // namespace fg
