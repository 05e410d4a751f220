#include "flexgraph/ops/instances.h"

#include "flexgraph/base/logging.h"
#include "flexgraph/ops/cpu/instances.h"

namespace fg::ops {
namespace {

void CheckCpu(const Tensor& t, const char* op) {
  FG_CHECK(t.device() == Device::kCpu) << op << ": no CUDA kernel yet (tensor on "
                                       << DeviceName(t.device()) << ")";
}

// Floats per row of x for ComplexMul: L * d.
int64_t ComplexRow(const Tensor& x, const Tensor& r, const char* op) {
  const int64_t len = x.rank() == 3 ? x.dim(1) : 1;
  const int64_t d = x.shape().back();
  FG_CHECK((x.rank() == 2 || x.rank() == 3) && d % 2 == 0)
      << op << ": x must be [n, d] or [n, L, d] with d even, got " << x.ShapeString();
  FG_CHECK(r.numel() == len * d) << op << ": r " << ShapeToString(r.shape()) << " for x "
                                 << x.ShapeString();
  return len * d;
}

// Checks the blocks against a table of `rows` rows of width d (every vertex id when `check_ids`:
// the forward pass; its gradients see the same blocks); fills the blocks' first output row and
// first vertex entry (size blocks + 1).
void Layout(const InstanceBlocks& blocks, int64_t rows, int64_t d, bool check_ids,
            std::vector<int64_t>* out_first, std::vector<int64_t>* entry_first) {
  const size_t nb = blocks.vertices.size();
  FG_CHECK(blocks.rotations.size() == nb)
      << "EncodeInstances: " << nb << " blocks, " << blocks.rotations.size() << " rotations";
  out_first->assign(nb + 1, 0);
  entry_first->assign(nb + 1, 0);
  for (size_t b = 0; b < nb; ++b) {
    const Tensor& v = blocks.vertices[b];
    FG_CHECK(v.rank() == 2 && v.dtype() == DType::kInt32)
        << "EncodeInstances: vertices must be int32 [n, L], got " << v.ShapeString();
    const Tensor& r = blocks.rotations[b];
    FG_CHECK(!r.defined() || (r.numel() == v.dim(1) * d && d % 2 == 0))
        << "EncodeInstances: rotations " << r.ShapeString() << " for instances of " << v.dim(1)
        << " vertices of width " << d;
    CheckCpu(v, "EncodeInstances");
    for (int64_t k = 0; check_ids && k < v.numel(); ++k) {
      FG_CHECK(v.i32()[k] >= 0 && v.i32()[k] < rows)
          << "EncodeInstances: vertex " << v.i32()[k] << " outside [0, " << rows << ")";
    }
    (*out_first)[b + 1] = (*out_first)[b] + v.dim(0);
    (*entry_first)[b + 1] = (*entry_first)[b] + v.numel();
  }
}

void CheckHeadWeights(const Csr& a, const Tensor& x, const Tensor& alpha, const char* op) {
  CheckCpu(x, op);
  FG_CHECK(alpha.rows() == a.nnz() && x.rows() == a.num_cols)
      << op << ": " << a.num_rows << "x" << a.num_cols << " with " << a.nnz() << " entries, x "
      << x.ShapeString() << ", alpha " << alpha.ShapeString();
}

}  // namespace

Tensor ComplexFull(int64_t n, float re, float im) {
  Tensor t = Tensor::Empty({1, 2 * n});
  for (int64_t j = 0; j < n; ++j) {
    t.f32()[2 * j] = re;
    t.f32()[2 * j + 1] = im;
  }
  return t;
}

Tensor ComplexMul(const Tensor& x, const Tensor& r) {
  CheckCpu(x, "ComplexMul");
  const int64_t row = ComplexRow(x, r, "ComplexMul");
  Tensor y = Tensor::Empty(x.shape());
  cpu::ComplexMul(x, r, row, &y);
  return y;
}

Tensor ComplexMulGradX(const Tensor& g, const Tensor& r) {
  CheckCpu(g, "ComplexMulGradX");
  const int64_t row = ComplexRow(g, r, "ComplexMulGradX");
  Tensor gx = Tensor::Empty(g.shape());
  cpu::ComplexMulGradX(g, r, row, &gx);
  return gx;
}

Tensor ComplexMulGradR(const Tensor& g, const Tensor& x, const Shape& r_shape) {
  CheckCpu(g, "ComplexMulGradR");
  FG_CHECK(g.shape() == x.shape()) << "ComplexMulGradR: g " << g.ShapeString() << ", x "
                                   << x.ShapeString();
  Tensor gr = Tensor::Zeros(r_shape);
  const int64_t row = ComplexRow(x, gr, "ComplexMulGradR");
  cpu::ComplexMulGradR(g, x, row, &gr);
  return gr;
}

Tensor EncodeInstances(const Tensor& table, const InstanceBlocks& blocks) {
  CheckCpu(table, "EncodeInstances");
  std::vector<int64_t> out_first, entry_first;
  Layout(blocks, table.rows(), table.row_width(), true, &out_first, &entry_first);
  Tensor y = Tensor::Zeros({out_first.back(), table.row_width()});
  cpu::EncodeInstances(table, blocks, out_first, &y);
  return y;
}

Tensor EncodeInstancesGradTable(const Tensor& g, const InstanceBlocks& blocks, int64_t table_rows) {
  CheckCpu(g, "EncodeInstancesGradTable");
  std::vector<int64_t> out_first, entry_first;
  Layout(blocks, table_rows, g.row_width(), false, &out_first, &entry_first);
  FG_CHECK(g.rows() == out_first.back())
      << "EncodeInstancesGradTable: g " << g.ShapeString() << " for " << out_first.back() << " instances";
  Tensor gt = Tensor::Zeros({table_rows, g.row_width()});
  cpu::EncodeInstancesGradTable(g, blocks, out_first, entry_first, &gt);
  return gt;
}

Tensor EncodeInstancesGradRotation(const Tensor& g, const Tensor& table, const InstanceBlocks& blocks,
                                   size_t b) {
  CheckCpu(g, "EncodeInstancesGradRotation");
  std::vector<int64_t> out_first, entry_first;
  Layout(blocks, table.rows(), table.row_width(), false, &out_first, &entry_first);
  FG_CHECK(b < blocks.vertices.size() && blocks.rotations[b].defined())
      << "EncodeInstancesGradRotation: block " << b << " has no rotations";
  Tensor gr = Tensor::Zeros(blocks.rotations[b].shape());
  cpu::EncodeInstancesGradRotation(g, table, blocks.vertices[b], out_first[b], &gr);
  return gr;
}

Tensor HeadWeightedSum(const Csr& a, const Tensor& x, const Tensor& alpha) {
  CheckHeadWeights(a, x, alpha, "HeadWeightedSum");
  Tensor y = Tensor::Zeros({a.num_rows, alpha.row_width() * x.row_width()});
  cpu::HeadWeightedSum(a, x, alpha, &y);
  return y;
}

Tensor HeadWeightedSumGradX(const SparseMatrix& a, const Tensor& alpha, const Tensor& g) {
  const Csr& c = a.csr();
  CheckCpu(g, "HeadWeightedSumGradX");
  FG_CHECK(alpha.rows() == c.nnz() && g.rows() == c.num_rows && g.row_width() % alpha.row_width() == 0)
      << "HeadWeightedSumGradX: g " << g.ShapeString() << ", alpha " << alpha.ShapeString();
  Tensor gx = Tensor::Zeros({c.num_cols, g.row_width() / alpha.row_width()});
  cpu::HeadWeightedSumGradX(a, alpha, g, &gx);
  return gx;
}

Tensor HeadWeightedSumGradAlpha(const Csr& a, const Tensor& x, const Tensor& g) {
  CheckCpu(g, "HeadWeightedSumGradAlpha");
  FG_CHECK(x.rows() == a.num_cols && g.rows() == a.num_rows && g.row_width() % x.row_width() == 0)
      << "HeadWeightedSumGradAlpha: g " << g.ShapeString() << ", x " << x.ShapeString();
  Tensor ga = Tensor::Empty({a.nnz(), g.row_width() / x.row_width()});
  cpu::HeadWeightedSumGradAlpha(a, x, g, &ga);
  return ga;
}

void AddRowsInPlace(Tensor* y, const Tensor& idx, const Tensor& g) {
  CheckCpu(*y, "AddRowsInPlace");
  FG_CHECK(idx.dtype() == DType::kInt32 && g.rows() == idx.numel() && g.row_width() == y->row_width())
      << "AddRowsInPlace: y " << y->ShapeString() << ", idx " << idx.ShapeString() << ", g "
      << g.ShapeString();
  cpu::AddRowsInPlace(y, idx, g);
}

}  // namespace fg::ops
