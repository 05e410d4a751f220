#include "flexgraph/tensor/csr.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace fg {

Csr Csr::FromVectors(int64_t num_rows, int64_t num_cols, const std::vector<int64_t>& offsets,
                     const std::vector<int32_t>& indices, const std::vector<float>& values) {
  Csr c;
  c.num_rows = num_rows;
  c.num_cols = num_cols;
  c.offsets = Tensor::FromVector(offsets);
  c.indices = Tensor::FromVector(indices);
  if (!values.empty()) c.values = Tensor::FromVector(values);
  return c;
}

absl::Status Csr::Validate() const {
  if (offsets.numel() != num_rows + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("csr: offsets has ", offsets.numel(), " entries, expected ", num_rows + 1));
  }
  const int64_t* o = row_ptr();
  if (o[0] != 0) return absl::InvalidArgumentError("csr: offsets[0] != 0");
  for (int64_t i = 0; i < num_rows; ++i) {
    if (o[i + 1] < o[i]) {
      return absl::InvalidArgumentError(absl::StrCat("csr: offsets decrease at row ", i));
    }
  }
  if (o[num_rows] != nnz()) {
    return absl::InvalidArgumentError(
        absl::StrCat("csr: offsets end at ", o[num_rows], " but there are ", nnz(), " indices"));
  }
  const int32_t* c = col();
  for (int64_t e = 0; e < nnz(); ++e) {
    if (c[e] < 0 || c[e] >= num_cols) {
      return absl::InvalidArgumentError(
          absl::StrCat("csr: column index ", c[e], " at entry ", e, " outside [0, ", num_cols, ")"));
    }
  }
  if (values.defined() && values.numel() != nnz()) {
    return absl::InvalidArgumentError("csr: values and indices differ in length");
  }
  return absl::OkStatus();
}

Csr Csr::Transpose(Tensor* entry_permutation) const {
  Csr t;
  t.num_rows = num_cols;
  t.num_cols = num_rows;
  t.offsets = Tensor::Zeros({num_cols + 1}, DType::kInt64);
  t.indices = Tensor::Empty({nnz()}, DType::kInt32);
  Tensor perm = Tensor::Empty({nnz()}, DType::kInt32);
  if (values.defined()) t.values = Tensor::Empty({nnz()});
  int64_t* to = t.offsets.i64();
  const int64_t* o = row_ptr();
  const int32_t* c = col();
  for (int64_t e = 0; e < nnz(); ++e) ++to[c[e] + 1];
  for (int64_t i = 0; i < num_cols; ++i) to[i + 1] += to[i];
  std::vector<int64_t> cursor(to, to + num_cols);
  int32_t* ti = t.indices.i32();
  int32_t* p = perm.i32();
  for (int64_t r = 0; r < num_rows; ++r) {
    for (int64_t e = o[r]; e < o[r + 1]; ++e) {
      const int64_t k = cursor[c[e]]++;
      ti[k] = static_cast<int32_t>(r);
      p[k] = static_cast<int32_t>(e);
      if (values.defined()) t.values.f32()[k] = values.f32()[e];
    }
  }
  if (entry_permutation != nullptr) *entry_permutation = perm;
  return t;
}

void SparseMatrix::EnsureTranspose() const {
  std::call_once(once_, [this] { transpose_ = csr_.Transpose(&perm_); });
}
const Csr& SparseMatrix::transpose() const {
  EnsureTranspose();
  return transpose_;
}
const Tensor& SparseMatrix::entry_perm() const {
  EnsureTranspose();
  return perm_;
}

}  // namespace fg
