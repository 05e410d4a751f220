// Internal: the per-device kernels behind ops/instances.h, in fg::ops::cpu (ops/cpu/instances.cc)
// and, in CUDA builds, fg::ops::cuda (ops/cuda/instance_kernels.cu) with the same signatures.
// Arguments are validated, placed on the operand's device and outputs allocated by the public ops.
// Every output element is summed in a fixed order on both devices: deterministic. Not part of the
// public API.
#pragma once

#include <vector>

#include "flexgraph/ops/instances.h"

#define FG_INSTANCE_KERNEL_DECLS                                                                   \
  void ComplexMul(const Tensor& x, const Tensor& r, int64_t row, Tensor* y);                       \
  void ComplexMulGradX(const Tensor& g, const Tensor& r, int64_t row, Tensor* gx);                 \
  /* Adds into the zeroed gr: partial sums over fixed chunks of rows, then in chunk order. */      \
  void ComplexMulGradR(const Tensor& g, const Tensor& x, int64_t row, Tensor* gr);                 \
  /* out_first / entry_first: block b's output rows and vertex entries start there (size blocks   \
     + 1). */                                                                                      \
  void EncodeInstances(const Tensor& table, const InstanceBlocks& blocks,                          \
                       const std::vector<int64_t>& out_first, Tensor* y);                          \
  void EncodeInstancesGradTable(const Tensor& g, const InstanceBlocks& blocks,                     \
                                const std::vector<int64_t>& out_first,                             \
                                const std::vector<int64_t>& entry_first, Tensor* gt);              \
  /* Adds into the zeroed gr, as ComplexMulGradR. */                                               \
  void EncodeInstancesGradRotation(const Tensor& g, const Tensor& table, const Tensor& vertices,   \
                                   int64_t out_first, Tensor* gr);                                 \
  void HeadWeightedSum(const Csr& a, const Tensor& x, const Tensor& alpha, Tensor* y);             \
  /* The CUDA twin places a's transpose and entry permutation on the device for the call. */      \
  void HeadWeightedSumGradX(const SparseMatrix& a, const Tensor& alpha, const Tensor& g,           \
                            Tensor* gx);                                                           \
  void HeadWeightedSumGradAlpha(const Csr& a, const Tensor& x, const Tensor& g, Tensor* ga);       \
  void AddRowsInPlace(Tensor* y, const Tensor& idx, const Tensor& g);

namespace fg::ops {
namespace cpu {
FG_INSTANCE_KERNEL_DECLS
}  // namespace cpu
namespace cuda {
FG_INSTANCE_KERNEL_DECLS
}  // namespace cuda
}  // namespace fg::ops
