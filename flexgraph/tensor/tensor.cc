#include "flexgraph/tensor/tensor.h"

#include <sys/mman.h>

#include <sys/resource.h>
#include <unistd.h>

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <list>
#include <map>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/tensor/device_alloc.h"

namespace fg {

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
  }
  return 0;
}

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float32";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
  }
  return "?";
}

const char* DeviceName(Device d) { return d == Device::kCpu ? "cpu" : "cuda"; }

std::string ShapeToString(const Shape& s) { return absl::StrCat("[", absl::StrJoin(s, ", "), "]"); }

namespace {

// Freed CPU blocks of at least kCacheMin bytes, reused by later allocations of the same size or up
// to a quarter less; a mapped block (kMapMin and more) serves requests down to half its size whole,
// and a smaller one grows to a request (training allocates the same shapes every epoch,
// mini-batches similar ones; fresh pages cost page faults and zeroing: a third of a GCN epoch on
// RMAT-22 when its working set outgrew a 4 GiB cache; on a virtual machine, whose host backs fresh
// pages lazily, 0.4 to 1.7 GB/s). Larger blocks are never cut: a full-graph evaluation's
// blocks wait whole through the mini-batch steps between evaluations. The cache adds at most an
// eighth of the process's peak, or its largest block where that is more: a fresh block first
// sends back the least recently freed cached blocks until the blocks held (in use and cached) fit
// under that budget (Budget(); a worker's many differently sized exchange buffers left 0.5 GiB of
// unusable cached blocks on top of its peak; with no slack at all, a mini-batch step that outgrew
// a cached block evicted the blocks the rest of the step needed). At most max_ bytes are kept,
// half of the machine's memory and at least 4 GiB. Thread-safe.
class CpuBlockCache {
  struct Block {
    size_t size;
    void* ptr;
  };
  using SizeIndex = std::multimap<size_t, std::list<Block>::iterator>;

 public:
  static constexpr size_t kCacheMin = size_t{64} << 10;
  static constexpr size_t kMapMin = size_t{1} << 20;
  static constexpr size_t kPage = 4096;

  CpuBlockCache() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) max_ = std::max(max_, static_cast<size_t>(pages) * page / 2);
    struct rlimit limit;
    if (getrlimit(RLIMIT_DATA, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) data_limit_ = limit.rlim_cur;
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) as_limit_ = limit.rlim_cur;
  }

  // A block of at least `rounded` bytes aligned to `align`; *size receives its size, which Free
  // must be given.
  void* Allocate(size_t rounded, size_t align, size_t* size) {
    *size = rounded;
    if (rounded < kCacheMin) return std::aligned_alloc(align, rounded);
    std::lock_guard<std::mutex> lock(mu_);
    // Blocks of 4 MiB and more are 2 MiB aligned, smaller ones 64 B: a larger block fits. A mapped
    // block up to twice the request is taken whole (its pages are resident already), a heap block
    // up to a quarter more.
    auto it = by_size_.lower_bound(rounded);
    const size_t slack = rounded >= kMapMin ? rounded : rounded / 4;
    if (it != by_size_.end() && it->first <= rounded + slack) return TakeCached(it, it->second->ptr, it->first, size);
    // Otherwise a mapped request grows the largest smaller mapped block instead of faulting in a
    // whole fresh one: in place or moved, mremap keeps its pages, and only the growth is fresh.
    // Larger blocks stay whole for the requests of their size (a full-graph evaluation's, between
    // mini-batch epochs): cutting them would fault them in again at the next such request.
    if (rounded >= kMapMin && it != by_size_.begin() && std::prev(it)->first >= std::max(kMapMin, rounded / 2)) {
      const size_t want = (rounded + kPage - 1) / kPage * kPage;
      auto smaller = std::prev(it);
      const size_t have = smaller->first;
      void* p = FitsUnderLimits(want - have) ? mremap(smaller->second->ptr, have, want, MREMAP_MAYMOVE) : MAP_FAILED;
      if (p != MAP_FAILED && reinterpret_cast<uintptr_t>(p) % align == 0) {
        TakeCached(smaller, p, want, size);
        fresh_bytes_ += want - have;
        while (cached_ > 0 && in_use_ + cached_ > std::max(Budget(), in_use_)) EvictOldest();  // as for a fresh block
        return p;
      }
      if (p != MAP_FAILED) {  // moved off the alignment: released
        munmap(p, want);
        Forget(smaller);
      }
    }
    // A fresh block: cached blocks go first where keeping them would lift the blocks held (in use
    // and cached) above the budget, so the cache adds at most an eighth to the peak.
    const size_t budget = std::max(Budget(), in_use_ + rounded);
    while (cached_ > 0 && in_use_ + cached_ + rounded > budget) EvictOldest();
    if (!FitsUnderLimits(rounded)) {
      while (cached_ > 0) EvictOldest();
      if (!FitsUnderLimits(rounded)) return nullptr;
    }
    void* p = rounded >= kMapMin ? MapBlock(rounded, align) : std::aligned_alloc(align, rounded);
    if (p == nullptr) return nullptr;
    ++fresh_;
    fresh_bytes_ += rounded;
    TakeInUse(rounded);
    return p;
  }

  // Under a per-process data or address-space limit (prlimit, ulimit -d / -v), a fresh block must
  // leave room for what the process maps outside tensors: OpenBLAS maps a 128 MiB buffer per
  // concurrent GEMM and retries forever when that fails, so the limit is met here first, as a
  // clean OutOfMemory. One read of /proc/self/statm per fresh block of 64 KiB or more, only under
  // a limit.
  bool FitsUnderLimits(size_t bytes) const {
    if (data_limit_ == 0 && as_limit_ == 0) return true;
    unsigned long vm_pages = 0, resident = 0, shared = 0, text = 0, lib = 0, data_pages = 0;
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return true;
    const int n = std::fscanf(f, "%lu %lu %lu %lu %lu %lu", &vm_pages, &resident, &shared, &text, &lib,
                              &data_pages);
    std::fclose(f);
    if (n != 6) return true;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t reserve = static_cast<size_t>(omp_get_max_threads()) * (size_t{128} << 20);
    auto fits = [&](size_t limit, unsigned long pages) {
      return limit == 0 || pages * page + bytes + reserve <= limit;
    };
    return fits(data_limit_, data_pages) && fits(as_limit_, vm_pages);
  }

  void Free(void* p, size_t size) {
    if (p == nullptr) return;
    if (size < kCacheMin) return std::free(p);
    std::lock_guard<std::mutex> lock(mu_);
    in_use_ -= size;
    if (size > max_) return Release(p, size);
    lru_.push_back({size, p});
    by_size_.emplace(size, std::prev(lru_.end()));
    cached_ += size;
    while (cached_ > max_) EvictOldest();  // the least recently freed go
  }

  void SetAlternatingPhases(bool on) {
    std::lock_guard<std::mutex> lock(mu_);
    alternating_phases_ = on;
  }

  void MakeRoom(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    while (cached_ > 0 && in_use_ + cached_ + bytes > Budget()) EvictOldest();
  }

  CpuAllocatorStats Stats() {
    std::lock_guard<std::mutex> lock(mu_);
    CpuAllocatorStats s;
    s.bytes_in_use = in_use_;
    s.bytes_cached = cached_;
    s.peak_bytes_in_use = peak_in_use_;
    s.largest_block = largest_in_use_;
    s.fresh_blocks = fresh_;
    s.fresh_bytes = fresh_bytes_;
    s.cache_hits = hits_;
    return s;
  }

 private:
  // Removes cached block `at` from the cache (its memory is the caller's).
  void Forget(SizeIndex::iterator at) {
    cached_ -= at->first;
    lru_.erase(at->second);
    by_size_.erase(at);
  }
  // Removes cached block `at` (now `bytes` at `p`) and hands it out.
  void* TakeCached(SizeIndex::iterator at, void* p, size_t bytes, size_t* size) {
    Forget(at);
    *size = bytes;
    ++hits_;
    TakeInUse(bytes);
    return p;
  }
  // The most the blocks held (in use and cached) may reach before a fresh block: the peak in use,
  // plus an eighth of it for blocks that the next step of a varying workload (mini-batches) takes
  // back — or, for alternating phases (SetHostCacheForAlternatingPhases), the largest block ever
  // in use where that is more: mini-batch steps and a full-graph evaluation of blocks many times
  // theirs hold more at once than either alone, and within an eighth they evicted each other's
  // blocks every epoch (a gigabyte faulted in again per evaluation of RMAT-20). Full-graph
  // training repeats one phase, and its workers' largest blocks (features, exchange buffers) would
  // stay cached above the peak for nothing (410 MiB of RSS per RMAT-20 worker). Requires mu_.
  size_t Budget() const {
    return peak_in_use_ + std::max(peak_in_use_ / 8, alternating_phases_ ? largest_in_use_ : size_t{0});
  }
  void TakeInUse(size_t size) {
    in_use_ += size;
    peak_in_use_ = std::max(peak_in_use_, in_use_);
    largest_in_use_ = std::max(largest_in_use_, size);
  }
  // Returns the least recently freed cached block to the system. Requires mu_ and a cached block.
  void EvictOldest() {
    const Block old = lru_.front();
    auto [lo, hi] = by_size_.equal_range(old.size);
    for (auto it = lo; it != hi; ++it) {
      if (it->second == lru_.begin()) {
        by_size_.erase(it);
        break;
      }
    }
    lru_.pop_front();
    cached_ -= old.size;
    Release(old.ptr, old.size);
  }
  // Blocks of kMapMin bytes and more are mapped for themselves: released, they leave the process
  // at once, where in the heap they would stay resident around the blocks still in use.
  static void* MapBlock(size_t bytes, size_t align) {
    const size_t extra = align > 4096 ? align : 0;
    void* m = mmap(nullptr, bytes + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    char* base = static_cast<char*>(m);
    char* p = base;
    if (extra > 0) {  // trim to `align`
      p = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(base) + align - 1) / align * align);
      if (p > base) munmap(base, p - base);
      if (base + extra > p) munmap(p + bytes, base + extra - p);
      madvise(p, bytes, MADV_HUGEPAGE);
    }
    return p;
  }
  static void Release(void* p, size_t size) {
    if (size >= kMapMin) {
      munmap(p, size);
    } else {
      std::free(p);
    }
  }

 private:
  std::mutex mu_;
  std::list<Block> lru_;  // least recently freed first
  SizeIndex by_size_;
  size_t cached_ = 0;
  size_t in_use_ = 0, peak_in_use_ = 0, largest_in_use_ = 0;
  bool alternating_phases_ = false;
  int64_t fresh_ = 0, hits_ = 0;
  size_t fresh_bytes_ = 0;
  size_t max_ = size_t{4} << 30;
  size_t data_limit_ = 0, as_limit_ = 0;  // per-process limits in bytes; 0: none
};

CpuBlockCache& Cache() {
  static auto* cache = new CpuBlockCache();  // never destroyed: storages may outlive statics
  return *cache;
}

// Large buffers are 2 MiB aligned and advised onto transparent huge pages: random row gathers
// (SpMM) then miss the TLB far less often.
size_t CpuAlignment(size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  return bytes >= 2 * kHuge ? kHuge : 64;
}
// The bytes allocated for `bytes`: from 64 KiB on, rounded up to a size class (eight per power of
// two, at most 12.5% more, never touched beyond `bytes`), so that buffers of similar sizes share
// cached blocks; then to the alignment.
size_t CpuRounded(size_t bytes) {
  const size_t align = CpuAlignment(bytes);
  if (bytes >= (size_t{64} << 10)) {
    const size_t step = (size_t{1} << (63 - __builtin_clzll(bytes))) / 8;
    bytes = (bytes + step - 1) / step * step;
  }
  return (bytes + align - 1) / align * align;
}

}  // namespace

CpuAllocatorStats GetCpuAllocatorStats() { return Cache().Stats(); }
void MakeRoomForHostBuffers(size_t bytes) { Cache().MakeRoom(bytes); }
void SetHostCacheForAlternatingPhases(bool on) { Cache().SetAlternatingPhases(on); }

OutOfMemory::OutOfMemory(size_t bytes) {
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  message_ = "out of memory: allocating " + std::to_string(bytes) + " bytes (" +
             std::to_string(bytes >> 20) + " MiB; about " +
             std::to_string(pages > 0 && page > 0 ? (pages * page) >> 20 : 0) +
             " MiB of memory are free";
  // A per-process limit is the likelier cause: name it.
  for (auto [resource, name] : {std::pair{RLIMIT_DATA, "data"}, std::pair{RLIMIT_AS, "address space"}}) {
    struct rlimit limit;
    if (getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      message_ += std::string(", and this process's ") + name + " limit is " +
                  std::to_string(limit.rlim_cur >> 20) + " MiB";
    }
  }
  message_ += ")";
}

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (device == Device::kCpu) {
    const size_t rounded = CpuRounded(bytes);
    data_ = rounded == 0 ? nullptr : Cache().Allocate(rounded, CpuAlignment(bytes), &capacity_);
    if (rounded != 0 && data_ == nullptr) throw OutOfMemory(bytes);
  } else {
    data_ = DeviceAlloc(bytes);
  }
}

Storage::Storage(void* data, size_t bytes, std::function<void()> release)
    : data_(data), bytes_(bytes), device_(Device::kCpu), release_(std::move(release)) {
  FG_CHECK(release_ != nullptr) << "a borrowed storage needs a release function";
}

Storage::~Storage() {
  if (release_ != nullptr) {
    release_();
  } else if (device_ == Device::kCpu) {
    Cache().Free(data_, capacity_);
  } else {
    DeviceFree(data_, bytes_);
  }
}

Tensor Tensor::Empty(const Shape& shape, DType dtype, Device device) {
  FG_CHECK(shape.size() <= 3) << "tensors have rank <= 3, got " << ShapeToString(shape);
  Tensor t;
  t.shape_ = shape;
  t.numel_ = 1;
  for (int64_t d : shape) FG_CHECK(d >= 0) << "negative dimension in " << ShapeToString(shape);
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    t.numel_ = 0;  // empty, however large the other dimensions
  } else {
    for (int64_t d : shape) {
      FG_CHECK(!__builtin_mul_overflow(t.numel_, d, &t.numel_))
          << "tensor shape " << ShapeToString(shape) << " has more than 2^63 elements";
    }
  }
  t.dtype_ = dtype;
  t.device_ = device;
  try {
    t.storage_ = std::make_shared<Storage>(t.numel_ * DTypeSize(dtype), device);
  } catch (const OutOfMemory& e) {  // name the tensor the memory could not hold
    throw OutOfMemory(std::string(e.what()) + ", allocating a " + DTypeName(dtype) + " tensor " +
                      ShapeToString(shape) + " on " + DeviceName(device));
  }
  return t;
}

Tensor Tensor::Borrow(void* data, const Shape& shape, DType dtype, std::function<void()> release) {
  FG_CHECK(shape.size() <= 3) << "tensors have rank <= 3, got " << ShapeToString(shape);
  Tensor t;
  t.shape_ = shape;
  t.numel_ = 1;
  for (int64_t d : shape) {
    FG_CHECK(d >= 0) << "negative dimension in " << ShapeToString(shape);
    t.numel_ *= d;
  }
  t.dtype_ = dtype;
  t.device_ = Device::kCpu;
  t.storage_ = std::make_shared<Storage>(data, t.numel_ * DTypeSize(dtype), std::move(release));
  return t;
}

Tensor Tensor::Zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = Empty(shape, dtype, device);
  t.SetZero();
  return t;
}

Tensor Tensor::Full(const Shape& shape, float value) {
  Tensor t = Empty(shape);
  t.Fill(value);
  return t;
}

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values, const Shape& shape) {
  Tensor t = Empty(shape, DTypeOf<T>());
  FG_CHECK(static_cast<int64_t>(values.size()) == t.numel())
      << values.size() << " values for shape " << ShapeToString(shape);
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * sizeof(T));
  return t;
}
template Tensor Tensor::FromVector<float>(const std::vector<float>&, const Shape&);
template Tensor Tensor::FromVector<int32_t>(const std::vector<int32_t>&, const Shape&);
template Tensor Tensor::FromVector<int64_t>(const std::vector<int64_t>&, const Shape&);

void* Tensor::raw() const { return storage_ ? storage_->data() : nullptr; }

template <typename T>
T* Tensor::data() const {
  FG_CHECK(defined()) << "data() of an undefined tensor";
  FG_CHECK(dtype_ == DTypeOf<T>()) << "tensor is " << DTypeName(dtype_) << ", accessed as "
                                   << DTypeName(DTypeOf<T>());
  return static_cast<T*>(storage_->data());
}
template float* Tensor::data<float>() const;
template int32_t* Tensor::data<int32_t>() const;
template int64_t* Tensor::data<int64_t>() const;

Tensor Tensor::Reshape(const Shape& shape) const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  FG_CHECK(n == numel_) << "cannot reshape " << ShapeString() << " to " << ShapeToString(shape);
  FG_CHECK(shape.size() <= 3) << "tensors have rank <= 3";
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::FirstRows(int64_t n) const {
  FG_CHECK(rank() >= 1 && n >= 0 && n <= rows()) << "FirstRows: " << n << " rows of " << ShapeString();
  Tensor t = *this;
  t.shape_[0] = n;
  t.numel_ = rows() == 0 ? 0 : numel_ / rows() * n;
  return t;
}

Tensor Tensor::RowsCopy(int64_t lo, int64_t n) const {
  FG_CHECK(rank() >= 1 && lo >= 0 && n >= 0 && lo + n <= rows())
      << "RowsCopy: rows [" << lo << ", " << lo + n << ") of " << ShapeString();
  Shape shape = shape_;
  shape[0] = n;
  Tensor out = Empty(shape, dtype_, device_);
  const size_t row_bytes = rows() > 0 ? nbytes() / rows() : 0;
  CopyBytes(out.raw(), device_, static_cast<const char*>(raw()) + lo * row_bytes, device_, n * row_bytes);
  return out;
}

Tensor Tensor::Clone() const {
  if (!defined()) return Tensor();
  Tensor t = Empty(shape_, dtype_, device_);
  CopyBytes(t.raw(), device_, raw(), device_, nbytes());
  return t;
}

Tensor Tensor::To(Device device) const {
  if (device == device_ || !defined()) return *this;
  Tensor t = Empty(shape_, dtype_, device);
  CopyBytes(t.raw(), device, raw(), device_, nbytes());
  return t;
}

template <typename T>
std::vector<T> Tensor::ToVector() const {
  Tensor host = To(Device::kCpu);
  const T* p = host.data<T>();
  return std::vector<T>(p, p + numel_);
}
template std::vector<float> Tensor::ToVector<float>() const;
template std::vector<int32_t> Tensor::ToVector<int32_t>() const;
template std::vector<int64_t> Tensor::ToVector<int64_t>() const;

void Tensor::Fill(float value) {
  FG_CHECK(device_ == Device::kCpu) << "Fill on " << DeviceName(device_);
  float* p = f32();
  for (int64_t i = 0; i < numel_; ++i) p[i] = value;
}

void Tensor::SetZero() {
  if (numel_ == 0) return;
  if (device_ == Device::kCpu) {
    std::memset(raw(), 0, nbytes());
  } else {
    DeviceMemset(raw(), 0, nbytes());
  }
}

float Tensor::Item() const {
  FG_CHECK(numel_ == 1) << "Item() of a tensor with shape " << ShapeString();
  return To(Device::kCpu).f32()[0];
}

void CopyBytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0) return;
  if (dst_device == Device::kCpu && src_device == Device::kCpu) {
    std::memcpy(dst, src, bytes);
  } else {
    DeviceCopy(dst, dst_device == Device::kCuda, src, src_device == Device::kCuda, bytes);
  }
}

}  // namespace fg
