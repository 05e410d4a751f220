// Device hooks for builds without the CUDA backend.
#include <cstdlib>

#include "flexgraph/base/logging.h"
#include "flexgraph/tensor/device_alloc.h"

namespace fg {
namespace {
constexpr char kNoBackend[] =
    "this build of FlexGraph has no CUDA backend (configure with -DFLEXGRAPH_CUDA=ON)";
}  // namespace

bool CudaAvailable() { return false; }
std::string CudaUnavailableReason() { return kNoBackend; }
std::string UseCudaDevice(int) { return kNoBackend; }
int CurrentCudaDevice() { return -1; }
int CudaDeviceCount() { return 0; }
void* DeviceAlloc(size_t) {
  FG_CHECK(false) << kNoBackend;
  return nullptr;
}
void DeviceFree(void*, size_t) {}
void DeviceMemset(void*, int, size_t) { FG_CHECK(false) << kNoBackend; }
void DeviceCopy(void*, bool, const void*, bool, size_t) { FG_CHECK(false) << kNoBackend; }
void DeviceCopyAsync(void*, bool, const void*, bool, size_t) { FG_CHECK(false) << kNoBackend; }
void DeviceStreamSynchronize() {}
void* PinnedAlloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  FG_CHECK(p != nullptr) << "out of memory allocating " << bytes << " pinned bytes";
  return p;
}
void PinnedFree(void* ptr) { std::free(ptr); }
DeviceAllocatorStats GetDeviceAllocatorStats() { return {}; }
void DeviceReleaseCache() {}
void SetDeviceMemoryLimit(size_t) {}
DeviceTransfer StartDeviceToHost(void*, const void*, size_t) {
  FG_CHECK(false) << kNoBackend;
  return {};
}
void FinishDeviceToHost(DeviceTransfer*) {}

}  // namespace fg
