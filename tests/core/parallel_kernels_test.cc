// The CPU kernels' specialised and parallel paths (vector widths and tails, row chunks, row
// blocks, GEMM blocks) against serial references, on random matrices with empty rows and skewed
// degrees, and bitwise the same for any thread count.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>
#include <tuple>
#include <gtest/gtest.h>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/ops/ops.h"
#include "tests/core/gradcheck.h"
#include "tests/core/test_graphs.h"

namespace fg {
namespace {

using testing::RandomCsr;
using testing::RandomTensor;

// Serial references for the parallel sparse kernels.
std::vector<float> SerialSpmm(const Csr& a, const Tensor& x, bool mean) {
  const int64_t d = x.row_width();
  std::vector<float> out(a.num_rows * d, 0.0f);
  for (int64_t r = 0; r < a.num_rows; ++r) {
    for (int64_t e = a.row_ptr()[r]; e < a.row_ptr()[r + 1]; ++e) {
      for (int64_t j = 0; j < d; ++j) out[r * d + j] += x.f32()[a.col()[e] * d + j];
    }
    if (mean && a.degree(r) > 0) {
      for (int64_t j = 0; j < d; ++j) out[r * d + j] /= a.degree(r);
    }
  }
  return out;
}

TEST(ParallelKernels, WeightedSpmmMatchesSerialReference) {
  for (int64_t width : {1, 7, 16, 33, 64}) {
    Csr a = RandomCsr(300, 200, 9, true, 70 + width);
    std::vector<float> w(a.nnz());
    for (int64_t e = 0; e < a.nnz(); ++e) w[e] = 0.25f + 0.01f * (e % 13);
    a.values = Tensor::FromVector(w);
    Tensor x = RandomTensor({200, width}, 71);
    auto got = ops::Spmm(a, x, ops::SpmmReduce::kSum).ToVector<float>();
    for (int64_t r = 0; r < a.num_rows; ++r) {
      for (int64_t j = 0; j < width; ++j) {
        double ref = 0;
        for (int64_t e = a.row_ptr()[r]; e < a.row_ptr()[r + 1]; ++e) {
          ref += w[e] * x.f32()[a.col()[e] * width + j];
        }
        ASSERT_NEAR(got[r * width + j], ref, 1e-4) << "width " << width << " row " << r;
      }
    }
  }
}

TEST(ParallelKernels, MatchSerialReferenceForAnyThreadCount) {
  for (bool skewed : {false, true}) {
    for (int64_t rows : {1, 7, 500}) {
      Csr a = RandomCsr(rows, 300, 12, skewed, 60 + rows);
      Tensor x = RandomTensor({300, 19}, 61);
      const auto ref = SerialSpmm(a, x, false);
      const auto ref_mean = SerialSpmm(a, x, true);
      std::vector<std::vector<float>> results;
      for (int threads : {1, 2, 3}) {
        SetNumThreads(threads);
        auto got = ops::Spmm(a, x, ops::SpmmReduce::kSum).ToVector<float>();
        auto got_mean = ops::Spmm(a, x, ops::SpmmReduce::kMean).ToVector<float>();
        ASSERT_EQ(got.size(), ref.size());
        for (size_t i = 0; i < ref.size(); ++i) {
          EXPECT_NEAR(got[i], ref[i], 1e-4);
          EXPECT_NEAR(got_mean[i], ref_mean[i], 1e-5);
        }
        results.push_back(got);
      }
      EXPECT_EQ(results[0], results[1]);  // bitwise identical across thread counts
      EXPECT_EQ(results[0], results[2]);
    }
  }
  SetNumThreads(2);
}

// Weighted serial reference: w undefined (all ones), [nnz] or [nnz, heads].
std::vector<float> SerialWeightedSpmm(const Csr& a, const Tensor& x, const Tensor& w, bool mean) {
  const int64_t d = x.row_width();
  const int64_t heads = w.defined() ? w.row_width() : 1;
  std::vector<float> out(a.num_rows * d, 0.0f);
  for (int64_t r = 0; r < a.num_rows; ++r) {
    for (int64_t e = a.row_ptr()[r]; e < a.row_ptr()[r + 1]; ++e) {
      for (int64_t j = 0; j < d; ++j) {
        const float we = w.defined() ? w.f32()[e * heads + j / (d / heads)] : 1.0f;
        out[r * d + j] += we * x.f32()[a.col()[e] * d + j];
      }
    }
    if (mean && a.degree(r) > 0) {
      for (int64_t j = 0; j < d; ++j) out[r * d + j] /= a.degree(r);
    }
  }
  return out;
}

// The CPU SpMM specialises on the width (16-float vectors, slabs of 256 columns, the last vector
// whole, up to half full (1, 8, 17, 100) or over half (12, 30)) and on the head count: every path
// against the serial reference, bitwise equal across threads.
TEST(ParallelKernels, SpmmWidthsAndHeadsMatchSerialReference) {
  Csr a = RandomCsr(300, 200, 12, true, 71);
  for (int64_t width : {1, 8, 12, 16, 17, 30, 64, 100, 256, 272}) {
    Tensor x = RandomTensor({200, width}, 72 + width);
    std::vector<Tensor> weights = {Tensor(), RandomTensor({a.nnz()}, 73)};
    for (int64_t heads : {2, 4, 20}) {
      if (width % heads == 0) weights.push_back(RandomTensor({a.nnz(), heads}, 74 + heads));
    }
    for (const Tensor& w : weights) {
      for (auto reduce : {ops::SpmmReduce::kSum, ops::SpmmReduce::kMean}) {
        const auto ref = SerialWeightedSpmm(a, x, w, reduce == ops::SpmmReduce::kMean);
        std::vector<std::vector<float>> results;
        for (int threads : {1, 2, 3}) {
          SetNumThreads(threads);
          results.push_back(ops::Spmm(a, x, reduce, w).ToVector<float>());
        }
        SetNumThreads(2);
        const int64_t heads = w.defined() ? w.row_width() : 0;
        SCOPED_TRACE(::testing::Message() << "width " << width << " heads " << heads);
        ASSERT_EQ(results[0].size(), ref.size());
        for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(results[0][i], ref[i], 1e-4);
        EXPECT_EQ(results[0], results[1]);
        EXPECT_EQ(results[0], results[2]);
      }
    }
  }
}

// Max over row segments: the largest value and the first column holding it, empty rows 0 and -1.
TEST(ParallelKernels, SpmmMaxMatchesSerialReference) {
  for (int64_t width : {1, 17, 64}) {
    Csr a = RandomCsr(400, 150, 10, true, 96 + width);
    Tensor x = RandomTensor({150, width}, 97);
    for (int64_t i = 0; i < x.numel(); i += 5) x.f32()[i] = 0.5f;  // ties: the first column wins
    Tensor argmax;
    const Tensor got = ops::SpmmMax(a, x, &argmax);
    for (int64_t r = 0; r < a.num_rows; ++r) {
      for (int64_t j = 0; j < width; ++j) {
        float best = 0.0f;
        int32_t at = -1;
        for (int64_t e = a.row_ptr()[r]; e < a.row_ptr()[r + 1]; ++e) {
          const float v = x.f32()[a.col()[e] * width + j];
          if (at < 0 || v > best) {
            best = v;
            at = a.col()[e];
          }
        }
        ASSERT_EQ(got.f32()[r * width + j], best) << r << "," << j;
        ASSERT_EQ(argmax.i32()[r * width + j], at) << r << "," << j;
      }
    }
  }
}

TEST(ParallelKernels, BroadcastAddOverManyRowChunks) {
  for (int64_t width : {1, 7, 64}) {
    const int64_t rows = 40000 / width + 3;
    Tensor a = RandomTensor({rows, width}, 91), b = RandomTensor({width}, 92);
    for (int threads : {1, 3}) {
      SetNumThreads(threads);
      Tensor y = ops::Add(a, b, -0.5f);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < width; ++j) {
          ASSERT_EQ(y.f32()[r * width + j], a.f32()[r * width + j] + -0.5f * b.f32()[j]) << r << "," << j;
        }
      }
    }
  }
  SetNumThreads(2);
}

// The fused bias + ReLU equals the two ops it replaces; its bias gradient (column sums over
// blocks of rows) is the same for any thread count and matches a double-precision sum.
TEST(ParallelKernels, BiasReluIsAddBiasThenReluOverManyRowBlocks) {
  const int64_t rows = 1000, cols = 37;
  Tensor x = RandomTensor({rows, cols}, 93), b = RandomTensor({cols}, 94), g = RandomTensor({rows, cols}, 95);
  const Tensor y = ops::BiasRelu(x, b);
  EXPECT_EQ(y.ToVector<float>(), ops::Apply(ops::UnaryOp::kRelu, ops::Add(x, b)).ToVector<float>());
  std::vector<std::vector<float>> gbs;
  for (int threads : {1, 3}) {
    SetNumThreads(threads);
    Tensor gb;
    const Tensor gx = ops::BiasReluBackward(y, g, &gb);
    EXPECT_EQ(gx.ToVector<float>(), ops::ApplyBackward(ops::UnaryOp::kRelu, y, y, g).ToVector<float>());
    gbs.push_back(gb.ToVector<float>());
    for (int64_t j = 0; j < cols; ++j) {
      double sum = 0;
      for (int64_t r = 0; r < rows; ++r) sum += gx.f32()[r * cols + j];
      EXPECT_NEAR(gb.f32()[j], sum, 1e-4);
    }
  }
  SetNumThreads(2);
  EXPECT_EQ(gbs[0], gbs[1]);
}

// A product with a long k (a weight gradient X^T dY) sums slices of k: close to a double-precision
// reference, with beta applied once, and bitwise the same for any thread count.
TEST(ParallelKernels, LongInnerDimensionGemmSumsSlicesForAnyThreadCount) {
  const int64_t k = 5000, m = 37, n = 20;  // k / 1024 = 4 slices, not multiples of anything
  Tensor a = RandomTensor({k, m}, 96), b = RandomTensor({k, n}, 97), c0 = RandomTensor({m, n}, 98);
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 3}) {
    SetNumThreads(threads);
    Tensor c = c0.Clone();
    ops::MatmulInto(a, b, /*trans_a=*/true, /*trans_b=*/false, 0.5f, -2.0f, &c);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double ref = 0;
        for (int64_t t = 0; t < k; ++t) ref += static_cast<double>(a.f32()[t * m + i]) * b.f32()[t * n + j];
        ASSERT_NEAR(c.f32()[i * n + j], 0.5 * ref - 2.0 * c0.f32()[i * n + j], 2e-3) << i << "," << j;
      }
    }
    results.push_back(c.ToVector<float>());
  }
  SetNumThreads(2);
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

// The GEMM with its bias + ReLU epilogue equals the three ops, for row blocks (tall C) and column
// blocks (short, wide C).
TEST(ParallelKernels, MatmulBiasReluIsMatmulThenBiasThenRelu) {
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{700, 33, 20}, {5, 40, 300}, {1, 0, 7}}) {
    Tensor a = RandomTensor({m, k}, 98), w = RandomTensor({k, n}, 99), b = RandomTensor({n}, 100);
    const Tensor expect = ops::Apply(ops::UnaryOp::kRelu, ops::Add(ops::Matmul(a, w), b));
    EXPECT_EQ(ops::MatmulBiasRelu(a, w, b).ToVector<float>(), expect.ToVector<float>()) << m << "x" << n;
  }
}

TEST(ParallelKernels, GatherRowsAnyWidthAndThreadCount) {
  RandomStream rng(81, 0);
  std::vector<int32_t> idx(3000);
  for (auto& i : idx) i = static_cast<int32_t>(rng.Below(500));
  for (int64_t width : {1, 16, 33, 256}) {
    Tensor x = RandomTensor({500, width}, 82);
    for (int threads : {1, 2, 3}) {
      SetNumThreads(threads);
      Tensor got = ops::GatherRows(x, Tensor::FromVector(idx));
      ASSERT_EQ(got.rows(), 3000);
      for (int64_t k = 0; k < 3000; ++k) {
        for (int64_t j = 0; j < width; ++j) {
          ASSERT_EQ(got.f32()[k * width + j], x.f32()[idx[k] * width + j]);
        }
      }
    }
  }
  SetNumThreads(2);
}

// Products with a narrow side (few outputs, or a short depth) against a double-precision
// reference, for both layouts of each operand, alpha and beta, and bitwise the same for any thread
// count.
TEST(ParallelKernels, NarrowProductsMatchTheReference) {
  struct Case {
    int64_t m, n, k;
  };
  // Few outputs (n <= 16), a short depth (k <= 16), and a weight gradient's long k with few outputs.
  const Case cases[] = {{300, 1, 40}, {300, 7, 256}, {129, 8, 33}, {200, 13, 70}, {64, 16, 17},
                        {300, 256, 8}, {97, 45, 3}, {70, 33, 16}, {256, 8, 700}, {37, 5, 64}, {100, 16, 1000}};
  for (const Case& cs : cases) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const Tensor a = RandomTensor(ta ? Shape{cs.k, cs.m} : Shape{cs.m, cs.k}, 91);
        const Tensor b = RandomTensor(tb ? Shape{cs.n, cs.k} : Shape{cs.k, cs.n}, 92);
        const Tensor c0 = RandomTensor({cs.m, cs.n}, 93);
        for (const float beta : {0.0f, 0.5f}) {
          SetNumThreads(1);
          Tensor want = c0.Clone();
          ops::MatmulInto(a, b, ta, tb, 1.5f, beta, &want);
          for (int64_t i = 0; i < cs.m; ++i) {
            for (int64_t j = 0; j < cs.n; ++j) {
              double acc = 0;
              for (int64_t t = 0; t < cs.k; ++t) {
                acc += static_cast<double>(ta ? a.f32()[t * cs.m + i] : a.f32()[i * cs.k + t]) *
                       (tb ? b.f32()[j * cs.k + t] : b.f32()[t * cs.n + j]);
              }
              const double ref = 1.5 * acc + beta * c0.f32()[i * cs.n + j];
              ASSERT_NEAR(want.f32()[i * cs.n + j], ref, 1e-4 * (1 + std::abs(ref)) * std::sqrt(cs.k))
                  << cs.m << "x" << cs.n << "x" << cs.k << " ta " << ta << " tb " << tb << " at " << i << "," << j;
            }
          }
          for (int threads : {2, 3}) {
            SetNumThreads(threads);
            Tensor got = c0.Clone();
            ops::MatmulInto(a, b, ta, tb, 1.5f, beta, &got);
            ASSERT_EQ(std::memcmp(got.f32(), want.f32(), want.nbytes()), 0)
                << cs.m << "x" << cs.n << "x" << cs.k << " ta " << ta << " tb " << tb << " threads " << threads;
          }
        }
      }
    }
  }
  SetNumThreads(2);
}

TEST(ParallelKernels, MatmulIsBitwiseTheSameForAnyThreadCount) {
  // Tall, wide and ragged products, both layouts: thread blocks never move a row within
  // OpenBLAS's micro-tiles.
  for (auto [m, k, n] : {std::tuple{1000, 37, 19}, std::tuple{70, 300, 999}, std::tuple{129, 64, 65}}) {
    for (bool ta : {false, true}) {
      Tensor a = RandomTensor(ta ? Shape{k, m} : Shape{m, k}, 83);
      Tensor b = RandomTensor({k, n}, 84);
      SetNumThreads(1);
      const Tensor want = ops::Matmul(a, b, ta, false);
      for (int threads : {2, 3, 5}) {
        SetNumThreads(threads);
        const Tensor got = ops::Matmul(a, b, ta, false);
        ASSERT_EQ(std::memcmp(got.f32(), want.f32(), want.nbytes()), 0)
            << m << "x" << k << "x" << n << " trans_a " << ta << " threads " << threads;
      }
    }
  }
  SetNumThreads(2);
}

// A background thread's loops run every iteration, on threads at the lowest priority; the
// caller's own loops keep theirs.
// The transpose (counting sort over row blocks) against a stable sort of the entries by column:
// structure, values and entry permutation, for any thread count, with int32 and int64 column ids,
// and for all entries in one row (the blocks' boundaries coincide).
TEST(ParallelKernels, TransposeMatchesAStableSortForAnyThreadCount) {
  const Csr spread = RandomCsr(40000, 3000, 16, /*skewed=*/true, 5);
  ASSERT_GT(spread.nnz(), 4 * 65536) << "enough entries for several blocks";
  std::vector<int64_t> wide(spread.col(), spread.col() + spread.nnz());
  std::vector<float> values(spread.nnz());
  for (int64_t e = 0; e < spread.nnz(); ++e) values[e] = 0.25f * static_cast<float>(e % 1001);
  const std::vector<int64_t> offsets(spread.row_ptr(), spread.row_ptr() + spread.num_rows + 1);
  std::vector<int32_t> one_row_cols(300000);
  for (size_t e = 0; e < one_row_cols.size(); ++e) one_row_cols[e] = static_cast<int32_t>(e % 7);
  std::vector<int64_t> one_row_offsets(2001, 0);
  for (size_t r = 1000; r < one_row_offsets.size(); ++r) one_row_offsets[r] = 300000;
  const std::vector<Csr> cases = {
      Csr::FromVectors(spread.num_rows, spread.num_cols, offsets,
                       std::vector<int32_t>(spread.col(), spread.col() + spread.nnz()), values),
      Csr::FromInt64Vectors(spread.num_rows, spread.num_cols, offsets, wide, {}),
      Csr::FromVectors(2000, 7, one_row_offsets, one_row_cols, {}),
  };
  const int threads = NumThreads();
  for (const Csr& a : cases) {
    // Reference: entries stably sorted by column.
    std::vector<std::tuple<int64_t, int64_t, int64_t>> entries;  // (column, row, entry)
    for (int64_t r = 0; r < a.num_rows; ++r) {
      for (int64_t e = a.row_ptr()[r]; e < a.row_ptr()[r + 1]; ++e) {
        entries.emplace_back(a.has_int64_indices() ? a.col64()[e] : a.col()[e], r, e);
      }
    }
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto& x, const auto& y) { return std::get<0>(x) < std::get<0>(y); });
    for (int t : {1, 2, 3, 4}) {
      SetNumThreads(t);
      Tensor perm;
      const Csr tr = a.Transpose(&perm);
      ASSERT_EQ(tr.num_rows, a.num_cols);
      ASSERT_EQ(tr.num_cols, a.num_rows);
      ASSERT_EQ(tr.nnz(), a.nnz());
      std::vector<int64_t> count(a.num_cols + 1, 0);
      for (const auto& [c, r, e] : entries) ++count[c + 1];
      for (int64_t j = 0; j < a.num_cols; ++j) {
        count[j + 1] += count[j];
        ASSERT_EQ(tr.row_ptr()[j + 1], count[j + 1]) << "threads " << t << ", row " << j;
      }
      for (int64_t k = 0; k < tr.nnz(); ++k) {
        const auto& [c, r, e] = entries[k];
        ASSERT_EQ(tr.col()[k], r) << "threads " << t << ", entry " << k;
        ASSERT_EQ(perm.i32()[k], e) << "threads " << t << ", entry " << k;
        if (a.values.defined()) {
          ASSERT_EQ(tr.val()[k], a.val()[e]);
        }
      }
    }
  }
  SetNumThreads(threads);
}

TEST(Parallel, BackgroundLoopsRunAtTheLowestPriority) {
  auto nice = [] { return getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())); };
  const int before = nice();
  SetNumThreads(2);
  std::atomic<int> ran{0}, low{0};
  std::thread worker([&] {
    BecomeBackground();
    EXPECT_TRUE(InBackground());
    ParallelFor(0, 64, [&](int64_t) {
      ++ran;
      if (nice() == 19) ++low;
    });
    ParallelForDynamic(0, 64, 1, [&](int64_t) {
      ++ran;
      if (nice() == 19) ++low;
    });
  });
  worker.join();
  EXPECT_EQ(ran.load(), 128);
  EXPECT_EQ(low.load(), 128);
  EXPECT_FALSE(InBackground());
  std::atomic<int> kept{0};
  ParallelFor(0, 64, [&](int64_t) {
    if (nice() == before) ++kept;
  });
  EXPECT_EQ(kept.load(), 64);
}

}  // namespace
}  // namespace fg
