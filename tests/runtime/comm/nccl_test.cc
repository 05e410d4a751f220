// The NCCL backend over an in-process host group: device all-reduce on two GPUs or more, and over
// the groups Split makes (one GPU: a group of one); two ranks on one GPU refused naming it; no GPU
// a clear error. Skipped where NCCL is not built in.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/comm/nccl_communicator.h"

#ifdef FLEXGRAPH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fg::runtime {
namespace {

// MakeNcclCommunicator on every worker of an in-process group of `size`, each on its own thread.
std::vector<absl::StatusOr<std::unique_ptr<Communicator>>> MakeGroup(int size) {
  auto hosts = MakeInProcessGroup(size);
  std::vector<absl::StatusOr<std::unique_ptr<Communicator>>> made;
  for (int r = 0; r < size; ++r) made.emplace_back(absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] { made[r] = MakeNcclCommunicator(std::move(hosts[r])); });
  }
  for (auto& t : threads) t.join();
  return made;
}

int Devices() {
#ifdef FLEXGRAPH_HAVE_CUDA
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
#else
  return 0;
#endif
}

#ifdef FLEXGRAPH_HAVE_CUDA
// `values` all-reduced on device `device` through `comm`'s AllReduceOnDevice; *status: its result.
std::vector<float> AllReduceOnDevice(Communicator& comm, int device, const std::vector<float>& values,
                                     absl::Status* status) {
  cudaSetDevice(device);
  const int64_t n = static_cast<int64_t>(values.size());
  std::vector<float> out(values.size());
  float* buffer = nullptr;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  cudaMalloc(reinterpret_cast<void**>(&buffer), n * sizeof(float));
  cudaMemcpy(buffer, values.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  *status = comm.AllReduceOnDevice(buffer, n, stream);
  cudaMemcpyAsync(out.data(), buffer, n * sizeof(float), cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  cudaFree(buffer);
  cudaStreamDestroy(stream);
  return out;
}
#endif

TEST(Nccl, NoGpuOrASharedGpuIsAClearError) {
  if (!NcclBuilt()) GTEST_SKIP() << "built without NCCL";
  const int devices = Devices();
  if (devices >= 2) GTEST_SKIP() << devices << " GPUs: every worker gets its own";
  auto made = MakeGroup(2);
  for (auto& m : made) {
    ASSERT_FALSE(m.ok());
    if (devices == 0) {
      EXPECT_NE(m.status().message().find("the NCCL backend needs a GPU"), std::string::npos) << m.status();
    } else {
      EXPECT_NE(m.status().message().find("workers 0 and 1 would share"), std::string::npos) << m.status();
      EXPECT_NE(m.status().message().find("GPU 0"), std::string::npos) << m.status();
    }
  }
}

#ifdef FLEXGRAPH_HAVE_CUDA
TEST(Nccl, AllReduceOnDeviceSumsAcrossGpus) {
  if (!NcclBuilt()) GTEST_SKIP() << "built without NCCL";
  const int workers = Devices();
  if (workers < 2) GTEST_SKIP() << "needs two GPUs or more, one per worker";
  auto made = MakeGroup(workers);
  for (auto& m : made) ASSERT_TRUE(m.ok()) << m.status();
  constexpr int64_t n = 1000003;  // not a multiple of anything NCCL chunks by
  std::vector<std::vector<float>> got(workers, std::vector<float>(n));
  std::vector<absl::Status> status(workers);
  std::vector<std::thread> threads;
  for (int r = 0; r < workers; ++r) {
    threads.emplace_back([&, r] {
      std::vector<float> host(n);
      for (int64_t i = 0; i < n; ++i) host[i] = static_cast<float>((r + 1) * (i % 7));
      got[r] = AllReduceOnDevice(**made[r], r, host, &status[r]);
    });
  }
  for (auto& t : threads) t.join();
  const float ranks = static_cast<float>(workers * (workers + 1) / 2);
  for (int r = 0; r < workers; ++r) {
    ASSERT_TRUE(status[r].ok()) << status[r];
    for (int64_t i = 0; i < n; i += 9973) ASSERT_EQ(got[r][i], ranks * (i % 7)) << "worker " << r << " i " << i;
  }
}

// Split gives each group its own NCCL communicator: worker r joins group r % 2, and a device
// all-reduce there sums over that group's members only (one GPU: a group of one).
TEST(Nccl, SplitGroupsAllReduceOnDeviceOverTheirOwnMembers) {
  if (!NcclBuilt()) GTEST_SKIP() << "built without NCCL";
  const int workers = Devices();
  if (workers < 1) GTEST_SKIP() << "needs a GPU";
  auto made = MakeGroup(workers);
  for (auto& m : made) ASSERT_TRUE(m.ok()) << m.status();
  constexpr int64_t n = 4099;
  std::vector<std::vector<float>> got(workers, std::vector<float>(n));
  std::vector<absl::Status> status(workers);
  std::vector<std::thread> threads;
  for (int r = 0; r < workers; ++r) {
    threads.emplace_back([&, r] {
      cudaSetDevice(r);
      auto group = (*made[r])->Split(r % 2, r);
      if (!group.ok()) {
        status[r] = group.status();
        return;
      }
      if (!(*group)->HasDeviceCollectives()) {
        status[r] = absl::InternalError("a group without device collectives");
        return;
      }
      std::vector<float> host(n);
      for (int64_t i = 0; i < n; ++i) host[i] = static_cast<float>((r + 1) * (i % 5));
      got[r] = AllReduceOnDevice(**group, r, host, &status[r]);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < workers; ++r) {
    ASSERT_TRUE(status[r].ok()) << "worker " << r << ": " << status[r];
    float members = 0;  // the sum of (q + 1) over the workers q of r's group
    for (int q = r % 2; q < workers; q += 2) members += static_cast<float>(q + 1);
    for (int64_t i = 0; i < n; i += 97) ASSERT_EQ(got[r][i], members * (i % 5)) << "worker " << r << " i " << i;
  }
}
#endif

TEST(Nccl, HostBackendsHaveNoDeviceCollectives) {
  auto group = MakeInProcessGroup(1);
  EXPECT_FALSE(group[0]->HasDeviceCollectives());
  EXPECT_EQ(group[0]->AllReduceOnDevice(nullptr, 0, nullptr).code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace fg::runtime
