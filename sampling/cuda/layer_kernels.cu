// Layer-wise (LADIES) sampling on a CUDA device: layer_pipeline.h's steps as grid-stride kernels,
// CUB's radix sorts and scans, and the stream-ordered caching allocator, on the calling thread's
// stream.
#include <cub/cub.cuh>

#include "flexgraph/ops/cuda/cuda_util.h"
#include "flexgraph/tensor/device_alloc.h"
#include "sampling/cuda/layer.h"
#include "sampling/cuda/layer_pipeline.h"

namespace fg::sampling::cuda {
namespace {

using ops::cuda::BlocksFor;
using ops::cuda::CurrentStream;
using ops::cuda::kThreads;

template <typename F>
__global__ void __launch_bounds__(kThreads) ForEachKernel(F f, int64_t n) {
  FG_GRID_STRIDE(i, n) { f(i); }
}

// Device memory of n elements of T (at least one) for one call.
template <typename T>
class Scratch {
 public:
  explicit Scratch(int64_t n) : n_(n < 1 ? 1 : n), p_(static_cast<T*>(DeviceAlloc(sizeof(T) * n_))) {}
  ~Scratch() { DeviceFree(p_, sizeof(T) * n_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* get() const { return p_; }

 private:
  int64_t n_;
  T* p_;
};

// layer_pipeline.h's backend on the calling thread's stream. (CUB's 32-bit scans spill registers
// here: the scans run over int64.)
struct CudaBackend {
  cudaStream_t stream = CurrentStream();

  template <typename T>
  Scratch<T> Make(int64_t n) {
    return Scratch<T>(n);
  }
  template <typename F>
  void ForEach(int64_t n, const F& f) {
    if (n <= 0) return;
    ForEachKernel<<<BlocksFor(n), kThreads, 0, stream>>>(f, n);
    FG_CUDA_CHECK_LAUNCH();
  }
  template <typename K, typename V>
  void SortPairs(const K* keys_in, K* keys_out, const V* values_in, V* values_out, int64_t n, int end_bit) {
    if (n <= 0) return;
    size_t bytes = 0;
    FG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in, keys_out, values_in, values_out,
                                                  static_cast<int>(n), 0, end_bit, stream));
    Scratch<char> temp(static_cast<int64_t>(bytes));
    FG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), bytes, keys_in, keys_out, values_in, values_out,
                                                  static_cast<int>(n), 0, end_bit, stream));
  }
  void InclusiveSum(const int64_t* in, int64_t* out, int64_t n) {
    size_t bytes = 0;
    FG_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out, static_cast<int>(n), stream));
    Scratch<char> temp(static_cast<int64_t>(bytes));
    FG_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.get(), bytes, in, out, static_cast<int>(n), stream));
  }
  void ExclusiveSum(const int64_t* in, int64_t* out, int64_t n) {
    size_t bytes = 0;
    FG_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, static_cast<int>(n), stream));
    Scratch<char> temp(static_cast<int64_t>(bytes));
    FG_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.get(), bytes, in, out, static_cast<int>(n), stream));
  }
  template <typename T>
  void Zero(T* p, int64_t n) {
    if (n > 0) DeviceMemset(p, 0, sizeof(T) * n);
  }
  template <typename T>
  std::vector<T> ToHost(const T* p, int64_t n) {
    std::vector<T> host(n);
    if (n > 0) DeviceCopy(host.data(), false, p, true, sizeof(T) * n);
    return host;
  }
  template <typename T>
  void ToDevice(T* p, const std::vector<T>& host) {
    if (!host.empty()) DeviceCopy(p, true, host.data(), false, sizeof(T) * host.size());
  }
};

}  // namespace

void SampleLayerWise(const MatrixView& a, uint64_t seed, int64_t layer_size, const int64_t* row,
                     const int32_t* group, const std::vector<int64_t>& entry_offsets,
                     const std::vector<uint64_t>& streams, std::vector<int64_t>* kept_offsets,
                     std::vector<int32_t>* cols, std::vector<float>* weights) {
  CudaBackend backend;
  RunLayerWise(backend, a, seed, layer_size, row, group, entry_offsets, streams, kept_offsets, cols, weights);
}

}  // namespace fg::sampling::cuda
