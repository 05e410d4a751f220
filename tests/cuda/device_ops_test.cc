// Every op on every device: each test runs the op on the parameter's device (inputs copied there)
// and compares the result, copied back, with the CPU backend on the same random inputs. The cuda
// instances skip when no GPU is usable (any cudaGetDeviceCount error), so on machines without one
// they document the coverage and the cpu instances check the harness.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "flexgraph/autograd/var.h"
#include "flexgraph/nn/optim.h"
#include "flexgraph/ops/ops.h"
#include "flexgraph/tensor/device_alloc.h"
#include "tests/core/gradcheck.h"
#include "tests/core/test_graphs.h"

namespace fg {
namespace {

using testing::RandomCsr;
using testing::RandomTensor;

class DeviceOpsTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam() == Device::kCuda && !CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason();
  }
  Device dev() const { return GetParam(); }
  Tensor On(const Tensor& t) const { return t.To(dev()); }
  Csr On(const Csr& c) const { return ops::CsrToDevice(c, dev()); }

  // `got` (any device) equals `expected` (CPU) within a relative tolerance.
  static void ExpectClose(const Tensor& expected, const Tensor& got, float tol = 1e-4f) {
    ASSERT_EQ(expected.shape(), got.shape());
    const std::vector<float> g = got.ToVector<float>();
    for (int64_t i = 0; i < expected.numel(); ++i) {
      const float e = expected.f32()[i];
      ASSERT_NEAR(g[i], e, tol * (1.0f + std::fabs(e))) << "element " << i;
    }
  }
  static void ExpectSameInts(const Tensor& expected, const Tensor& got) {
    EXPECT_EQ(expected.ToVector<int32_t>(), got.ToVector<int32_t>());
  }
};

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

// The fused bias + ReLU, its backward, and the GEMM with that epilogue.
TEST_P(DeviceOpsTest, FusedBiasRelu) {
  Tensor x = RandomTensor({70, 19}, 11), b = RandomTensor({19}, 12), gy = RandomTensor({70, 19}, 13);
  const Tensor y = ops::BiasRelu(x, b);
  ExpectClose(y, ops::BiasRelu(On(x), On(b)));
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

TEST_P(DeviceOpsTest, SpmmVariants) {
  Csr a = RandomCsr(70, 50, 6, /*skewed=*/true, 18);
  Tensor x = RandomTensor({50, 12}, 19);
  Tensor w1 = RandomTensor({a.nnz()}, 20), w3 = RandomTensor({a.nnz(), 3}, 21);
  for (auto reduce : {ops::SpmmReduce::kSum, ops::SpmmReduce::kMean}) {
    ExpectClose(ops::Spmm(a, x, reduce), ops::Spmm(On(a), On(x), reduce));
    ExpectClose(ops::Spmm(a, x, reduce, w1), ops::Spmm(On(a), On(x), reduce, On(w1)));
    ExpectClose(ops::Spmm(a, x, reduce, w3), ops::Spmm(On(a), On(x), reduce, On(w3)));
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
  }
}

TEST_P(DeviceOpsTest, GatherAndScatter) {
  Tensor x = RandomTensor({20, 6}, 35);
  Tensor idx = Tensor::FromVector<int32_t>({3, 0, 19, 3, 7, 7, 7, 12});
  ExpectClose(ops::GatherRows(x, idx), ops::GatherRows(On(x), On(idx)), 0.0f);
  Tensor rows = RandomTensor({8, 6}, 36);
  ExpectClose(ops::ScatterAddRows(rows, idx, 20), ops::ScatterAddRows(On(rows), On(idx), 20));
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
  for (nn::OptimizerKind kind : {nn::OptimizerKind::kSgd, nn::OptimizerKind::kAdam, nn::OptimizerKind::kAdamW}) {
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

INSTANTIATE_TEST_SUITE_P(Devices, DeviceOpsTest, ::testing::Values(Device::kCpu, Device::kCuda),
                         [](const ::testing::TestParamInfo<Device>& info) {
                           return std::string(DeviceName(info.param));
                         });

}  // namespace
}  // namespace fg
