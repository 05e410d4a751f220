// The fixture of the device op tests (device_ops_test.cc, device_edge_ops_test.cc): each test runs
// an op on the CUDA device (inputs copied there) and compares the result, copied back, with the CPU
// backend; it skips where no GPU is usable. Instantiated once, in device_ops_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "flexgraph/tensor/csr.h"
#include "flexgraph/tensor/device_alloc.h"
#include "flexgraph/tensor/tensor.h"

namespace fg::testing {

class DeviceOpsTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam() == Device::kCuda && !CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason();
  }
  Device dev() const { return GetParam(); }
  Tensor On(const Tensor& t) const { return t.To(dev()); }
  Csr On(const Csr& c) const { return c.To(dev()); }

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

}  // namespace fg::testing
