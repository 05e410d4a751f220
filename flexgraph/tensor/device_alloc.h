// Device memory hooks used by Storage, plus the CUDA backend's availability, allocator statistics,
// pinned host buffers and stream-ordered copies. Without the CUDA backend (tensor/
// device_alloc_cpu_only.cc) CudaAvailable() is false, allocation and copies abort with a clear
// message, and pinned buffers are ordinary aligned host memory. With it (ops/cuda/device_alloc.cc)
// device memory goes through a caching allocator on cudaMalloc. Thread-safe.
//
//   if (!CudaAvailable()) return absl::FailedPreconditionError(CudaUnavailableReason());
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fg {

// True when the CUDA backend is compiled in and at least one device is usable. Never aborts: any
// error of cudaGetDeviceCount (no driver, no device) means false.
bool CudaAvailable();
// Why CudaAvailable() is false, for users ("no CUDA device: cudaGetDeviceCount returned
// cudaErrorNoDevice (no CUDA-capable device is detected)"); empty when it is true.
std::string CudaUnavailableReason();
// Makes CUDA device `index` the calling thread's device; returns why not ("" on success).
std::string UseCudaDevice(int index);
// The calling thread's CUDA device (UseCudaDevice's index; 0 where none was chosen), -1 without
// a usable device. A thread that works for another passes it on: UseCudaDevice(CurrentCudaDevice()).
int CurrentCudaDevice();
// The number of usable CUDA devices (0 without any).
int CudaDeviceCount();

// Device memory of `bytes` (nullptr for 0), from the caching allocator; aborts with the reason when
// no device is usable or memory is exhausted. Blocks are reused by later allocations on the same
// stream only, so stream-ordered reuse is safe.
void* DeviceAlloc(size_t bytes);
void DeviceFree(void* ptr, size_t bytes);
// Stream-ordered fill on the calling thread's stream.
void DeviceMemset(void* ptr, int value, size_t bytes);
// Copies in order after the calling thread's earlier work. A host source may be reused at once; a
// host destination is complete on return (the host waits for the stream). Device-to-device and
// host-to-device copies of up to 16 MiB (staged through pinned memory) return without waiting.
void DeviceCopy(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t bytes);

// Overlapping transfers with other work: copy between device memory and a pinned host buffer on the
// calling thread's stream without waiting, do other work (e.g. post network sends), then
// DeviceStreamSynchronize() before touching the host side.
void DeviceCopyAsync(void* dst, bool dst_on_device, const void* src, bool src_on_device,
                     size_t bytes);
void DeviceStreamSynchronize();
// A device-to-host copy beside the calling thread's stream: enqueued on a copy stream of the
// thread, it begins once the thread's stream has reached this point, and StartDeviceToHost returns
// at once, so kernels enqueued afterwards run while it moves. The host side is complete when
// FinishDeviceToHost returns (a host wait; idempotent). `dst` should be pinned; the source must
// stay allocated and unchanged until then.
struct DeviceTransfer {
  void* event = nullptr;  // a cudaEvent_t; null once finished
};
DeviceTransfer StartDeviceToHost(void* dst, const void* src, size_t bytes);
void FinishDeviceToHost(DeviceTransfer* transfer);
// Page-locked host memory (cudaHostAlloc) for DeviceCopyAsync; plain aligned memory without CUDA.
void* PinnedAlloc(size_t bytes);
void PinnedFree(void* ptr);

struct DeviceAllocatorStats {
  size_t bytes_in_use = 0;       // held by live tensors (rounded to size classes)
  size_t bytes_cached = 0;       // free blocks kept for reuse
  size_t peak_bytes_in_use = 0;
  int64_t device_mallocs = 0;    // cudaMalloc calls
  int64_t cache_hits = 0;        // allocations served from the cache
  int64_t host_syncs = 0;        // times the host waited for a stream (device-to-host reads too)
};
DeviceAllocatorStats GetDeviceAllocatorStats();
// Returns every cached free block to the driver (cudaFree).
void DeviceReleaseCache();
// Caps the bytes live tensors may hold on the device (0: no cap, the default); an allocation
// beyond it fails as cudaMalloc does when the device is full (OutOfMemory naming the cap).
void SetDeviceMemoryLimit(size_t bytes);

}  // namespace fg
