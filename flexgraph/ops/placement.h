// Internal: operand checks shared by the public ops (ops.cc, instances.cc). Dense float operands
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

}  // namespace fg::ops
