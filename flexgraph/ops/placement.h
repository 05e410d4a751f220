// Internal: operand checks shared by the public ops (ops.cc, sparse_ops.cc, instances.cc). Dense float operands
// must share one device; index arrays (a Csr's arrays, offsets, row indices, row ids) held on the
// host are copied to a GPU operand's device for the call, and index arrays on a GPU with a host
// operand are an error. Not part of the public API.
#pragma once

#include "flexgraph/base/logging.h"
#include "flexgraph/tensor/csr.h"
#include "flexgraph/tensor/tensor.h"

namespace fg::ops {

inline void CheckSameDevice(const Tensor& t, const Tensor& x, const char* op, const char* arg) {
  FG_CHECK(!t.defined() || t.device() == x.device())
      << op << ": " << arg << " is on " << DeviceName(t.device()) << " but the operand is on "
      << DeviceName(x.device()) << " (move it with Tensor::To)";
}

inline Tensor Placed(const Tensor& index, const Tensor& x, const char* op, const char* arg) {
  if (!index.defined() || index.device() == x.device()) return index;
  FG_CHECK(index.device() == Device::kCpu)
      << op << ": " << arg << " is on " << DeviceName(index.device()) << " but the operand is on "
      << DeviceName(x.device());
  return index.To(x.device());
}

// The Csr with every array on x's device (int32 column ids required).
inline Csr PlacedCsr(const Csr& c, const Tensor& x, const char* op) {
  FG_CHECK(!c.has_int64_indices()) << op << ": sparse operands take int32 column ids (convert with "
                                    << "Csr::WithInt32Indices)";
  Csr out = c;
  out.offsets = Placed(c.offsets, x, op, "csr offsets");
  out.indices = Placed(c.indices, x, op, "csr indices");
  out.values = Placed(c.values, x, op, "csr values");
  return out;
}

// A defined float32 operand.
inline void CheckFloat(const Tensor& t, const char* op, const char* arg) {
  FG_CHECK(t.defined()) << op << ": " << arg << " is undefined";
  FG_CHECK(t.dtype() == DType::kFloat32)
      << op << ": " << arg << " must be float32, got " << DTypeName(t.dtype());
}

// Two dense operands of one shape, on one device.
inline void CheckSameNumel(const Tensor& a, const Tensor& b, const char* op) {
  FG_CHECK(a.numel() == b.numel())
      << op << ": shape mismatch " << a.ShapeString() << " vs " << b.ShapeString();
  FG_CHECK(a.device() == b.device()) << op << ": operands on " << DeviceName(a.device()) << " and "
                                     << DeviceName(b.device());
}

// Segment offsets (int64 [segments + 1]) that cover `rows` rows. Offsets held on the host are
// checked; offsets on a device are trusted (placed from a checked host copy), so that no op reads
// the device back.
inline void CheckCovers(const Tensor& offsets, int64_t rows, const char* op, const char* what) {
  FG_CHECK(offsets.dtype() == DType::kInt64 && offsets.numel() >= 1)
      << op << ": segment offsets must be int64 [segments + 1], got " << DTypeName(offsets.dtype())
      << " " << offsets.ShapeString();
  if (offsets.device() != Device::kCpu) return;
  const int64_t covered = offsets.i64()[offsets.numel() - 1];
  FG_CHECK(covered == rows) << op << ": segments cover " << covered << " rows, " << what << " has "
                            << rows;
}

// A float32 x with a row per column of c, and c placed on its device.
inline Csr PlacedCsrOperand(const Csr& c, const Tensor& x, const char* op) {
  CheckFloat(x, op, "x");
  FG_CHECK(x.rows() == c.num_cols) << op << ": sparse matrix has " << c.num_cols
                                   << " columns but dense operand has shape " << x.ShapeString();
  return PlacedCsr(c, x, op);
}

// x's shape with `rows` rows.
inline Shape WithRows(const Tensor& x, int64_t rows) {
  Shape s = x.shape();
  if (s.empty()) s = {1};
  s[0] = rows;
  return s;
}

}  // namespace fg::ops
