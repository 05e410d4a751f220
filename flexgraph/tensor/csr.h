// Csr: a compressed sparse row matrix, the sparse operand of SpMM/SDDMM and the storage of graph
// relations and HDG levels. Row i's entries are indices[offsets[i] .. offsets[i+1]); offsets are
// int64, column indices int32 or int64, optional float values (edge weights). Graph storage uses
// int64 column ids only for node types beyond 2^31 - 1 nodes (or when asked to); ops and HDG
// levels take int32 ids (a worker's local id space), obtained with WithInt32Indices(). Immutable
// after construction by convention; shared by shared_ptr. Thread-safe for reads.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "flexgraph/tensor/tensor.h"

namespace fg {

struct Csr {
  int64_t num_rows = 0;
  int64_t num_cols = 0;
  Tensor offsets;  // int64 [num_rows + 1]
  Tensor indices;  // int32 or int64 [nnz]
  Tensor values;   // float [nnz] or undefined

  int64_t nnz() const { return indices.defined() ? indices.numel() : 0; }
  const int64_t* row_ptr() const { return offsets.i64(); }
  bool has_int64_indices() const { return indices.defined() && indices.dtype() == DType::kInt64; }
  // Column ids; col() requires int32 indices, col64() int64 indices.
  const int32_t* col() const;
  const int64_t* col64() const { return indices.i64(); }
  // Calls f(const int32_t*) or f(const int64_t*) with the column ids (nullptr when there are none).
  template <typename F>
  decltype(auto) VisitIndices(F&& f) const {
    if (has_int64_indices()) return f(static_cast<const int64_t*>(indices.i64()));
    return f(indices.defined() ? static_cast<const int32_t*>(indices.i32()) : nullptr);
  }
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
  static Csr FromInt64Vectors(int64_t num_rows, int64_t num_cols,
                              const std::vector<int64_t>& offsets,
                              const std::vector<int64_t>& indices,
                              const std::vector<float>& values = {});
  // This matrix with its arrays on `device` (a view when already there).
  Csr To(Device device) const;
  // Validates the structure: monotone offsets starting at 0, integer indices in [0, num_cols).
  absl::Status Validate() const;
  // This matrix with int32 column ids: shares storage when they already are; otherwise converts,
  // or fails when num_cols exceeds 2^31 - 1 (such a graph must be partitioned first).
  absl::StatusOr<Csr> WithInt32Indices() const;
  // The transpose (columns become rows), values carried along; deterministic, entries sorted by
  // original row within each new row. Its column ids are int32 when num_rows fits, else int64.
  // Also returns, per transposed entry, the original entry id (int32 below 2^31 entries, else
  // int64).
  Csr Transpose(Tensor* entry_permutation = nullptr) const;
};

// A Csr with its transpose computed on first use (for backward passes). A symmetric matrix (the
// same entries and values both ways, as GCN's normalised adjacency of an undirected graph) shares
// its storage with its transpose. Thread-safe.
class SparseMatrix {
 public:
  explicit SparseMatrix(Csr csr) : csr_(std::move(csr)) {}
  const Csr& csr() const { return csr_; }
  // Transposed structure; entry_perm()[k] (int32) is the original entry id of transposed entry k.
  const Csr& transpose() const;
  const Tensor& entry_perm() const;
  // Per-entry values w ([nnz] or [nnz, k] floats on the CPU) in transpose() entry order. For a
  // constant w (never written while this matrix lives) the result is kept, holding w, and reused
  // by the next call with w; when it equals w, w itself is returned.
  Tensor TransposedValues(const Tensor& w, bool constant) const;
  // 1 / degree per row (0 for empty rows), float [num_rows] on the matrix's device; computed once.
  const Tensor& inv_degree() const;
  // This matrix with its arrays on `device`, its transpose and entry permutation computed (on the
  // host) and placed there too, so that backward passes never leave the device.
  std::shared_ptr<const SparseMatrix> OnDevice(Device device) const;

 private:
  void EnsureTranspose() const;
  Csr csr_;
  mutable std::once_flag once_;
  mutable Csr transpose_;
  mutable Tensor perm_;
  mutable std::once_flag inv_degree_once_;
  mutable Tensor inv_degree_;
  mutable std::mutex values_mu_;
  mutable Tensor values_source_, values_transposed_;
};

using SparseMatrixPtr = std::shared_ptr<const SparseMatrix>;

}  // namespace fg
