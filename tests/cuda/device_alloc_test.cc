// The device hooks without a usable GPU: availability is reported (never a crash), with a reason
// naming the cause; device allocation aborts with that reason; host-side helpers still work.
#include <gtest/gtest.h>

#include <cstring>

#include "flexgraph/tensor/device_alloc.h"
#include "flexgraph/tensor/tensor.h"

namespace fg {
namespace {

#if defined(FLEXGRAPH_HAVE_CUDA)
constexpr char kExpectedCause[] = "cudaGetDeviceCount";
#else
constexpr char kExpectedCause[] = "no CUDA backend";
#endif

TEST(CudaAvailability, IsStableAndExplained) {
  const bool available = CudaAvailable();
  EXPECT_EQ(CudaAvailable(), available);  // probed once
  if (available) {
    EXPECT_EQ(CudaUnavailableReason(), "");
  } else {
    EXPECT_NE(CudaUnavailableReason().find(kExpectedCause), std::string::npos)
        << CudaUnavailableReason();
  }
}

TEST(CudaAvailabilityDeathTest, DeviceAllocationAbortsWithTheReason) {
  if (CudaAvailable()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_DEATH(DeviceAlloc(256), kExpectedCause);
  EXPECT_DEATH(Tensor::Empty({4, 4}, DType::kFloat32, Device::kCuda), kExpectedCause);
}

TEST(CudaAvailability, HostHelpersWorkWithoutDevice) {
  if (CudaAvailable()) GTEST_SKIP() << "a CUDA device is present";
  DeviceFree(nullptr, 0);
  DeviceStreamSynchronize();
  DeviceReleaseCache();
  const DeviceAllocatorStats s = GetDeviceAllocatorStats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.device_mallocs, 0);
  // Pinned buffers fall back to ordinary host memory.
  void* p = PinnedAlloc(1000);
  ASSERT_NE(p, nullptr);
  std::memset(p, 7, 1000);
  EXPECT_EQ(static_cast<unsigned char*>(p)[999], 7);
  PinnedFree(p);
  EXPECT_EQ(PinnedAlloc(0), nullptr);
}

TEST(CudaAllocator, ReusesFreedBlocksOfTheSameSizeClass) {
  if (!CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason();
  DeviceReleaseCache();
  const DeviceAllocatorStats before = GetDeviceAllocatorStats();
  void* a = DeviceAlloc(1000);
  DeviceFree(a, 1000);
  void* b = DeviceAlloc(900);  // same 1024-byte class
  EXPECT_EQ(a, b);
  DeviceFree(b, 900);
  const DeviceAllocatorStats after = GetDeviceAllocatorStats();
  EXPECT_EQ(after.device_mallocs - before.device_mallocs, 1);
  EXPECT_GE(after.cache_hits - before.cache_hits, 1);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
}

}  // namespace
}  // namespace fg
