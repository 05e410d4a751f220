// Sampling on a CUDA device: SampleBulk's batches, the same blocks entry for entry, with every
// layer's rows drawn by device kernels over device copies of the layers' neighbourhood matrices:
// node-wise, one thread per frontier vertex with the draws of sampling/pick.h; layer-wise (LADIES),
// sampling/cuda/layer_pipeline.h: the bulk's entries sorted into each batch's columns, then
// sampling/layer_pick.h's sums, draws and weights. The blocks are built on the host from the rows
// copied back (SampleBlocks). The frontier of all K batches of a bulk goes to the device at once,
// so a bulk costs a fixed number of launches and copies per layer.
//
//   FG_ASSIGN_OR_RETURN(auto sampler, DeviceSampler::Create(matrices, options));
//   FG_ASSIGN_OR_RETURN(auto bulk, sampler->SampleBulk(epoch, first, seeds));
//
// Thread-compatible; SampleBulk may run on any thread: it works on the device that was current
// when the sampler was created, on one stream per device for all sampling (its blocks stay cached
// for the next bulk, whichever thread draws it).
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "sampling/pick.h"
#include "sampling/sampler.h"

namespace fg::sampling {

// The arrays of `a` (host memory), as the device sampler copies them (row_sums: null).
MatrixView ViewOf(const NeighbourhoodMatrix& a);
// Per row of `a`, the sum of its weights in sampling's entry order (its root's own entry first), in
// double (layer_pick.h's AddRounded), as the host's layer-wise sampler sums them; empty where `a` is
// unweighted. Layer-wise sampling on the device reads them (MatrixView::row_sums) instead of
// walking a hub's whole row.
std::vector<double> RowWeightSums(const NeighbourhoodMatrix& a);

class DeviceSampler {
 public:
  // Copies the matrices of `layers` (each distinct one once; they must outlive the sampler, which
  // reads their schemas) to the calling thread's device. Errors: no usable CUDA device (or a build
  // without the CUDA backend), fanouts that do not fit the layers, a layer size below 1.
  static absl::StatusOr<std::unique_ptr<DeviceSampler>> Create(
      const std::vector<const NeighbourhoodMatrix*>& layers, const SamplerOptions& options);
  ~DeviceSampler();

  // SampleBulk(layers, options, epoch, first_index, seeds), drawn on the device.
  absl::StatusOr<std::vector<MiniBatch>> SampleBulk(int epoch, int64_t first_index,
                                                    const std::vector<Tensor>& seeds) const;
  // Device memory held by the matrices' copies.
  int64_t device_bytes() const;

 private:
  struct Matrix;
  DeviceSampler() = default;
  std::vector<const NeighbourhoodMatrix*> layers_;
  SamplerOptions options_;
  int device_ = 0;
  std::vector<std::unique_ptr<Matrix>> matrices_;  // distinct copies
  std::vector<const Matrix*> layer_matrix_;        // per layer
};

}  // namespace fg::sampling
