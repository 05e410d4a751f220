// Tensor: a dense, contiguous, row-major array of rank 0..3 with a dtype (float32, int32, int64) and a
// device tag (CPU, CUDA). Storage is reference-counted and shared by copies and Reshape(); Clone()
// copies. CPU storage is 64-byte aligned. Thread-compatible: concurrent reads are safe, concurrent
// writes to the same storage need external synchronisation.
//
//   Tensor x = Tensor::Zeros({n, d});
//   float* row = x.f32() + i * x.dim(1);
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace fg {

enum class DType { kFloat32, kInt32, kInt64 };
enum class Device { kCpu, kCuda };

size_t DTypeSize(DType t);
const char* DTypeName(DType t);
const char* DeviceName(Device d);

template <typename T>
constexpr DType DTypeOf();
template <>
constexpr DType DTypeOf<float>() { return DType::kFloat32; }
template <>
constexpr DType DTypeOf<int32_t>() { return DType::kInt32; }
template <>
constexpr DType DTypeOf<int64_t>() { return DType::kInt64; }

using Shape = std::vector<int64_t>;
std::string ShapeToString(const Shape& s);

// A host or GPU allocation that cannot be satisfied. Thrown (outside parallel regions) instead of
// aborting, so that a command reports it and exits with an error; what() names the bytes, the
// memory left and, from Tensor::Empty, the tensor's dtype, shape and device.
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(size_t bytes);
  // A failure described by the allocator itself (device memory).
  explicit OutOfMemory(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// The host block cache's counters (bytes of blocks of 64 KiB and more, at their rounded sizes).
struct CpuAllocatorStats {
  size_t bytes_in_use = 0;       // held by live storages
  size_t bytes_cached = 0;       // free blocks kept for reuse
  size_t peak_bytes_in_use = 0;
  size_t largest_block = 0;      // the largest block ever in use
  int64_t fresh_blocks = 0;      // blocks taken from the system
  size_t fresh_bytes = 0;        // bytes taken from the system (fresh blocks and growths)
  int64_t cache_hits = 0;        // allocations served from the cache
};
CpuAllocatorStats GetCpuAllocatorStats();
// Makes room for `bytes` of buffers outside tensors (an exchange's messages) under the cache's
// budget (the most host tensors ever in use, plus an eighth of it or, for alternating phases,
// their largest block): cached
// blocks are returned to the system until the blocks held plus `bytes` fit, so that the buffers
// reuse memory the cache would have kept instead of adding to the peak.
void MakeRoomForHostBuffers(size_t bytes);
// For a process whose work alternates phases of widely different block sizes (mini-batch steps
// and full-graph evaluations): the host cache may keep up to the largest block ever in use beside
// the peak (instead of an eighth of the peak), so that neither phase evicts the other's blocks.
// Off by default; process-wide.
void SetHostCacheForAlternatingPhases(bool on);

// Raw memory on one device. Allocation goes through the device's allocator; a host allocation
// that fails throws OutOfMemory.
class Storage {
 public:
  Storage(size_t bytes, Device device);
  // Host memory owned elsewhere (a NumPy array): never freed here; `release` runs once the
  // storage dies (it lets the owner go).
  Storage(void* data, size_t bytes, std::function<void()> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  size_t capacity_ = 0;  // CPU: the bytes of the block holding the data (at least bytes_)
  Device device_;
  std::function<void()> release_;  // set for borrowed memory
};

class Tensor {
 public:
  Tensor() = default;  // undefined tensor
  static Tensor Empty(const Shape& shape, DType dtype = DType::kFloat32,
                      Device device = Device::kCpu);
  static Tensor Zeros(const Shape& shape, DType dtype = DType::kFloat32,
                      Device device = Device::kCpu);
  static Tensor Full(const Shape& shape, float value);
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, const Shape& shape);
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector(values, {static_cast<int64_t>(values.size())});
  }

  // A host tensor over `data` (contiguous, row-major, as aligned as its owner made it) without a
  // copy; `release` runs when the last tensor sharing it dies. Writes go to the owner's memory.
  //
  //   Tensor x = Tensor::Borrow(array.data(), {n, d}, DType::kFloat32, [keep = array] {});
  static Tensor Borrow(void* data, const Shape& shape, DType dtype, std::function<void()> release);

  bool defined() const { return storage_ != nullptr; }
  // True when no other tensor shares this storage: its holder may write over it (autograd reuses
  // a gradient nobody else holds as the next gradient's buffer).
  bool sole_owner() const { return storage_ != nullptr && storage_.use_count() == 1; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[i < 0 ? i + rank() : i]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return numel_ * DTypeSize(dtype_); }
  // Rows and row width when viewed as a matrix [dim(0), numel/dim(0)].
  int64_t rows() const { return rank() == 0 ? 1 : shape_[0]; }
  int64_t row_width() const {
    int64_t w = 1;
    for (size_t i = 1; i < shape_.size(); ++i) w *= shape_[i];
    return w;
  }
  std::string ShapeString() const { return ShapeToString(shape_); }

  template <typename T>
  T* data() const;
  float* f32() const { return data<float>(); }
  int32_t* i32() const { return data<int32_t>(); }
  int64_t* i64() const { return data<int64_t>(); }
  void* raw() const;

  // Same storage, new shape (numel must match).
  Tensor Reshape(const Shape& shape) const;
  Tensor Clone() const;
  // A copy of rows [lo, lo + n) (along the first dimension), on the same device.
  Tensor RowsCopy(int64_t lo, int64_t n) const;
  // Rows [0, n) without a copy: a view sharing this tensor's storage (so neither is a sole owner).
  Tensor FirstRows(int64_t n) const;
  // Copies to `device` (a no-op view when already there).
  Tensor To(Device device) const;
  template <typename T>
  std::vector<T> ToVector() const;
  // Fills every element with `value` (float tensors) in place.
  void Fill(float value);
  void SetZero();
  // Value of a single-element float tensor.
  float Item() const;

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::kFloat32;
  Device device_ = Device::kCpu;
};

// Copies `bytes` between storages of any devices (CUDA copies need the CUDA backend).
void CopyBytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);

}  // namespace fg
