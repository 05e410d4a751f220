// Device hooks for builds without the CUDA backend.
#include "flexgraph/base/logging.h"
#include "flexgraph/tensor/device_alloc.h"

namespace fg {

bool CudaAvailable() { return false; }
void* DeviceAlloc(size_t) {
  FG_CHECK(false) << "this build of FlexGraph has no CUDA backend (configure with -DFLEXGRAPH_CUDA=ON)";
  return nullptr;
}
void DeviceFree(void*, size_t) {}
void DeviceMemset(void*, int, size_t) { FG_CHECK(false) << "no CUDA backend"; }
void DeviceCopy(void*, bool, const void*, bool, size_t) { FG_CHECK(false) << "no CUDA backend"; }

}  // namespace fg
