// Csr: a compressed sparse row matrix, the sparse operand of SpMM/SDDMM and the storage of graph
// relations and HDG levels. Row i's entries are indices[offsets[i] .. offsets[i+1]); offsets are int64,
// column indices int32, optional float values (edge weights). Immutable after construction by
// convention; shared by shared_ptr. Thread-safe for reads.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "flexgraph/tensor/tensor.h"

namespace fg {

struct Csr {
  int64_t num_rows = 0;
  int64_t num_cols = 0;
  Tensor offsets;  // int64 [num_rows + 1]
  Tensor indices;  // int32 [nnz]
  Tensor values;   // float [nnz] or undefined

  int64_t nnz() const { return indices.defined() ? indices.numel() : 0; }
  const int64_t* row_ptr() const { return offsets.i64(); }
  const int32_t* col() const { return indices.i32(); }
  const float* val() const { return values.defined() ? values.f32() : nullptr; }
  int64_t degree(int64_t row) const { return row_ptr()[row + 1] - row_ptr()[row]; }
  size_t bytes() const {
    return offsets.nbytes() + (indices.defined() ? indices.nbytes() : 0) +
           (values.defined() ? values.nbytes() : 0);
  }

  // Builds from raw arrays (copied).
  static Csr FromVectors(int64_t num_rows, int64_t num_cols, const std::vector<int64_t>& offsets,
                         const std::vector<int32_t>& indices,
                         const std::vector<float>& values = {});
  // Validates the structure: monotone offsets starting at 0, indices in [0, num_cols).
  absl::Status Validate() const;
  // The transpose (columns become rows), values carried along; deterministic, entries sorted by
  // original row within each new row. Also returns, per transposed entry, the original entry id
  // (int32: matrices have fewer than 2^31 entries).
  Csr Transpose(Tensor* entry_permutation = nullptr) const;
};

// A Csr with its transpose computed on first use (for backward passes). Thread-safe.
class SparseMatrix {
 public:
  explicit SparseMatrix(Csr csr) : csr_(std::move(csr)) {}
  const Csr& csr() const { return csr_; }
  // Transposed structure; entry_perm()[k] (int32) is the original entry id of transposed entry k.
  const Csr& transpose() const;
  const Tensor& entry_perm() const;

 private:
  void EnsureTranspose() const;
  Csr csr_;
  mutable std::once_flag once_;
  mutable Csr transpose_;
  mutable Tensor perm_;
};

using SparseMatrixPtr = std::shared_ptr<const SparseMatrix>;

}  // namespace fg
