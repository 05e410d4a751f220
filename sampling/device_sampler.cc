#include "sampling/device_sampler.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/tensor/device_alloc.h"
#include "sampling/layer_pick.h"
#include "sampling/pick.h"
#ifdef FLEXGRAPH_HAVE_CUDA
#include "flexgraph/ops/cuda/cuda_util.h"
#include "sampling/cuda/layer.h"
#include "sampling/cuda/rows.h"
#endif

namespace fg::sampling {
namespace {

// A device copy of n elements of `data` (undefined for null data).
template <typename T>
Tensor ToDevice(const T* data, int64_t n, DType dtype) {
  if (data == nullptr) return Tensor();
  Tensor t = Tensor::Empty({n}, dtype, Device::kCuda);
  DeviceCopy(t.raw(), true, data, false, sizeof(T) * n);
  return t;
}

#ifdef FLEXGRAPH_HAVE_CUDA
// The stream of all sampling on the calling thread's device, for the process's life. Sampling runs
// on a thread of its own per bulk (runtime/train/minibatch.h): under one stream its temporary blocks are
// cached and reused whichever thread samples, where each thread's own stream would leave them
// behind when it ends.
cudaStream_t SamplingStream() {
  static std::mutex mu;
  static std::map<int, cudaStream_t> streams;
  std::lock_guard<std::mutex> lock(mu);
  cudaStream_t& s = streams[CurrentCudaDevice()];
  if (s == nullptr) FG_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}
#endif

// A tensor's elements as T (null: undefined or empty).
template <typename T>
T* Elements(const Tensor& t) {
  return t.defined() && t.numel() > 0 ? static_cast<T*>(t.raw()) : nullptr;
}

}  // namespace

MatrixView ViewOf(const NeighbourhoodMatrix& a) {
  MatrixView v;
  v.row_ptr = a.csr().row_ptr();
  v.col = a.csr().col();
  v.weights = a.weights();
  v.own_entry = a.own_entries();
  v.keys = a.keys();
  v.row_of = a.row_of();
  v.first_root = a.first_root();
  v.num_roots = a.num_roots();
  v.num_vertices = a.num_vertices();
  return v;
}

std::vector<double> RowWeightSums(const NeighbourhoodMatrix& a) {
  const float* w = a.weights();
  if (w == nullptr) return {};
  const int64_t* row_ptr = a.csr().row_ptr();
  const int32_t* own = a.own_entries();
  std::vector<double> sums(a.csr().num_rows);
  ParallelFor(0, a.csr().num_rows, [&](int64_t r) {
    const int64_t d = row_ptr[r + 1] - row_ptr[r];
    double full = 0.0;
    for (int64_t t = 0; t < d; ++t) full = AddRounded(full, w[row_ptr[r] + StoredEntry(t, own != nullptr ? own[r] : -1)]);
    sums[r] = full;
  });
  return sums;
}

struct DeviceSampler::Matrix {
  Tensor row_ptr, col, weights, own_entry, keys, row_of, row_sums;
  MatrixView view;  // of the device copies
  int64_t bytes() const {
    int64_t b = 0;
    for (const Tensor* t : {&row_ptr, &col, &weights, &own_entry, &keys, &row_of, &row_sums}) {
      b += t->defined() ? t->nbytes() : 0;
    }
    return b;
  }
};

DeviceSampler::~DeviceSampler() = default;

absl::StatusOr<std::unique_ptr<DeviceSampler>> DeviceSampler::Create(
    const std::vector<const NeighbourhoodMatrix*>& layers, const SamplerOptions& options) {
  if (options.kind == SamplerKind::kLayerWise && options.layer_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer_size: must be positive for the ladies sampler, got ", options.layer_size));
  }
  if (options.kind == SamplerKind::kShadow) {
    return absl::UnimplementedError("sample_on: the device draws neighbor and ladies batches; shadow batches are "
                                    "sampled on the host (--sample_on host)");
  }
  if (options.kind == SamplerKind::kNodeWise && options.fanouts.size() != layers.size()) {
    return absl::InvalidArgumentError(absl::StrCat("fanouts: ", options.fanouts.size(),
                                                   " given for a model of ", layers.size(), " layers"));
  }
  if (!CudaAvailable()) {
    return absl::FailedPreconditionError(absl::StrCat("sampling on the device: ", CudaUnavailableReason()));
  }
  std::unique_ptr<DeviceSampler> s(new DeviceSampler());
  s->layers_ = layers;
  s->options_ = options;
  s->device_ = CurrentCudaDevice();
  // Layers that select the same neighbourhoods share a copy: by the CSR's offsets and the keys.
  std::map<std::pair<const int64_t*, const int64_t*>, const Matrix*> copied;
  for (const NeighbourhoodMatrix* a : layers) {
    const Matrix*& m = copied[{a->csr().row_ptr(), a->keys()}];
    if (m == nullptr) {
      auto d = std::make_unique<Matrix>();
      const MatrixView host = ViewOf(*a);
      const int64_t rows = a->csr().num_rows, nnz = a->csr().nnz();
      d->row_ptr = ToDevice(host.row_ptr, rows + 1, DType::kInt64);
      d->col = ToDevice(host.col, nnz, DType::kInt32);
      d->weights = ToDevice(host.weights, nnz, DType::kFloat32);
      d->own_entry = ToDevice(host.own_entry, rows, DType::kInt32);
      d->keys = ToDevice(host.keys, rows, DType::kInt64);
      d->row_of = ToDevice(host.row_of, host.num_vertices, DType::kInt32);
      if (options.kind == SamplerKind::kLayerWise) {
        const std::vector<double> sums = RowWeightSums(*a);
        // (Doubles as int64 elements: the same bytes.)
        d->row_sums = ToDevice(reinterpret_cast<const int64_t*>(sums.empty() ? nullptr : sums.data()),
                               static_cast<int64_t>(sums.size()), DType::kInt64);
      }
      d->view = host;
      d->view.row_ptr = Elements<int64_t>(d->row_ptr);
      d->view.col = Elements<int32_t>(d->col);
      d->view.weights = Elements<float>(d->weights);
      d->view.own_entry = Elements<int32_t>(d->own_entry);
      d->view.keys = Elements<int64_t>(d->keys);
      d->view.row_of = Elements<int32_t>(d->row_of);
      d->view.row_sums = Elements<double>(d->row_sums);
      m = d.get();
      s->matrices_.push_back(std::move(d));
    }
    s->layer_matrix_.push_back(m);
  }
  DeviceStreamSynchronize();  // the copies are complete before any thread's stream reads them
  return s;
}

int64_t DeviceSampler::device_bytes() const {
  int64_t b = 0;
  for (const auto& m : matrices_) b += m->bytes();
  return b;
}

absl::StatusOr<std::vector<MiniBatch>> DeviceSampler::SampleBulk(int epoch, int64_t first_index,
                                                                 const std::vector<Tensor>& seeds) const {
  if (std::string error = UseCudaDevice(device_); !error.empty()) return absl::FailedPreconditionError(error);
#ifdef FLEXGRAPH_HAVE_CUDA
  const cudaStream_t previous = ops::cuda::CurrentStream();
  ops::cuda::SetCurrentStream(SamplingStream());
  absl::Cleanup restore = [previous] { ops::cuda::SetCurrentStream(previous); };
#endif
  const int num_layers = static_cast<int>(layers_.size());
  auto step = [&](int l, const std::vector<std::vector<int64_t>>& frontier, std::vector<SampledRows>* out,
                  const RowsReady&) -> absl::Status {
    const int64_t K = static_cast<int64_t>(frontier.size());
    // The stacked frontier (Q), each vertex's batch, and each batch's stream prefix.
    std::vector<int64_t> base(K + 1, 0);
    for (int64_t k = 0; k < K; ++k) base[k + 1] = base[k] + static_cast<int64_t>(frontier[k].size());
    const int64_t R = base[K];
    std::vector<int64_t> vertices(R);
    std::vector<int32_t> group(R);
    std::vector<uint64_t> prefix(K);
    for (int64_t k = 0; k < K; ++k) {
      std::copy(frontier[k].begin(), frontier[k].end(), vertices.begin() + base[k]);
      std::fill(group.begin() + base[k], group.begin() + base[k + 1], static_cast<int32_t>(k));
      prefix[k] = NodeWiseStreamPrefix(epoch, first_index + k, l);
    }
    // Each row's kept entries, then the first position whose vertex has no row (-1: none), in one
    // buffer; then their offsets (exclusive sum), summed here since the host needs them anyway.
    std::vector<int64_t> offsets(R + 2, 0);
    std::vector<int32_t> cols;
    std::vector<float> weights;
#ifdef FLEXGRAPH_HAVE_CUDA
    const Matrix& m = *layer_matrix_[l];
    const Tensor d_vertices = ToDevice(vertices.data(), R, DType::kInt64);
    const Tensor d_group = ToDevice(group.data(), R, DType::kInt32);
    const Tensor d_prefix = ToDevice(reinterpret_cast<const int64_t*>(prefix.data()), K, DType::kInt64);
    const Tensor d_row = Tensor::Empty({R}, DType::kInt64, Device::kCuda);
    const Tensor d_kept = Tensor::Empty({R + 1}, DType::kInt64, Device::kCuda);
    const bool layer_wise = options_.kind == SamplerKind::kLayerWise;
    // Node-wise: the entries each row keeps; layer-wise: its degree (fanout 0 keeps them all).
    const int fanout = layer_wise ? 0 : options_.fanouts[num_layers - 1 - l];
    int64_t* missing = d_kept.i64() + R;
    DeviceMemset(missing, 0xFF, sizeof(int64_t));
    cuda::LaunchRows(m.view, Elements<int64_t>(d_vertices), R, fanout, Elements<int64_t>(d_row), d_kept.i64(),
                     missing);
    DeviceCopy(offsets.data() + 1, false, d_kept.raw(), true, sizeof(int64_t) * (R + 1));
    if (const int64_t r = offsets[R + 1]; r >= 0) {
      return absl::InvalidArgumentError(absl::StrCat("vertex ", vertices[r], " has no neighbourhood in layer ",
                                                     l, " (not one of its roots)"));
    }
    offsets.resize(R + 1);
    for (int64_t r = 0; r < R; ++r) offsets[r + 1] += offsets[r];
    if (layer_wise) {
      // The draws count entries in 32-bit positions.
      if (offsets[R] >= (int64_t{1} << 31)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "layer ", l, ": the bulk's rows hold ", offsets[R],
            " entries, more than the device's layer-wise sampler takes (2^31 - 1); sample smaller bulks (--bulk)"));
      }
      std::vector<uint64_t> streams(K);
      for (int64_t k = 0; k < K; ++k) streams[k] = LayerWiseStream(epoch, first_index + k, l);
      std::vector<int64_t> entry_offsets = std::move(offsets);
      cuda::SampleLayerWise(m.view, options_.seed, options_.layer_size, Elements<int64_t>(d_row),
                            Elements<int32_t>(d_group), entry_offsets, streams, &offsets, &cols, &weights);
    } else {
      const Tensor d_offsets = ToDevice(offsets.data(), R + 1, DType::kInt64);
      const int64_t N = offsets[R];
      const bool weighted = m.weights.defined();
      const Tensor d_cols = Tensor::Empty({N}, DType::kInt32, Device::kCuda);
      const Tensor d_weights = Tensor::Empty({weighted ? N : 0}, DType::kFloat32, Device::kCuda);
      cuda::LaunchSampleRows(m.view, options_.seed, reinterpret_cast<const uint64_t*>(Elements<int64_t>(d_prefix)),
                             Elements<int32_t>(d_group), Elements<int64_t>(d_vertices), Elements<int64_t>(d_row),
                             d_offsets.i64(), R, Elements<int32_t>(d_cols), Elements<float>(d_weights));
      cols.resize(N);
      weights.resize(weighted ? N : 0);
      DeviceCopy(cols.data(), false, Elements<int32_t>(d_cols), true, sizeof(int32_t) * N);
      DeviceCopy(weights.data(), false, Elements<float>(d_weights), true, sizeof(float) * weights.size());
    }
#else
    (void)num_layers;
    return absl::FailedPreconditionError(CudaUnavailableReason());
#endif
    // Each batch's rows, offsets from its first.
    for (int64_t k = 0; k < K; ++k) {
      SampledRows& s = (*out)[k];
      const int64_t first = offsets[base[k]], last = offsets[base[k + 1]];
      s.offsets.resize(base[k + 1] - base[k] + 1);
      for (int64_t j = 0; j <= base[k + 1] - base[k]; ++j) s.offsets[j] = offsets[base[k] + j] - first;
      s.cols.assign(cols.begin() + first, cols.begin() + last);
      if (!weights.empty()) s.weights.assign(weights.begin() + first, weights.begin() + last);
    }
    return absl::OkStatus();
  };
  return SampleBlocks(layers_, first_index, seeds, step);
}

}  // namespace fg::sampling
