// The CUDA backend's device hooks: availability (probed once, never aborting), a caching allocator on
// cudaMalloc, and stream-ordered memset and copies on the calling thread's stream.
//
// Allocator: sizes are rounded to size classes (multiples of 512 B up to 1 MiB, of 2 MiB above);
// a freed block goes to the free list of its (stream, size class) and is reused only by allocations
// of the same class on the same stream, which keeps reuse stream-ordered without events. When
// cudaMalloc fails the cache is released and the allocation retried once. One mutex guards the
// lists; cudaMalloc/cudaFree are called outside it.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/ops/cuda/cuda_util.h"
#include "flexgraph/tensor/device_alloc.h"
#include "flexgraph/tensor/tensor.h"

namespace fg {
namespace {

using ops::cuda::CurrentStream;

struct Probe {
  bool available = false;
  std::string reason;
};

const Probe& GetProbe() {
  static const Probe probe = [] {
    Probe p;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      p.reason = absl::StrCat("no CUDA device: cudaGetDeviceCount returned ", cudaGetErrorName(err),
                              " (", cudaGetErrorString(err), ")");
      (void)cudaGetLastError();  // reset the last-error state for later calls
    } else if (count == 0) {
      p.reason = "no CUDA device: cudaGetDeviceCount found 0 devices";
    } else {
      p.available = true;
    }
    return p;
  }();
  return probe;
}

void RequireCuda(const char* what) {
  FG_CHECK(GetProbe().available) << what << ": " << GetProbe().reason;
}

size_t SizeClass(size_t bytes) {
  constexpr size_t kSmall = 512, kLarge = size_t{2} << 20, kSmallLimit = size_t{1} << 20;
  return bytes <= kSmallLimit ? (bytes + kSmall - 1) / kSmall * kSmall
                              : (bytes + kLarge - 1) / kLarge * kLarge;
}

class CachingAllocator {
 public:
  void* Allocate(size_t bytes) {
    const size_t cls = SizeClass(bytes);
    const cudaStream_t stream = CurrentStream();
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find({stream, cls});
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        stats_.bytes_cached -= cls;
        ++stats_.cache_hits;
        Track(p, cls, stream);
        return p;
      }
    }
    if (const size_t limit = limit_.load(); limit > 0) {
      const DeviceAllocatorStats s = Stats();
      if (s.bytes_in_use + s.bytes_cached + cls > limit) ReleaseCache();  // cached blocks count too
      if (s.bytes_in_use + cls > limit) {
        throw OutOfMemory(absl::StrCat("out of GPU memory: ", cls, " bytes (", cls >> 20,
                                       " MiB) more would exceed the device memory limit of ",
                                       limit >> 20, " MiB (device_memory_gib); ",
                                       s.bytes_in_use >> 20, " MiB in use by tensors"));
      }
    }
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, cls);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      ReleaseCache();
      err = cudaMalloc(&p, cls);
    }
    if (err != cudaSuccess) {
      const DeviceAllocatorStats s = Stats();
      (void)cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      (void)cudaMemGetInfo(&free_bytes, &total_bytes);
      throw OutOfMemory(absl::StrCat("out of GPU memory: cudaMalloc of ", cls, " bytes (",
                                     cls >> 20, " MiB) failed with ", cudaGetErrorName(err), "; ",
                                     s.bytes_in_use >> 20, " MiB in use by tensors, ",
                                     free_bytes >> 20, " MiB free of ", total_bytes >> 20));
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.device_mallocs;
    Track(p, cls, stream);
    return p;
  }

  void Free(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(p);
    FG_CHECK(it != live_.end()) << "DeviceFree of a pointer the allocator does not own";
    const auto [cls, stream] = it->second;
    live_.erase(it);
    stats_.bytes_in_use -= cls;
    stats_.bytes_cached += cls;
    free_[{stream, cls}].push_back(p);
  }

  void ReleaseCache() {
    std::vector<void*> blocks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [key, list] : free_) {
        blocks.insert(blocks.end(), list.begin(), list.end());
        stats_.bytes_cached -= key.second * list.size();
      }
      free_.clear();
    }
    if (blocks.empty()) return;
    // Blocks may still be read by queued work of their stream: wait before returning them.
    FG_CUDA_CHECK(cudaDeviceSynchronize());
    for (void* p : blocks) FG_CUDA_CHECK(cudaFree(p));
  }

  DeviceAllocatorStats Stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  void SetLimit(size_t bytes) { limit_ = bytes; }

 private:
  void Track(void* p, size_t cls, cudaStream_t stream) {
    live_[p] = {cls, stream};
    stats_.bytes_in_use += cls;
    if (stats_.bytes_in_use > stats_.peak_bytes_in_use) {
      stats_.peak_bytes_in_use = stats_.bytes_in_use;
    }
  }

  std::mutex mu_;
  std::map<std::pair<cudaStream_t, size_t>, std::vector<void*>> free_;
  std::unordered_map<void*, std::pair<size_t, cudaStream_t>> live_;
  DeviceAllocatorStats stats_;
  std::atomic<size_t> limit_{0};
};

// Host-to-device copies up to kStageMaxBytes go through a ring of pinned memory: the source is
// copied into the ring, the ring into the device asynchronously, and an event marks when that
// region may be written again. Nothing waits for the stream unless the ring wraps onto a region
// whose copy is still queued. Larger copies wait for their stream (DeviceCopy).
constexpr size_t kStageRingBytes = size_t{64} << 20;
constexpr size_t kStageMaxBytes = size_t{16} << 20;
std::atomic<int64_t> host_syncs{0};

class StagingRing {
 public:
  void Copy(void* dst, const void* src, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (ring_ == nullptr) FG_CUDA_CHECK(cudaHostAlloc(&ring_, kStageRingBytes, cudaHostAllocDefault));
    const size_t need = (bytes + 255) / 256 * 256;
    if (head_ + need > kStageRingBytes) head_ = 0;
    const size_t lo = head_, hi = head_ + need;
    // Regions are queued in ring order: wait for those [lo, hi) overlaps, drop finished ones.
    while (!pending_.empty()) {
      const Region& r = pending_.front();
      if (r.lo < hi && lo < r.hi) {
        host_syncs.fetch_add(1, std::memory_order_relaxed);
        FG_CUDA_CHECK(cudaEventSynchronize(r.done));
      } else {
        const cudaError_t state = cudaEventQuery(r.done);
        if (state == cudaErrorNotReady) {
          (void)cudaGetLastError();
          break;
        }
        FG_CUDA_CHECK(state);
      }
      idle_.push_back(r.done);
      pending_.pop_front();
    }
    char* slot = static_cast<char*>(ring_) + lo;
    std::memcpy(slot, src, bytes);
    const cudaStream_t stream = CurrentStream();
    FG_CUDA_CHECK(cudaMemcpyAsync(dst, slot, bytes, cudaMemcpyHostToDevice, stream));
    cudaEvent_t done = nullptr;
    if (idle_.empty()) {
      FG_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    } else {
      done = idle_.back();
      idle_.pop_back();
    }
    FG_CUDA_CHECK(cudaEventRecord(done, stream));
    pending_.push_back({lo, hi, done});
    head_ = hi;
  }

 private:
  struct Region {
    size_t lo, hi;
    cudaEvent_t done;
  };
  std::mutex mu_;
  void* ring_ = nullptr;
  size_t head_ = 0;
  std::deque<Region> pending_;
  std::vector<cudaEvent_t> idle_;
};

// Never destroyed, like the allocator.
StagingRing& Staging() {
  static StagingRing* r = new StagingRing();
  return *r;
}

// Never destroyed: tensors may be freed during static destruction.
CachingAllocator& Allocator() {
  static CachingAllocator* a = new CachingAllocator();
  return *a;
}

cudaMemcpyKind Kind(bool dst_on_device, bool src_on_device) {
  if (dst_on_device) return src_on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
  return src_on_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost;
}

// The calling thread's copy stream (device-to-host transfers beside its compute stream).
class CopyStream {
 public:
  ~CopyStream() {
    if (stream_ != nullptr) {
      (void)cudaStreamSynchronize(stream_);
      (void)cudaStreamDestroy(stream_);
    }
  }
  cudaStream_t get() {
    if (stream_ == nullptr) FG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    return stream_;
  }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace

bool CudaAvailable() { return GetProbe().available; }
std::string CudaUnavailableReason() { return GetProbe().reason; }
std::string UseCudaDevice(int index) {
  if (!CudaAvailable()) return GetProbe().reason;
  int count = 0;
  (void)cudaGetDeviceCount(&count);
  if (index < 0 || index >= count) {
    return absl::StrCat("cuda:", index, " does not exist: this machine has ", count,
                        " CUDA device", count == 1 ? "" : "s", " (cuda:0 to cuda:", count - 1, ")");
  }
  const cudaError_t err = cudaSetDevice(index);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return absl::StrCat("cudaSetDevice(", index, ") failed: ", cudaGetErrorName(err), " (",
                        cudaGetErrorString(err), ")");
  }
  return "";
}

int CurrentCudaDevice() {
  int index = -1;
  if (CudaAvailable() && cudaGetDevice(&index) != cudaSuccess) {
    (void)cudaGetLastError();
    index = -1;
  }
  return index;
}

int CudaDeviceCount() {
  int count = 0;
  if (CudaAvailable()) (void)cudaGetDeviceCount(&count);
  return count;
}

void* DeviceAlloc(size_t bytes) {
  RequireCuda("DeviceAlloc");
  if (bytes == 0) return nullptr;
  return Allocator().Allocate(bytes);
}

void DeviceFree(void* ptr, size_t) {
  if (ptr != nullptr) Allocator().Free(ptr);
}

void DeviceMemset(void* ptr, int value, size_t bytes) {
  RequireCuda("DeviceMemset");
  if (bytes == 0) return;
  FG_CUDA_CHECK(cudaMemsetAsync(ptr, value, bytes, CurrentStream()));
}

void DeviceCopyAsync(void* dst, bool dst_on_device, const void* src, bool src_on_device,
                     size_t bytes) {
  RequireCuda("DeviceCopy");
  if (bytes == 0) return;
  FG_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, bytes, Kind(dst_on_device, src_on_device), CurrentStream()));
}

void DeviceCopy(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t bytes) {
  RequireCuda("DeviceCopy");
  if (bytes == 0) return;
  if (dst_on_device && src_on_device) {  // stream-ordered: nothing on the host waits
    DeviceCopyAsync(dst, true, src, true, bytes);
    return;
  }
  if (dst_on_device && bytes <= kStageMaxBytes) {  // staged: the source is free on return
    Staging().Copy(dst, src, bytes);
    return;
  }
  DeviceCopyAsync(dst, dst_on_device, src, src_on_device, bytes);
  DeviceStreamSynchronize();
}

void DeviceStreamSynchronize() {
  if (!CudaAvailable()) return;
  host_syncs.fetch_add(1, std::memory_order_relaxed);
  FG_CUDA_CHECK(cudaStreamSynchronize(CurrentStream()));
}

// Without a device (fixed for the process) pinned buffers are plain aligned host memory, so callers
// need no separate code path.
void* PinnedAlloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  if (CudaAvailable()) {
    FG_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  } else {
    p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    FG_CHECK(p != nullptr) << "out of memory allocating " << bytes << " pinned bytes";
  }
  return p;
}

void PinnedFree(void* ptr) {
  if (ptr == nullptr) return;
  if (CudaAvailable()) {
    FG_CUDA_CHECK(cudaFreeHost(ptr));
  } else {
    std::free(ptr);
  }
}

DeviceTransfer StartDeviceToHost(void* dst, const void* src, size_t bytes) {
  RequireCuda("StartDeviceToHost");
  thread_local CopyStream copy;
  cudaEvent_t event = nullptr;
  FG_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  FG_CUDA_CHECK(cudaEventRecord(event, CurrentStream()));  // the source is written up to here
  FG_CUDA_CHECK(cudaStreamWaitEvent(copy.get(), event, 0));
  if (bytes > 0) FG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, copy.get()));
  FG_CUDA_CHECK(cudaEventRecord(event, copy.get()));  // the wait above took the earlier record
  return {event};
}

void FinishDeviceToHost(DeviceTransfer* transfer) {
  if (transfer->event == nullptr) return;
  const auto event = static_cast<cudaEvent_t>(transfer->event);
  transfer->event = nullptr;
  host_syncs.fetch_add(1, std::memory_order_relaxed);
  FG_CUDA_CHECK(cudaEventSynchronize(event));
  FG_CUDA_CHECK(cudaEventDestroy(event));
}

DeviceAllocatorStats GetDeviceAllocatorStats() {
  if (!CudaAvailable()) return {};
  DeviceAllocatorStats s = Allocator().Stats();
  s.host_syncs = host_syncs.load(std::memory_order_relaxed);
  return s;
}

void DeviceReleaseCache() {
  if (CudaAvailable()) Allocator().ReleaseCache();
}

void SetDeviceMemoryLimit(size_t bytes) {
  if (CudaAvailable()) Allocator().SetLimit(bytes);
}

}  // namespace fg
