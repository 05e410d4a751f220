// Every op on the GPU: each test runs the op on the CUDA device (inputs copied there) and compares
// the result, copied back, with the CPU backend on the same random inputs. The tests skip when no
// GPU is usable (any cudaGetDeviceCount error); they carry the ctest label `gpu`. There are no CPU
// instances: the CPU compared with itself covers nothing (the CPU kernels have their own tests).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/autograd/var.h"
#include "flexgraph/nn/optim.h"
#include "flexgraph/ops/instances.h"
#include "flexgraph/ops/ops.h"
#include "flexgraph/tensor/device_alloc.h"
#include "tests/core/gradcheck.h"
#include "tests/core/test_graphs.h"
#include "tests/cuda/device_ops_fixture.h"

namespace fg {
namespace {

using testing::RandomCsr;
using testing::RandomTensor;

using testing::DeviceOpsTest;

TEST_P(DeviceOpsTest, GemmAllTransposes) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = RandomTensor(ta ? Shape{33, 17} : Shape{17, 33}, 1);
      Tensor b = RandomTensor(tb ? Shape{9, 33} : Shape{33, 9}, 2);
      ExpectClose(ops::Matmul(a, b, ta, tb), ops::Matmul(On(a), On(b), ta, tb));
    }
  }
  // Accumulating form: c = 0.5 a b + 2 c.
  Tensor a = RandomTensor({5, 4}, 3), b = RandomTensor({4, 6}, 4), c = RandomTensor({5, 6}, 5);
  Tensor c_dev = On(c).Clone();
  ops::MatmulInto(a, b, false, false, 0.5f, 2.0f, &c);
  ops::MatmulInto(On(a), On(b), false, false, 0.5f, 2.0f, &c_dev);
  ExpectClose(c, c_dev);
}

// The fused bias + ReLU (also in place), its backward, and the GEMM with that epilogue.
TEST_P(DeviceOpsTest, FusedBiasRelu) {
  Tensor x = RandomTensor({70, 19}, 11), b = RandomTensor({19}, 12), gy = RandomTensor({70, 19}, 13);
  const Tensor y = ops::BiasRelu(x, b);
  ExpectClose(y, ops::BiasRelu(On(x), On(b)));
  Tensor over = On(x).Clone();  // written over its input
  ops::BiasReluInPlace(&over, On(b));
  ExpectClose(y, over);
  Tensor gb, gb_dev;
  ExpectClose(ops::BiasReluBackward(y, gy, &gb), ops::BiasReluBackward(On(y), On(gy), &gb_dev));
  ExpectClose(gb, gb_dev);
  Tensor a = RandomTensor({70, 23}, 14), w = RandomTensor({23, 19}, 15);
  ExpectClose(ops::MatmulBiasRelu(a, w, b), ops::MatmulBiasRelu(On(a), On(w), On(b)));
}

TEST_P(DeviceOpsTest, StridedBatchedGemm) {
  Tensor a = RandomTensor({4, 6, 5}, 6), b = RandomTensor({4, 5, 3}, 7);
  ExpectClose(ops::BatchedMatmul(a, b), ops::BatchedMatmul(On(a), On(b)));
  Tensor bt = RandomTensor({4, 3, 5}, 8);
  ExpectClose(ops::BatchedMatmul(a, bt, false, true), ops::BatchedMatmul(On(a), On(bt), false, true));
}

TEST_P(DeviceOpsTest, ActivationsForwardAndBackward) {
  Tensor x = RandomTensor({40, 7}, 9, -3.0f, 3.0f), gy = RandomTensor({40, 7}, 10);
  for (auto op : {ops::UnaryOp::kRelu, ops::UnaryOp::kLeakyRelu, ops::UnaryOp::kElu,
                  ops::UnaryOp::kTanh, ops::UnaryOp::kSigmoid, ops::UnaryOp::kExp}) {
    Tensor y = ops::Apply(op, x, 0.2f);
    Tensor y_dev = ops::Apply(op, On(x), 0.2f);
    ExpectClose(y, y_dev);
    ExpectClose(ops::ApplyBackward(op, x, y, gy, 0.2f),
                ops::ApplyBackward(op, On(x), y_dev, On(gy), 0.2f));
  }
}

TEST_P(DeviceOpsTest, ElementwiseArithmetic) {
  Tensor a = RandomTensor({30, 8}, 11), b = RandomTensor({30, 8}, 12), bias = RandomTensor({8}, 13);
  ExpectClose(ops::Add(a, b, -0.5f), ops::Add(On(a), On(b), -0.5f));
  ExpectClose(ops::Add(a, bias), ops::Add(On(a), On(bias)));
  ExpectClose(ops::Mul(a, b), ops::Mul(On(a), On(b)));
  ExpectClose(ops::Scale(a, 3.0f), ops::Scale(On(a), 3.0f));
  Tensor acc = a.Clone(), acc_dev = On(a).Clone();
  ops::AddInPlace(&acc, b, 2.0f);
  ops::AddInPlace(&acc_dev, On(b), 2.0f);
  ExpectClose(acc, acc_dev);
  Tensor s = RandomTensor({30, 2}, 14);
  ExpectClose(ops::ScaleRows(a, s), ops::ScaleRows(On(a), On(s)));
  Tensor tall = RandomTensor({1500, 5}, 15);  // several row chunks on the GPU
  ExpectClose(ops::SumRows(tall), ops::SumRows(On(tall)));
  Tensor taller = RandomTensor({300000, 3}, 16);  // three levels of chunks on the GPU
  ExpectClose(ops::SumRows(taller), ops::SumRows(On(taller)), 1e-3f);
}

// The NLL and BCE losses and their gradients: rows in any order, few and many (several blocks on
// the GPU).
TEST_P(DeviceOpsTest, LossesAndGradients) {
  for (int64_t n : {1, 37, 20000}) {
    const int64_t classes = 5;
    Tensor logp = ops::LogSoftmax(RandomTensor({n, classes}, 21));
    std::vector<int64_t> labels(n);
    std::vector<int32_t> rows;
    for (int64_t i = 0; i < n; ++i) {
      labels[i] = (i * 7 + 3) % classes;
      if (i % 3 != 1) rows.push_back(static_cast<int32_t>(n - 1 - i));
    }
    if (rows.empty()) rows.push_back(0);
    const Tensor y = Tensor::FromVector(labels), r = Tensor::FromVector(rows);
    const Tensor loss = ops::NllLoss(logp, y, r);
    const Tensor loss_dev = ops::NllLoss(On(logp), On(y), On(r));
    EXPECT_EQ(loss_dev.device(), dev());
    ExpectClose(loss, loss_dev, 1e-5f);
    const Tensor g = Tensor::FromVector<float>({0.5f});
    ExpectClose(ops::NllLossBackward(g, logp, y, r), ops::NllLossBackward(On(g), On(logp), y, r));
    // Binary cross-entropy over the same sizes, logits far into both tails.
    const Tensor x = RandomTensor({n}, 22, -30.0f, 30.0f), t = RandomTensor({n}, 23, 0.0f, 1.0f);
    ExpectClose(ops::BceWithLogits(x, t), ops::BceWithLogits(On(x), On(t)), 1e-5f);
    ExpectClose(ops::BceWithLogitsBackward(g, x, t), ops::BceWithLogitsBackward(On(g), On(x), On(t)));
  }
}

TEST_P(DeviceOpsTest, ConcatAndSplit) {
  Tensor a = RandomTensor({6, 3}, 16), b = RandomTensor({6, 5}, 17);
  Tensor cat = ops::Concat({a, b});
  Tensor cat_dev = ops::Concat({On(a), On(b)});
  EXPECT_EQ(cat_dev.device(), dev());
  ExpectClose(cat, cat_dev, 0.0f);
  std::vector<Tensor> parts = ops::Split(cat_dev, {3, 5});
  ExpectClose(a, parts[0], 0.0f);
  ExpectClose(b, parts[1], 0.0f);
}

// ag::ConcatRows on the device: the CPU's rows and each part's gradient rows.
TEST_P(DeviceOpsTest, ConcatRowsAndItsGradients) {
  const Tensor a = RandomTensor({5, 3}, 18), b = RandomTensor({2, 3}, 19), g = RandomTensor({7, 3}, 20);
  auto run = [&](Device d, Tensor* ga, Tensor* gb) {
    ag::Var va = ag::Var::Parameter(a.To(d)), vb = ag::Var::Parameter(b.To(d));
    ag::Var y = ag::ConcatRows({va, ag::Var(Tensor::Empty({0, 3}, DType::kFloat32, d)), vb});
    y.Backward(g.To(d));
    *ga = va.grad();
    *gb = vb.grad();
    return y.value();
  };
  Tensor ga, gb, ga_dev, gb_dev;
  const Tensor y = run(Device::kCpu, &ga, &gb), y_dev = run(dev(), &ga_dev, &gb_dev);
  EXPECT_EQ(y_dev.device(), dev());
  ExpectClose(y, y_dev, 0.0f);
  ExpectClose(ga, ga_dev, 0.0f);
  ExpectClose(gb, gb_dev, 0.0f);
}

TEST_P(DeviceOpsTest, SpmmVariants) {
  // Narrow and wide outputs (a wide mean weighs entries by 1 / degree), then a larger matrix
  // (the unweighted products' ones grow).
  Csr a = RandomCsr(70, 50, 6, /*skewed=*/true, 18);
  for (int64_t width : {12, 37, 64}) {
    Tensor x = RandomTensor({50, width}, 19);
    Tensor w1 = RandomTensor({a.nnz()}, 20), w3 = RandomTensor({a.nnz(), 3}, 21);
    for (auto reduce : {ops::SpmmReduce::kSum, ops::SpmmReduce::kMean}) {
      ExpectClose(ops::Spmm(a, x, reduce), ops::Spmm(On(a), On(x), reduce));
      ExpectClose(ops::Spmm(a, x, reduce, w1), ops::Spmm(On(a), On(x), reduce, On(w1)));
      if (width % 3 == 0) {
        ExpectClose(ops::Spmm(a, x, reduce, w3), ops::Spmm(On(a), On(x), reduce, On(w3)));
      }
    }
  }
  const Csr big = RandomCsr(3000, 2000, 40, /*skewed=*/true, 23);
  const Tensor xb = RandomTensor({2000, 40}, 24);
  for (auto reduce : {ops::SpmmReduce::kSum, ops::SpmmReduce::kMean}) {
    ExpectClose(ops::Spmm(big, xb, reduce), ops::Spmm(On(big), On(xb), reduce));
  }
  Csr weighted = Csr::FromVectors(2, 3, {0, 2, 3}, {0, 2, 1}, {0.5f, 2.0f, -1.0f});
  Tensor x3 = RandomTensor({3, 4}, 22);
  ExpectClose(ops::Spmm(weighted, x3, ops::SpmmReduce::kSum),
              ops::Spmm(On(weighted), On(x3), ops::SpmmReduce::kSum));
}

TEST_P(DeviceOpsTest, SpmmMaxAndBackward) {
  Csr a = RandomCsr(40, 30, 5, true, 23);
  Tensor x = RandomTensor({30, 6}, 24), gy = RandomTensor({40, 6}, 25);
  Tensor argmax, argmax_dev;
  ExpectClose(ops::SpmmMax(a, x, &argmax), ops::SpmmMax(On(a), On(x), &argmax_dev));
  ExpectSameInts(argmax, argmax_dev);
  Csr at = a.Transpose();
  ExpectClose(ops::SpmmMaxBackward(at, argmax, gy),
              ops::SpmmMaxBackward(On(at), argmax_dev, On(gy)));
}

TEST_P(DeviceOpsTest, Sddmm) {
  Csr c = RandomCsr(35, 28, 5, true, 26);
  Tensor a = RandomTensor({35, 8}, 27), b = RandomTensor({28, 8}, 28);
  for (int64_t heads : {1, 4}) {
    ExpectClose(ops::SddmmDot(c, a, b, heads), ops::SddmmDot(On(c), On(a), On(b), heads));
  }
  Tensor u = RandomTensor({35, 2}, 29), v = RandomTensor({28, 2}, 30);
  ExpectClose(ops::SddmmAdd(c, u, v), ops::SddmmAdd(On(c), On(u), On(v)));
}

TEST_P(DeviceOpsTest, SegmentSoftmaxAndReductions) {
  Csr c = RandomCsr(25, 20, 6, true, 31);  // its offsets are the segments (some empty)
  Tensor s = RandomTensor({c.nnz(), 2}, 32, -4.0f, 4.0f), gy = RandomTensor({c.nnz(), 2}, 33);
  Tensor off = c.offsets;
  Tensor y = ops::SegmentSoftmax(off, s);
  Tensor y_dev = ops::SegmentSoftmax(On(off), On(s));
  ExpectClose(y, y_dev);
  ExpectClose(ops::SegmentSoftmaxBackward(off, y, gy),
              ops::SegmentSoftmaxBackward(On(off), y_dev, On(gy)));
  Tensor x = RandomTensor({c.nnz(), 5}, 34);
  for (auto op : {ops::SegmentReduceOp::kSum, ops::SegmentReduceOp::kMean,
                  ops::SegmentReduceOp::kMax}) {
    Tensor am, am_dev;
    ExpectClose(ops::SegmentReduce(off, x, op, &am), ops::SegmentReduce(On(off), On(x), op, &am_dev));
    if (op == ops::SegmentReduceOp::kMax) ExpectSameInts(am, am_dev);
    const Tensor g = RandomTensor({c.num_rows, 5}, 37);
    ExpectClose(ops::SegmentReduceBackward(off, g, op, am, x.rows()),
                ops::SegmentReduceBackward(On(off), On(g), op, am_dev, x.rows()), 0.0f);
  }
}

TEST_P(DeviceOpsTest, GatherAndScatter) {
  Tensor x = RandomTensor({20, 6}, 35);
  Tensor idx = Tensor::FromVector<int32_t>({3, 0, 19, 3, 7, 7, 7, 12});
  ExpectClose(ops::GatherRows(x, idx), ops::GatherRows(On(x), On(idx)), 0.0f);
  Tensor rows = RandomTensor({8, 6}, 36);
  ExpectClose(ops::ScatterAddRows(rows, idx, 20), ops::ScatterAddRows(On(rows), On(idx), 20));
}

// The grouping behind every scatter-add, built on the device: the same offsets and positions as
// the host's stable counting sort, for empty rows, one row, skewed and large inputs.
TEST_P(DeviceOpsTest, GroupByIndexMatchesTheHost) {
  struct Case {
    int64_t n, rows;
    int skew;  // draws r^skew of a uniform r: higher concentrates the indices on few rows
  };
  const Case cases[] = {{0, 0, 1}, {0, 5, 1}, {1, 1, 1}, {37, 1, 1}, {100, 1000, 1},
                        {1000, 33, 3}, {300001, 4097, 4}, {200000, (int64_t{1} << 20) + 3, 2}};
  uint64_t state = 12345;
  for (const Case& c : cases) {
    std::vector<int32_t> idx(c.n);
    for (int32_t& v : idx) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const double u = static_cast<double>(state >> 11) / 9007199254740992.0;
      v = static_cast<int32_t>(std::pow(u, c.skew) * static_cast<double>(c.rows));
    }
    const Tensor host = Tensor::FromVector(idx);
    const Csr expected = ops::GroupByIndex(host, c.rows);
    const Csr got = ops::GroupByIndex(On(host), c.rows);
    ASSERT_EQ(got.offsets.device(), dev());
    EXPECT_EQ(expected.offsets.ToVector<int64_t>(), got.offsets.ToVector<int64_t>())
        << c.n << " indices into " << c.rows << " rows";
    ExpectSameInts(expected.indices, got.indices);
  }
  // Indices outside the rows are dropped on the device (the host aborts on them).
  const Tensor bad = Tensor::FromVector<int32_t>({2, -1, 0, 9, 2, 4});
  const Csr g = ops::GroupByIndex(On(bad), 5);
  EXPECT_EQ(g.offsets.ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 3, 3, 4}));
  const std::vector<int32_t> pos = g.indices.ToVector<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(pos.begin(), pos.begin() + 4), (std::vector<int32_t>{2, 0, 4, 5}));
}

TEST_P(DeviceOpsTest, RowOps) {
  Tensor x = RandomTensor({45, 7}, 37, -5.0f, 5.0f), gy = RandomTensor({45, 7}, 38);
  Tensor y = ops::LogSoftmax(x);
  Tensor y_dev = ops::LogSoftmax(On(x));
  ExpectClose(y, y_dev);
  ExpectClose(ops::LogSoftmaxBackward(y, gy), ops::LogSoftmaxBackward(y_dev, On(gy)));
  x.f32()[0] = x.f32()[1] = x.f32()[2] = x.f32()[3] = x.f32()[4] = x.f32()[5] = x.f32()[6] = 0.0f;
  Tensor norms, norms_dev;
  Tensor n = ops::RowL2Normalize(x, 1e-6f, &norms);
  Tensor n_dev = ops::RowL2Normalize(On(x), 1e-6f, &norms_dev);
  ExpectClose(n, n_dev);
  ExpectClose(norms, norms_dev);
  ExpectClose(ops::RowL2NormalizeBackward(n, norms, gy, 1e-6f),
              ops::RowL2NormalizeBackward(n_dev, norms_dev, On(gy), 1e-6f));
}

TEST_P(DeviceOpsTest, DropoutMaskIsDeviceIndependent) {
  Tensor ids = Tensor::FromVector<int64_t>({5, 900, 17, 3});
  Tensor mask = ops::DropoutMask(4, 23, 0.4f, 77, ids);
  Tensor mask_dev = ops::DropoutMask(4, 23, 0.4f, 77, On(ids), dev());
  EXPECT_EQ(mask_dev.device(), dev());
  ExpectClose(mask, mask_dev, 0.0f);
  ExpectClose(ops::DropoutMask(3, 9, 0.5f, 1), ops::DropoutMask(3, 9, 0.5f, 1, Tensor(), dev()),
              0.0f);
  Tensor x = Tensor::Empty({4, 23});
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = static_cast<float>(i % 7) - 3.0f;
  ExpectClose(ops::Dropout(x, 0.4f, 77, ids), ops::Dropout(On(x), 0.4f, 77, On(ids)), 0.0f);
}

// Three steps of every optimizer from the same gradients (one missing) give the CPU's parameters.
TEST_P(DeviceOpsTest, OptimizerStepsMatchTheCpu) {
  for (nn::OptimizerKind kind :
       {nn::OptimizerKind::kSgd, nn::OptimizerKind::kAdam, nn::OptimizerKind::kAdamW}) {
    const Tensor w0 = RandomTensor({37, 5}, 11), g0 = RandomTensor({37, 5}, 12);
    const Tensor b0 = RandomTensor({5}, 13);
    auto run = [&](Device device) {
      std::vector<nn::NamedParameter> params = {{"w", ag::Var(w0.Clone().To(device), true)},
                                                {"b", ag::Var(b0.Clone().To(device), true)}};
      nn::Optimizer opt(kind, params, {.lr = 0.1f, .weight_decay = 0.01f, .momentum = 0.9f});
      for (int step = 0; step < 3; ++step) {
        ag::AccumulateGrad(params[0].var, ops::Scale(g0.To(device), 1.0f + step), "test");
        opt.Step();  // "b" has no gradient: it decays only
        opt.ZeroGrad();
      }
      return std::pair{params[0].var.value(), params[1].var.value()};
    };
    const auto [w_cpu, b_cpu] = run(Device::kCpu);
    const auto [w_dev, b_dev] = run(dev());
    EXPECT_EQ(w_dev.device(), dev());
    ExpectClose(w_cpu, w_dev, 1e-5f);
    ExpectClose(b_cpu, b_dev, 1e-5f);
  }
}

// Metapath-instance ops (ops/instances.h). Widths are even but not multiples of 32; the gradients
// that sum into shared rows are also checked to repeat bit for bit on the device.
TEST_P(DeviceOpsTest, InstanceComplexMulAndGradients) {
  struct Case {
    Shape x, r;
  };
  // [n, L, d] against [L, d]; [n, d] against [1, d]; no rows; rows spanning several partial sums.
  for (const Case& c : {Case{{7, 3, 10}, {3, 10}}, Case{{5, 34}, {1, 34}}, Case{{0, 2, 6}, {2, 6}},
                        Case{{1300, 2, 6}, {2, 6}}}) {
    SCOPED_TRACE(ShapeToString(c.x));
    const Tensor x = RandomTensor(c.x, 40), r = RandomTensor(c.r, 41), g = RandomTensor(c.x, 42);
    ExpectClose(ops::ComplexMul(x, r), ops::ComplexMul(On(x), On(r)));
    ExpectClose(ops::ComplexMulGradX(g, r), ops::ComplexMulGradX(On(g), On(r)));
    const Tensor gr_dev = ops::ComplexMulGradR(On(g), On(x), c.r);
    EXPECT_EQ(gr_dev.device(), dev());
    ExpectClose(ops::ComplexMulGradR(g, x, c.r), gr_dev);
    ExpectClose(gr_dev.To(Device::kCpu), ops::ComplexMulGradR(On(g), On(x), c.r), 0.0f);
  }
}

TEST_P(DeviceOpsTest, InstanceEncoderAndGradients) {
  // Table rows 0..8 of width 10 (row 8 unused). Blocks: three instances of length 3 with repeated
  // vertices (rotated), an empty block (rotated), one instance of length 4 (plain mean), and more
  // instances than one partial sum of either backend (rotated).
  const int64_t rows = 9, d = 10;
  const Tensor table = RandomTensor({rows, d}, 43);
  Tensor many = Tensor::Empty({1100, 2}, DType::kInt32);
  for (int64_t k = 0; k < many.numel(); ++k) many.i32()[k] = static_cast<int32_t>((k * 7) % 8);
  const ops::InstanceBlocks blocks{
      {Tensor::FromVector(std::vector<int32_t>{0, 1, 1, 2, 2, 2, 7, 0, 7}, {3, 3}),
       Tensor::Empty({0, 2}, DType::kInt32),
       Tensor::FromVector(std::vector<int32_t>{5, 5, 3, 5}, {1, 4}), many},
      {RandomTensor({3, d}, 44), RandomTensor({2, d}, 45), Tensor(), RandomTensor({2, d}, 46)}};
  // On the device: float operands there; vertices on the host (placed by the ops) or there too.
  ops::InstanceBlocks on_host = blocks, on_dev = blocks;
  for (size_t b = 0; b < blocks.vertices.size(); ++b) {
    on_host.rotations[b] = on_dev.rotations[b] = On(blocks.rotations[b]);
    on_dev.vertices[b] = On(blocks.vertices[b]);
  }
  const Tensor y = ops::EncodeInstances(table, blocks);
  ASSERT_EQ(y.shape(), (Shape{1104, d}));
  const Tensor g = RandomTensor(y.shape(), 47);
  const Tensor gt = ops::EncodeInstancesGradTable(g, blocks, rows);
  for (const ops::InstanceBlocks* placed : {&on_host, &on_dev}) {
    const Tensor y_dev = ops::EncodeInstances(On(table), *placed);
    EXPECT_EQ(y_dev.device(), dev());
    ExpectClose(y, y_dev);
    const Tensor gt_dev = ops::EncodeInstancesGradTable(On(g), *placed, rows);
    ExpectClose(gt, gt_dev);
    ExpectClose(gt_dev.To(Device::kCpu), ops::EncodeInstancesGradTable(On(g), *placed, rows), 0.0f);
    for (size_t b : {0, 1, 3}) {
      SCOPED_TRACE(b);
      const Tensor gr_dev = ops::EncodeInstancesGradRotation(On(g), On(table), *placed, b);
      ExpectClose(ops::EncodeInstancesGradRotation(g, table, blocks, b), gr_dev);
      ExpectClose(gr_dev.To(Device::kCpu),
                  ops::EncodeInstancesGradRotation(On(g), On(table), *placed, b), 0.0f);
    }
  }
  // The plain mean at an odd width (one column per thread on the device).
  const Tensor odd = RandomTensor({6, 7}, 48);
  const ops::InstanceBlocks means{
      {Tensor::FromVector(std::vector<int32_t>{4, 4, 0, 5, 1, 4}, {3, 2}),
       Tensor::FromVector(std::vector<int32_t>{2, 4, 4}, {1, 3})},
      {Tensor(), Tensor()}};
  ExpectClose(ops::EncodeInstances(odd, means), ops::EncodeInstances(On(odd), means));
  const Tensor g_odd = RandomTensor({4, 7}, 49);
  ExpectClose(ops::EncodeInstancesGradTable(g_odd, means, 6),
              ops::EncodeInstancesGradTable(On(g_odd), means, 6));
  // No blocks at all.
  const ops::InstanceBlocks none;
  ExpectClose(ops::EncodeInstances(table, none), ops::EncodeInstances(On(table), none));
  ExpectClose(ops::EncodeInstancesGradTable(Tensor::Empty({0, d}), none, rows),
              ops::EncodeInstancesGradTable(On(Tensor::Empty({0, d})), none, rows));
}

TEST_P(DeviceOpsTest, InstanceHeadWeightedSumAndGradients) {
  // Groups over instances (some groups empty, instances in several groups), three heads of width
  // 10; then a matrix without entries.
  for (const Csr& a :
       {RandomCsr(30, 20, 6, /*skewed=*/true, 50), Csr::FromVectors(2, 3, {0, 0, 0}, {})}) {
    SCOPED_TRACE(a.nnz());
    const int64_t heads = 3, d = 10;
    const Tensor x = RandomTensor({a.num_cols, d}, 51), alpha = RandomTensor({a.nnz(), heads}, 52);
    const Tensor g = RandomTensor({a.num_rows, heads * d}, 53);
    const Tensor y = ops::HeadWeightedSum(a, x, alpha);
    ExpectClose(y, ops::HeadWeightedSum(a, On(x), On(alpha)));      // structure on the host
    ExpectClose(y, ops::HeadWeightedSum(On(a), On(x), On(alpha)));  // and on the device
    const SparseMatrix m(a);
    const Tensor gx = ops::HeadWeightedSumGradX(m, alpha, g);
    const Tensor gx_dev = ops::HeadWeightedSumGradX(m, On(alpha), On(g));
    ExpectClose(gx, gx_dev);
    ExpectClose(gx_dev.To(Device::kCpu),
                ops::HeadWeightedSumGradX(*m.OnDevice(dev()), On(alpha), On(g)), 0.0f);
    const Tensor ga = ops::HeadWeightedSumGradAlpha(a, x, g);
    ExpectClose(ga, ops::HeadWeightedSumGradAlpha(a, On(x), On(g)));
    ExpectClose(ga, ops::HeadWeightedSumGradAlpha(On(a), On(x), On(g)));
  }
}

TEST_P(DeviceOpsTest, InstanceAddRowsInPlace) {
  const Tensor y = RandomTensor({10, 7}, 54), g = RandomTensor({4, 7}, 55);
  const Tensor idx = Tensor::FromVector<int32_t>({3, 0, 9, 5});
  for (const Tensor& at : {idx, On(idx)}) {
    Tensor y_cpu = y.Clone(), y_dev = On(y).Clone();
    ops::AddRowsInPlace(&y_cpu, idx, g);
    ops::AddRowsInPlace(&y_dev, at, On(g));
    ExpectClose(y_cpu, y_dev);
  }
  Tensor y_dev = On(y).Clone();
  ops::AddRowsInPlace(&y_dev, Tensor::Empty({0}, DType::kInt32), On(Tensor::Empty({0, 7})));
  ExpectClose(y, y_dev, 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceOpsTest, ::testing::Values(Device::kCuda),
                         [](const ::testing::TestParamInfo<Device>& info) {
                           return std::string(DeviceName(info.param));
                         });

}  // namespace
}  // namespace fg
