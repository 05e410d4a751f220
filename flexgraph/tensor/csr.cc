#include "flexgraph/tensor/csr.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"

namespace fg {

namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

template <typename Index>
Csr MakeCsr(int64_t num_rows, int64_t num_cols, const std::vector<int64_t>& offsets,
            const std::vector<Index>& indices, const std::vector<float>& values) {
  Csr c;
  c.num_rows = num_rows;
  c.num_cols = num_cols;
  c.offsets = Tensor::FromVector(offsets);
  c.indices = Tensor::FromVector(indices);
  if (!values.empty()) c.values = Tensor::FromVector(values);
  return c;
}

template <typename Index>
Index* MutableIndices(Tensor& t) {
  if constexpr (sizeof(Index) == 8) {
    return t.i64();
  } else {
    return t.i32();
  }
}

// Counting-sort transpose; TIndex is the transposed column (original row) id type, PIndex the
// entry permutation's. The rows are cut into B blocks of about equal entries, each counted and
// scattered by one thread with cursors that start after the earlier blocks' entries of every
// column: each column lists its entries by row, then stored order, for any B. B is at most the
// thread count and nnz / num_cols (the blocks' counts take no more memory than the entries).
template <typename Index, typename TIndex, typename PIndex>
void TransposeInto(const Csr& a, const Index* c, Csr* t, Tensor* perm) {
  constexpr int64_t kEntriesPerBlock = int64_t{1} << 16;
  const int64_t nnz = a.nnz(), cols = a.num_cols;
  const int64_t blocks = std::max<int64_t>(
      1, std::min<int64_t>({NumThreads(), nnz / std::max<int64_t>(cols, 1), nnz / kEntriesPerBlock}));
  const int64_t* o = a.row_ptr();
  // Block b's rows [row_at[b], row_at[b + 1]): the first row ending past b * nnz / blocks.
  std::vector<int64_t> row_at(blocks + 1, a.num_rows);
  row_at[0] = 0;
  for (int64_t b = 1; b < blocks; ++b) {
    row_at[b] = std::upper_bound(o, o + a.num_rows + 1, nnz * b / blocks) - o - 1;
  }
  // cursor[b * cols + j]: block b's count of column j, then where its next entry of j goes.
  std::vector<int64_t> cursor(static_cast<size_t>(blocks * cols), 0);
  ParallelBlocks(blocks, static_cast<int>(blocks), [&](int b, int64_t, int64_t) {
    int64_t* count = cursor.data() + b * cols;
    for (int64_t e = o[row_at[b]]; e < o[row_at[b + 1]]; ++e) ++count[c[e]];
  });
  int64_t* to = t->offsets.i64();
  to[0] = 0;
  for (int64_t j = 0; j < cols; ++j) {
    int64_t at = to[j];
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t n = cursor[b * cols + j];
      cursor[b * cols + j] = at;
      at += n;
    }
    to[j + 1] = at;
  }
  TIndex* ti = MutableIndices<TIndex>(t->indices);
  PIndex* p = MutableIndices<PIndex>(*perm);
  const float* v = a.val();
  float* tv = v != nullptr ? t->values.f32() : nullptr;
  ParallelBlocks(blocks, static_cast<int>(blocks), [&](int b, int64_t, int64_t) {
    int64_t* next = cursor.data() + b * cols;
    for (int64_t r = row_at[b]; r < row_at[b + 1]; ++r) {
      for (int64_t e = o[r]; e < o[r + 1]; ++e) {
        const int64_t k = next[c[e]]++;
        ti[k] = static_cast<TIndex>(r);
        p[k] = static_cast<PIndex>(e);
        if (tv != nullptr) tv[k] = v[e];
      }
    }
  });
}

}  // namespace

const int32_t* Csr::col() const {
  FG_CHECK(!has_int64_indices()) << "csr has int64 column ids (" << num_cols
                                 << " columns); use col64() or WithInt32Indices()";
  return indices.i32();
}

Csr Csr::FromVectors(int64_t num_rows, int64_t num_cols, const std::vector<int64_t>& offsets,
                     const std::vector<int32_t>& indices, const std::vector<float>& values) {
  return MakeCsr(num_rows, num_cols, offsets, indices, values);
}

Csr Csr::FromInt64Vectors(int64_t num_rows, int64_t num_cols, const std::vector<int64_t>& offsets,
                          const std::vector<int64_t>& indices, const std::vector<float>& values) {
  return MakeCsr(num_rows, num_cols, offsets, indices, values);
}

absl::Status Csr::Validate() const {
  if (offsets.dtype() != DType::kInt64) return absl::InvalidArgumentError("csr: offsets not int64");
  if (offsets.numel() != num_rows + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("csr: offsets has ", offsets.numel(), " entries, expected ", num_rows + 1));
  }
  if (indices.defined() && indices.dtype() != DType::kInt32 && indices.dtype() != DType::kInt64) {
    return absl::InvalidArgumentError("csr: indices are neither int32 nor int64");
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
  absl::Status status = VisitIndices([&](const auto* c) {
    for (int64_t e = 0; e < nnz(); ++e) {
      if (c[e] < 0 || c[e] >= num_cols) {
        return absl::InvalidArgumentError(absl::StrCat("csr: column index ", c[e], " at entry ", e,
                                                       " outside [0, ", num_cols, ")"));
      }
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  if (values.defined() && values.numel() != nnz()) {
    return absl::InvalidArgumentError("csr: values and indices differ in length");
  }
  return absl::OkStatus();
}

absl::StatusOr<Csr> Csr::WithInt32Indices() const {
  if (!has_int64_indices()) return *this;
  if (num_cols > kInt32Max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "csr has ", num_cols, " columns, more than int32 column ids address (2^31 - 1); partition "
        "the graph so that each part's local ids fit"));
  }
  Csr c = *this;
  c.indices = Tensor::Empty({nnz()}, DType::kInt32);
  const int64_t* src = col64();
  int32_t* dst = c.indices.i32();
  for (int64_t e = 0; e < nnz(); ++e) dst[e] = static_cast<int32_t>(src[e]);
  return c;
}

Csr Csr::Transpose(Tensor* entry_permutation) const {
  Csr t;
  t.num_rows = num_cols;
  t.num_cols = num_rows;
  t.offsets = Tensor::Empty({num_cols + 1}, DType::kInt64);
  const bool wide_cols = num_rows > kInt32Max, wide_perm = nnz() > kInt32Max;
  t.indices = Tensor::Empty({nnz()}, wide_cols ? DType::kInt64 : DType::kInt32);
  Tensor perm = Tensor::Empty({nnz()}, wide_perm ? DType::kInt64 : DType::kInt32);
  if (values.defined()) t.values = Tensor::Empty({nnz()});
  VisitIndices([&](const auto* c) {
    using Index = std::remove_cv_t<std::remove_pointer_t<decltype(c)>>;
    if (wide_cols && wide_perm) {
      TransposeInto<Index, int64_t, int64_t>(*this, c, &t, &perm);
    } else if (wide_cols) {
      TransposeInto<Index, int64_t, int32_t>(*this, c, &t, &perm);
    } else if (wide_perm) {
      TransposeInto<Index, int32_t, int64_t>(*this, c, &t, &perm);
    } else {
      TransposeInto<Index, int32_t, int32_t>(*this, c, &t, &perm);
    }
  });
  if (entry_permutation != nullptr) *entry_permutation = perm;
  return t;
}

namespace {
bool SameBytes(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  return a.dtype() == b.dtype() && a.numel() == b.numel() && a.device() == Device::kCpu &&
         b.device() == Device::kCpu && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}
}  // namespace

void SparseMatrix::EnsureTranspose() const {
  std::call_once(once_, [this] {
    transpose_ = csr_.Transpose(&perm_);
    if (transpose_.num_rows == csr_.num_rows && SameBytes(transpose_.offsets, csr_.offsets) &&
        SameBytes(transpose_.indices, csr_.indices) && SameBytes(transpose_.values, csr_.values)) {
      transpose_ = csr_;
    }
  });
}

Tensor SparseMatrix::TransposedValues(const Tensor& w, bool constant) const {
  FG_CHECK(w.device() == Device::kCpu && w.dtype() == DType::kFloat32 && w.rows() == csr_.nnz())
      << "TransposedValues: " << w.ShapeString() << " for " << csr_.nnz() << " entries";
  std::lock_guard<std::mutex> lock(values_mu_);
  if (constant && values_source_.defined() && values_source_.raw() == w.raw() &&
      values_source_.numel() == w.numel()) {
    return values_transposed_;
  }
  const Tensor& perm = entry_perm();
  const int64_t k = w.row_width();
  Tensor t = Tensor::Empty(w.shape(), DType::kFloat32);
  const float* src = w.f32();
  float* dst = t.f32();
  ParallelFor(0, perm.numel(), [&](int64_t e) {
    const int64_t from = perm.dtype() == DType::kInt32 ? perm.i32()[e] : perm.i64()[e];
    for (int64_t j = 0; j < k; ++j) dst[e * k + j] = src[from * k + j];
  });
  if (SameBytes(t, w)) t = w;
  if (constant) {
    values_source_ = w;
    values_transposed_ = t;
  }
  return t;
}
Csr Csr::To(Device device) const {
  Csr out = *this;
  out.offsets = offsets.To(device);
  out.indices = indices.To(device);
  out.values = values.To(device);
  return out;
}

std::shared_ptr<const SparseMatrix> SparseMatrix::OnDevice(Device device) const {
  auto m = std::make_shared<SparseMatrix>(csr_.To(device));
  EnsureTranspose();
  const bool shared = transpose_.offsets.raw() == csr_.offsets.raw();
  std::call_once(m->once_, [&] {
    m->transpose_ = shared ? m->csr_ : transpose_.To(device);
    m->perm_ = perm_.To(device);
  });
  return m;
}

const Tensor& SparseMatrix::inv_degree() const {
  std::call_once(inv_degree_once_, [this] {
    const Tensor offsets = csr_.offsets.To(Device::kCpu);
    Tensor inv = Tensor::Empty({csr_.num_rows});
    for (int64_t i = 0; i < csr_.num_rows; ++i) {
      const int64_t d = offsets.i64()[i + 1] - offsets.i64()[i];
      inv.f32()[i] = d > 0 ? 1.0f / static_cast<float>(d) : 0.0f;
    }
    inv_degree_ = inv.To(csr_.offsets.device());
  });
  return inv_degree_;
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
