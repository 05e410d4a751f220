// The device twins of the edge-state models' ops (the Interaction Network's): the edge input
// gather and its gradients, the standard-deviation aggregation, and LayerNorm, on the GPU against
// the CPU (device_ops_fixture.h). Skip where no GPU is usable.
#include <gtest/gtest.h>

#include <vector>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/autograd/var.h"
#include "flexgraph/nn/layer_norm.h"
#include "flexgraph/ops/edge_ops.h"
#include "flexgraph/ops/norm_ops.h"
#include "tests/core/gradcheck.h"
#include "tests/core/test_graphs.h"
#include "tests/cuda/device_ops_fixture.h"

namespace fg {
namespace {

using testing::DeviceOpsTest;
using testing::RandomCsr;
using testing::RandomTensor;

TEST_P(DeviceOpsTest, EdgeInputAndSegmentStdWithGradients) {
  Csr a = RandomCsr(30, 24, 5, true, 61);  // some rows and columns without entries
  Tensor perm;
  const Csr at = a.Transpose(&perm);
  Tensor xs = RandomTensor({24, 6}, 62), xd = RandomTensor({30, 4}, 63), e = RandomTensor({a.nnz(), 3}, 64);
  ExpectClose(ops::EdgeInput(a, xs, xd, e), ops::EdgeInput(On(a), On(xs), On(xd), On(e)), 0.0f);
  ExpectClose(ops::EdgeInput(a, xs, xd, Tensor()), ops::EdgeInput(a, On(xs), On(xd), Tensor()), 0.0f);
  const Tensor g = RandomTensor({a.nnz(), 13}, 65);
  Tensor gxs, gxd, ge, gxs_dev, gxd_dev, ge_dev;
  ops::EdgeInputBackward(a, at, perm, g, 6, 4, &gxs, &gxd, &ge);
  ops::EdgeInputBackward(On(a), On(at), perm, On(g), 6, 4, &gxs_dev, &gxd_dev, &ge_dev);
  ExpectClose(gxs, gxs_dev, 0.0f);  // the same entry order: the same float sums
  ExpectClose(gxd, gxd_dev, 0.0f);
  ExpectClose(ge, ge_dev, 0.0f);
  const Tensor x = RandomTensor({a.nnz(), 5}, 66), gy = RandomTensor({a.num_rows, 5}, 67);
  const Tensor y = ops::SegmentStd(a.offsets, x, 1e-5f);
  const Tensor y_dev = ops::SegmentStd(On(a.offsets), On(x), 1e-5f);
  ExpectClose(y, y_dev, 1e-6f);
  ExpectClose(ops::SegmentStdBackward(a.offsets, x, y, gy),
              ops::SegmentStdBackward(a.offsets, On(x), y_dev, On(gy)), 1e-5f);
}

// LayerNorm over rows of a width that is not a multiple of a warp, and one wider than it, with its
// three gradients; the autograd path (and LayerNormSilu, Silu of it there) on the device too.
TEST_P(DeviceOpsTest, LayerNormRowsAndGradients) {
  for (const int64_t d : {int64_t{5}, int64_t{45}, int64_t{128}}) {
    SCOPED_TRACE(d);
    const Tensor x = RandomTensor({1100, d}, 71), gain = RandomTensor({d}, 72), bias = RandomTensor({d}, 73);
    const Tensor gy = RandomTensor({1100, d}, 74);
    const ops::LayerNormed f = ops::LayerNormRows(x, gain, bias, 1e-5f);
    const ops::LayerNormed f_dev = ops::LayerNormRows(On(x), On(gain), On(bias), 1e-5f);
    ExpectClose(f.y, f_dev.y, 1e-5f);
    ExpectClose(f.xhat, f_dev.xhat, 1e-5f);
    ExpectClose(f.rstd, f_dev.rstd, 1e-5f);
    Tensor gx, gg, gb, gx_dev, gg_dev, gb_dev;
    ops::LayerNormRowsBackward(gy, gain, f, &gx, &gg, &gb);
    ops::LayerNormRowsBackward(On(gy), On(gain), f_dev, &gx_dev, &gg_dev, &gb_dev);
    ExpectClose(gx, gx_dev, 1e-4f);
    ExpectClose(gg, gg_dev, 1e-4f);
    ExpectClose(gb, gb_dev, 1e-4f);
  }
  auto grads = [&](Device device, bool silu) {
    ag::Var x = ag::Var::Parameter(RandomTensor({70, 19}, 75).To(device)),
            g = ag::Var::Parameter(RandomTensor({19}, 76).To(device)),
            b = ag::Var::Parameter(RandomTensor({19}, 77).To(device));
    ag::Var y = silu ? ag::LayerNormSilu(x, g, b) : ag::LayerNormRows(x, g, b);
    ag::Sum(ag::Mul(y, ag::Var(RandomTensor({70, 19}, 78).To(device)))).Backward();
    return std::vector<Tensor>{y.value().To(Device::kCpu), x.grad().To(Device::kCpu), g.grad().To(Device::kCpu),
                               b.grad().To(Device::kCpu)};
  };
  for (bool silu : {false, true}) {
    const std::vector<Tensor> cpu = grads(Device::kCpu, silu), there = grads(dev(), silu);
    for (size_t k = 0; k < cpu.size(); ++k) ExpectClose(cpu[k], there[k], 1e-4f);
  }
}

}  // namespace
}  // namespace fg
