// Device memory hooks used by Storage. Without the CUDA backend they fail with a clear message.
// With it (ops/cuda), they go through the caching allocator. Thread-safe.
#pragma once

#include <cstddef>

namespace fg {

// True when the CUDA backend is compiled in and at least one device is usable.
bool CudaAvailable();
void* DeviceAlloc(size_t bytes);
void DeviceFree(void* ptr, size_t bytes);
void DeviceMemset(void* ptr, int value, size_t bytes);
void DeviceCopy(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t bytes);

}  // namespace fg
