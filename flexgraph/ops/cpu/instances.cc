#include "flexgraph/ops/instance_kernels.h"

#include <algorithm>

#include "flexgraph/base/parallel.h"
#include "flexgraph/ops/ops.h"
#include "flexgraph/ops/shared/complex.h"

namespace fg::ops::cpu {
namespace {

// Rows per partial sum of a parameter gradient: fixed, so the summation order (and the result)
// never depends on the thread count.
constexpr int64_t kRowsPerPartial = 1024;

}  // namespace

void ComplexMul(const Tensor& x, const Tensor& r, int64_t row, Tensor* y) {
  const float* xp = x.f32();
  const float* rp = r.f32();
  float* yp = y->f32();
  ParallelFor(0, x.dim(0), [&](int64_t i) { shared::ComplexMulRow(xp + i * row, rp, row, yp + i * row); });
}

void ComplexMulGradX(const Tensor& g, const Tensor& r, int64_t row, Tensor* gx) {
  const float* gp = g.f32();
  const float* rp = r.f32();
  float* o = gx->f32();
  ParallelFor(0, g.numel() / row, [&](int64_t i) { shared::ComplexMulConjRow(gp + i * row, rp, row, o + i * row); });
}

void ComplexMulGradR(const Tensor& g, const Tensor& x, int64_t row, Tensor* gr) {
  const int64_t n = x.dim(0);
  const float* gp = g.f32();
  const float* xp = x.f32();
  const int64_t blocks = (n + kRowsPerPartial - 1) / kRowsPerPartial;
  std::vector<double> partial(blocks * row, 0.0);
  ParallelFor(0, blocks, [&](int64_t b) {
    double* acc = partial.data() + b * row;
    const int64_t hi = std::min(n, (b + 1) * kRowsPerPartial);
    for (int64_t i = b * kRowsPerPartial; i < hi; ++i) {
      shared::AccumulateConjProduct(gp + i * row, xp + i * row, row, acc);
    }
  });
  float* o = gr->f32();
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t j = 0; j < row; ++j) o[j] += static_cast<float>(partial[b * row + j]);
  }
}

void EncodeInstances(const Tensor& table, const InstanceBlocks& blocks,
                     const std::vector<int64_t>& out_first, Tensor* y) {
  const int64_t d = table.row_width();
  const float* t = table.f32();
  for (size_t b = 0; b < blocks.vertices.size(); ++b) {
    const int64_t n = blocks.vertices[b].dim(0), len = blocks.vertices[b].dim(1);
    const int32_t* idx = blocks.vertices[b].i32();
    const float* r = blocks.rotations[b].defined() ? blocks.rotations[b].f32() : nullptr;
    const float inv = 1.0f / static_cast<float>(len);
    float* out = y->f32() + out_first[b] * d;
    ParallelFor(0, n, [&](int64_t i) {
      float* o = out + i * d;
      for (int64_t l = 0; l < len; ++l) {
        const float* x = t + static_cast<int64_t>(idx[i * len + l]) * d;
        if (r != nullptr) {
          shared::AddComplexMulRow(x, r + l * d, d, o);
        } else {
          for (int64_t j = 0; j < d; ++j) o[j] += x[j];
        }
      }
      for (int64_t j = 0; j < d; ++j) o[j] *= inv;
    });
  }
}

void EncodeInstancesGradTable(const Tensor& g, const InstanceBlocks& blocks,
                              const std::vector<int64_t>& out_first,
                              const std::vector<int64_t>& entry_first, Tensor* gt) {
  // d table[v] = Σ_{entries (b, i, l) at v} conj(r_bl) g_{b,i} / L_b, per table row in entry order.
  const int64_t nb = static_cast<int64_t>(blocks.vertices.size());
  const int64_t rows = gt->rows(), d = gt->row_width();
  Tensor all = Tensor::Empty({entry_first[nb]}, DType::kInt32);
  for (int64_t b = 0; b < nb; ++b) {
    const Tensor& v = blocks.vertices[b];
    std::copy(v.i32(), v.i32() + v.numel(), all.i32() + entry_first[b]);
  }
  const Csr by_vertex = ops::GroupByIndex(all, rows);
  const float* gp = g.f32();
  float* o = gt->f32();
  ParallelForDynamic(0, rows, 256, [&](int64_t v) {
    float* acc = o + v * d;
    for (int64_t e = by_vertex.row_ptr()[v]; e < by_vertex.row_ptr()[v + 1]; ++e) {
      const int64_t k = by_vertex.col()[e];
      const int64_t b =
          std::upper_bound(entry_first.begin(), entry_first.end(), k) - entry_first.begin() - 1;
      const int64_t len = blocks.vertices[b].dim(1), local = k - entry_first[b];
      const float inv = 1.0f / static_cast<float>(len);
      const float* gi = gp + (out_first[b] + local / len) * d;
      if (blocks.rotations[b].defined()) {
        shared::AddScaledConjRow(gi, blocks.rotations[b].f32() + (local % len) * d, d, inv, acc);
      } else {
        for (int64_t j = 0; j < d; ++j) acc[j] += inv * gi[j];
      }
    }
  });
}

void EncodeInstancesGradRotation(const Tensor& g, const Tensor& table, const Tensor& vertices,
                                 int64_t out_first, Tensor* gr) {
  // d r_l = 1/L Σ_i g_i conj(table[vertices[i, l]]), in fixed blocks of instances.
  const int64_t n = vertices.dim(0), len = vertices.dim(1), d = table.row_width();
  const int32_t* idx = vertices.i32();
  const float* t = table.f32();
  const float* gb = g.f32() + out_first * d;
  const int64_t parts = (n + kRowsPerPartial - 1) / kRowsPerPartial;
  std::vector<double> partial(parts * len * d, 0.0);
  ParallelFor(0, parts, [&](int64_t p) {
    double* acc = partial.data() + p * len * d;
    const int64_t hi = std::min(n, (p + 1) * kRowsPerPartial);
    for (int64_t i = p * kRowsPerPartial; i < hi; ++i) {
      for (int64_t l = 0; l < len; ++l) {
        shared::AccumulateConjProduct(gb + i * d, t + static_cast<int64_t>(idx[i * len + l]) * d, d,
                                      acc + l * d);
      }
    }
  });
  float* o = gr->f32();
  for (int64_t p = 0; p < parts; ++p) {
    for (int64_t j = 0; j < len * d; ++j) o[j] += static_cast<float>(partial[p * len * d + j] / len);
  }
}

void HeadWeightedSum(const Csr& c, const Tensor& x, const Tensor& alpha, Tensor* y) {
  const int64_t heads = alpha.row_width(), d = x.row_width(), width = heads * d;
  const float* xp = x.f32();
  const float* a = alpha.f32();
  float* out = y->f32();
  ParallelForDynamic(0, c.num_rows, 64, [&](int64_t g) {
    float* o = out + g * width;
    for (int64_t e = c.row_ptr()[g]; e < c.row_ptr()[g + 1]; ++e) {
      const float* xi = xp + static_cast<int64_t>(c.col()[e]) * d;
      for (int64_t h = 0; h < heads; ++h) {
        const float w = a[e * heads + h];
        float* oh = o + h * d;
        for (int64_t j = 0; j < d; ++j) oh[j] += w * xi[j];
      }
    }
  });
}

void HeadWeightedSumGradX(const SparseMatrix& m, const Tensor& alpha, const Tensor& g, Tensor* gx) {
  // dx_i = Σ_{entries e of column i} Σ_h α_eh g_{row(e), h}, in transposed entry order.
  const Csr& t = m.transpose();
  const int32_t* perm = m.entry_perm().i32();
  const int64_t heads = alpha.row_width(), d = gx->row_width(), width = heads * d;
  const float* gp = g.f32();
  const float* a = alpha.f32();
  float* o = gx->f32();
  ParallelForDynamic(0, t.num_rows, 256, [&](int64_t i) {
    float* oi = o + i * d;
    for (int64_t te = t.row_ptr()[i]; te < t.row_ptr()[i + 1]; ++te) {
      const int64_t e = perm[te];
      const float* gr = gp + static_cast<int64_t>(t.col()[te]) * width;
      for (int64_t h = 0; h < heads; ++h) {
        const float w = a[e * heads + h];
        for (int64_t j = 0; j < d; ++j) oi[j] += w * gr[h * d + j];
      }
    }
  });
}

void HeadWeightedSumGradAlpha(const Csr& c, const Tensor& x, const Tensor& g, Tensor* ga) {
  // dα_eh = <g_{row(e), h}, x_{col(e)}>.
  const int64_t heads = ga->row_width(), d = x.row_width(), width = heads * d;
  const float* gp = g.f32();
  const float* xp = x.f32();
  float* o = ga->f32();
  ParallelForDynamic(0, c.num_rows, 64, [&](int64_t r) {
    const float* gr = gp + r * width;
    for (int64_t e = c.row_ptr()[r]; e < c.row_ptr()[r + 1]; ++e) {
      const float* xi = xp + static_cast<int64_t>(c.col()[e]) * d;
      for (int64_t h = 0; h < heads; ++h) {
        float s = 0.0f;
        for (int64_t j = 0; j < d; ++j) s += gr[h * d + j] * xi[j];
        o[e * heads + h] = s;
      }
    }
  });
}

void AddRowsInPlace(Tensor* y, const Tensor& idx, const Tensor& g) {
  const int64_t w = y->row_width();
  const int32_t* id = idx.i32();
  float* dst = y->f32();
  const float* src = g.f32();
  ParallelFor(0, idx.numel(), [&](int64_t k) {
    float* row = dst + static_cast<int64_t>(id[k]) * w;
    for (int64_t j = 0; j < w; ++j) row[j] += src[k * w + j];
  });
}

}  // namespace fg::ops::cpu
