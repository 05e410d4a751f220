// Internal: CPU kernels behind ops/instances.h (arguments validated by the public ops, outputs
// allocated by them). Not part of the public API.
#pragma once

#include "flexgraph/ops/instances.h"

namespace fg::ops::cpu {

void ComplexMul(const Tensor& x, const Tensor& r, int64_t row, Tensor* y);
void ComplexMulGradX(const Tensor& g, const Tensor& r, int64_t row, Tensor* gx);
void ComplexMulGradR(const Tensor& g, const Tensor& x, int64_t row, Tensor* gr);
// out_first / entry_first: block b's output rows and vertex entries start there (size blocks + 1).
void EncodeInstances(const Tensor& table, const InstanceBlocks& blocks,
                     const std::vector<int64_t>& out_first, Tensor* y);
void EncodeInstancesGradTable(const Tensor& g, const InstanceBlocks& blocks,
                              const std::vector<int64_t>& out_first,
                              const std::vector<int64_t>& entry_first, Tensor* gt);
void EncodeInstancesGradRotation(const Tensor& g, const Tensor& table, const Tensor& vertices,
                                 int64_t out_first, Tensor* gr);
void HeadWeightedSum(const Csr& a, const Tensor& x, const Tensor& alpha, Tensor* y);
void HeadWeightedSumGradX(const SparseMatrix& a, const Tensor& alpha, const Tensor& g, Tensor* gx);
void HeadWeightedSumGradAlpha(const Csr& a, const Tensor& x, const Tensor& g, Tensor* ga);
void AddRowsInPlace(Tensor* y, const Tensor& idx, const Tensor& g);

}  // namespace fg::ops::cpu
