// The device hooks without a usable GPU: availability is reported (never a crash), with a reason
// naming the cause; device allocation aborts with that reason; host-side helpers still work.
#include <gtest/gtest.h>

#include <cstring>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "flexgraph/ops/ops.h"
#include "flexgraph/tensor/device_alloc.h"
#include "flexgraph/tensor/tensor.h"
#if defined(FLEXGRAPH_HAVE_CUDA)
#include "flexgraph/ops/cuda/math_libs.h"
#endif

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

// A tensor the GPU cannot hold is an error naming its shape and the device's memory, and the
// allocator keeps working.
TEST(CudaAllocator, ExhaustedMemoryNamesTheTensor) {
  if (!CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason();
  try {
    Tensor::Empty({int64_t{1} << 20, int64_t{1} << 20}, DType::kFloat32, Device::kCuda);  // 4 TiB
    FAIL() << "a 4 TiB tensor was allocated";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("out of GPU memory"), std::string::npos) << what;
    EXPECT_NE(what.find("[1048576, 1048576]"), std::string::npos) << what;
    EXPECT_NE(what.find("MiB free of"), std::string::npos) << what;
  }
  Tensor t = Tensor::Zeros({3, 5}, DType::kFloat32, Device::kCuda);
  EXPECT_EQ(t.ToVector<float>(), std::vector<float>(15, 0.0f));
}

// A device memory limit acts as a smaller GPU: beyond it an allocation fails by name, cached
// blocks are given back first, and lifting the limit allocates again.
TEST(CudaAllocator, AMemoryLimitRefusesAllocationsBeyondItByName) {
  if (!CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason();
  const size_t base = GetDeviceAllocatorStats().bytes_in_use;
  SetDeviceMemoryLimit(base + (size_t{64} << 20));
  {
    Tensor a = Tensor::Empty({int64_t{8} << 20}, DType::kFloat32, Device::kCuda);  // 32 MiB
  }  // cached now: counts against the limit until given back
  Tensor b = Tensor::Empty({int64_t{12} << 20}, DType::kFloat32, Device::kCuda);  // 48 MiB fits
  try {
    Tensor c = Tensor::Empty({int64_t{8} << 20}, DType::kFloat32, Device::kCuda);  // 32 MiB more does not
    FAIL() << "an allocation beyond the limit succeeded";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("device_memory_gib"), std::string::npos) << what;
    EXPECT_NE(what.find("[8388608]"), std::string::npos) << what;
  }
  SetDeviceMemoryLimit(0);
  Tensor c = Tensor::Zeros({int64_t{8} << 20}, DType::kFloat32, Device::kCuda);
  EXPECT_EQ(c.numel(), int64_t{8} << 20);
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

// Host-to-device copies return without waiting for the stream, and the host buffer may be
// rewritten at once: copies of many sizes, more bytes in all than the staging ring holds (so it
// wraps while copies are queued behind a busy stream), each source overwritten after its copy.
TEST(CudaAllocator, StagedCopiesKeepTheirBytesWhenTheSourceIsReused) {
  if (!CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason();
  std::vector<Tensor> copies;
  std::vector<std::vector<int32_t>> expected;
  std::vector<int32_t> source;
  const int64_t sizes[] = {1, 7, 1000, 65536, (int64_t{3} << 20) + 5, int64_t{5} << 20};
  const DeviceAllocatorStats before = GetDeviceAllocatorStats();
  // A large device copy ahead of the staged ones keeps the stream busy while the ring fills.
  Tensor big = Tensor::Zeros({int64_t{64} << 20}, DType::kInt32, Device::kCuda);
  for (int round = 0; round < 40; ++round) {
    const int64_t n = sizes[round % 6];
    source.assign(n, 0);
    for (int64_t k = 0; k < n; ++k) source[k] = static_cast<int32_t>(round * 1000003 + k);
    Tensor host = Tensor::FromVector(source);
    copies.push_back(host.To(Device::kCuda));
    expected.push_back(source);
    std::fill(host.i32(), host.i32() + n, -1);  // the copy must already hold its bytes
    if (round % 8 == 0) big = big.Clone();
  }
  const DeviceAllocatorStats during = GetDeviceAllocatorStats();
  // The ring wrapped: it waited for some queued copies, not for every one.
  EXPECT_LT(during.host_syncs - before.host_syncs, 40);
  for (size_t i = 0; i < copies.size(); ++i) {
    EXPECT_EQ(copies[i].ToVector<int32_t>(), expected[i]) << "copy " << i;
  }
  EXPECT_GE(GetDeviceAllocatorStats().host_syncs - during.host_syncs,
            static_cast<int64_t>(copies.size()));  // every read back waits
}

// A transfer on the copy stream sees every write enqueued on the thread's stream before it
// started, even one still running (a large clone ahead of it), and its bytes are complete once
// finished; several may be in flight at once.
TEST(CudaTransfers, DeviceToHostCopiesFollowEarlierWorkAndCompleteWhenFinished) {
  if (!CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason();
  const int64_t n = int64_t{4} << 20;
  std::vector<int32_t> values(n);
  for (int64_t k = 0; k < n; ++k) values[k] = static_cast<int32_t>(k * 7 + 3);
  const Tensor device = Tensor::FromVector(values).To(Device::kCuda);
  std::vector<Tensor> sources;
  std::vector<DeviceTransfer> transfers;
  std::vector<int32_t*> pinned;
  for (int i = 0; i < 3; ++i) {
    Tensor big = Tensor::Zeros({int64_t{32} << 20}, DType::kInt32, Device::kCuda).Clone();  // keeps the stream busy
    sources.push_back(device.Clone());  // written on the stream, after that clone
    pinned.push_back(static_cast<int32_t*>(PinnedAlloc(n * sizeof(int32_t))));
    transfers.push_back(StartDeviceToHost(pinned.back(), sources.back().raw(), n * sizeof(int32_t)));
  }
  const int64_t syncs = GetDeviceAllocatorStats().host_syncs;
  for (int i = 0; i < 3; ++i) {
    FinishDeviceToHost(&transfers[i]);
    FinishDeviceToHost(&transfers[i]);  // idempotent
    EXPECT_EQ(transfers[i].event, nullptr);
    EXPECT_TRUE(std::equal(values.begin(), values.end(), pinned[i])) << "transfer " << i;
    PinnedFree(pinned[i]);
  }
  EXPECT_EQ(GetDeviceAllocatorStats().host_syncs - syncs, 3);
}

#if defined(FLEXGRAPH_HAVE_CUDA)
// Whether this process maps a file whose path contains `name`.
bool Mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream all;
  all << maps.rdbuf();
  return all.str().find(name) != std::string::npos;
}

TEST(CudaMathLibraries, AreLoadedOnFirstUseOnly) {
  // Nothing in this test binary runs a GPU GEMM or SpMM; CPU ones never load the libraries.
  const Tensor c = ops::Matmul(Tensor::FromVector(std::vector<float>{1, 2, 3, 4}).Reshape({2, 2}),
                               Tensor::FromVector(std::vector<float>{1, 0, 0, 1}).Reshape({2, 2}));
  EXPECT_EQ(c.ToVector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_FALSE(ops::cuda::MathLibrariesLoaded());
  EXPECT_FALSE(Mapped("libcublas"));
  EXPECT_FALSE(Mapped("libcusparse"));
  // Loading them resolves every entry point, with or without a GPU.
  EXPECT_NE(ops::cuda::Cublas().sgemm, nullptr);
  EXPECT_NE(ops::cuda::Cusparse().spmm, nullptr);
  EXPECT_TRUE(ops::cuda::MathLibrariesLoaded());
  EXPECT_TRUE(Mapped("libcublas.so"));
  EXPECT_TRUE(Mapped("libcusparse.so"));
}
#endif

}  // namespace
}  // namespace fg
