// Internal: the per-device kernel entry points behind the public ops. Each kernel exists in
// namespace fg::ops::cpu (ops/cpu/*.cc) and, in CUDA builds, in fg::ops::cuda (ops/cuda/*.cu) with the
// same signature over raw device pointers. Public ops validate, allocate and call FG_DISPATCH.
// Not part of the public API.
#pragma once

#include <cstdint>

#include "flexgraph/tensor/tensor.h"

namespace fg::ops {

enum class UnaryOp { kRelu, kLeakyRelu, kElu, kTanh, kSigmoid, kExp };

// The constants of one optimizer update (nn::Optimizer): kind 0 SGD, 1 Adam, 2 AdamW; bc1, bc2 are
// Adam's bias corrections 1 - beta^step.
struct OptimizerStepArgs {
  int kind = 0;
  float lr = 0, weight_decay = 0, momentum = 0, beta1 = 0, beta2 = 0, eps = 0, bc1 = 1, bc2 = 1;
};

#define FG_KERNEL_DECLS                                                                            \
  /* C[m,n] = alpha * op(A) op(B) + beta * C; batch > 1 uses strides m*k, k*n, m*n. */             \
  void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,              \
            const float* a, const float* b, float beta, float* c, int64_t batch);                  \
  /* C[m,n] = ReLU(A[m,k] B[k,n] + bias[n]); on the CPU the bias and ReLU run on each block of C   \
     as it is computed (a GEMM epilogue). */                                                       \
  void MatmulBiasRelu(int64_t m, int64_t n, int64_t k, const float* a, const float* b,             \
                      const float* bias, float* c);                                                \
  void Unary(UnaryOp op, float alpha, const float* x, float* y, int64_t n);                        \
  /* gx = gy * f'(.) using x (input) and y (output). */                                            \
  void UnaryBackward(UnaryOp op, float alpha, const float* x, const float* y, const float* gy,     \
                     float* gx, int64_t n);                                                        \
  /* y[r, j] = ReLU(x[r, j] + b[j]) over rows of `cols`. */                                        \
  void BiasRelu(const float* x, const float* b, int64_t rows, int64_t cols, float* y);             \
  /* From y = BiasRelu(x, b): gx = gy where y > 0, else 0; gb[j] = sum over rows of gx[r, j]. */   \
  void BiasReluBackward(const float* y, const float* gy, int64_t rows, int64_t cols, float* gx,    \
                        float* gb);                                                                \
  /* y = a + alpha * b (elementwise; b broadcast with period `b_period` when > 0). */              \
  void AddScaled(const float* a, const float* b, float alpha, float* y, int64_t n,                 \
                 int64_t b_period);                                                                \
  void MulElem(const float* a, const float* b, float* y, int64_t n);                               \
  void Scale(const float* x, float s, float* y, int64_t n);                                        \
  /* y[j] = sum_i x[i, j] over rows. */                                                            \
  void SumRows(const float* x, int64_t rows, int64_t cols, float* y);                              \
  /* y[r, head h slice] = s[r * heads + h] * x[r, head h slice]. */                                \
  void ScaleRows(const float* x, const float* s, int64_t rows, int64_t width, int64_t heads,       \
                 float* y);                                                                        \
  /* out rows = sum_e w(e, head) * x[col[e]] over row segments (reduce: 0 sum, 1 mean). */         \
  void Spmm(const int64_t* off, const int32_t* col, const float* w, int64_t w_heads, int64_t rows, \
            const float* x, int64_t width, int mean, float* out);                                  \
  /* Spmm with the dense operand's row count `x_rows` and the entry count `nnz` (the CUDA backend  \
     hands both to cuSPARSE). */                                                                   \
  void SpmmCsr(const int64_t* off, const int32_t* col, const float* w, int64_t w_heads,            \
               int64_t rows, int64_t x_rows, int64_t nnz, const float* x, int64_t width, int mean, \
               float* out);                                                                        \
  /* out = max over row segments of x[col[e]]; argmax holds the winning column (-1 if empty). */   \
  void SpmmMax(const int64_t* off, const int32_t* col, int64_t rows, const float* x,               \
               int64_t width, float* out, int32_t* argmax);                                        \
  /* gx[argmax[i, j], j] += gy[i, j] (deterministic: caller passes the transposed structure). */   \
  void SpmmMaxBackward(const int64_t* t_off, const int32_t* t_col, int64_t x_rows,                 \
                       const int32_t* argmax, const float* gy, int64_t width, float* gx);          \
  /* Per entry and head: out[e, h] = <a[row(e)], b[col(e)]> over the head's slice; nnz = off[rows] \
     (known on the host: the GPU kernels read no count back). */                                   \
  void SddmmDot(const int64_t* off, const int32_t* col, int64_t rows, int64_t nnz, const float* a, \
                const float* b, int64_t width, int64_t heads, float* out);                         \
  /* out[e, h] = u[row(e), h] + v[col(e), h]; nnz as for SddmmDot. */                              \
  void SddmmAdd(const int64_t* off, const int32_t* col, int64_t rows, int64_t nnz, const float* u, \
                const float* v, int64_t heads, float* out);                                        \
  /* Segment softmax over row segments of edge scores [nnz, heads]. */                             \
  void SegmentSoftmax(const int64_t* off, int64_t rows, const float* s, int64_t heads, float* y);  \
  void SegmentSoftmaxBackward(const int64_t* off, int64_t rows, const float* y, const float* gy,   \
                              int64_t heads, float* gs);                                           \
  /* out[i] = reduce of x rows off[i]..off[i+1] (0 sum, 1 mean, 2 max with argmax row). */         \
  void SegmentReduce(const int64_t* off, int64_t rows, const float* x, int64_t width, int reduce,  \
                     float* out, int32_t* argmax);                                                 \
  /* The gradient of SegmentReduce: gx[e] = g[s] (sum), g[s] / |s| (mean) for every row e of      \
     segment s; max: g[s, j] at the argmax row of column j, 0 elsewhere. Every row of gx in a      \
     segment is written. */                                                                         \
  void SegmentReduceBackward(const int64_t* off, int64_t segs, const float* g,                     \
                             const int32_t* argmax, int64_t width, int reduce, float* gx);         \
  /* The positions k < n grouped by idx[k], a stable counting sort: off [num_rows + 1], pos [n],   \
     positions ascending within a group. The host aborts on an index outside [0, num_rows); a     \
     GPU leaves such entries out of every group (off[num_rows] counts the others). */              \
  void GroupByIndex(const int32_t* idx, int64_t n, int64_t num_rows, int64_t* off, int32_t* pos);  \
  /* out[k] = x[idx[k]] */                                                                         \
  void GatherRows(const float* x, int64_t width, const int32_t* idx, int64_t n, float* out);       \
  void LogSoftmaxRows(const float* x, int64_t rows, int64_t cols, float* y);                       \
  void LogSoftmaxRowsBackward(const float* y, const float* gy, int64_t rows, int64_t cols,         \
                              float* gx);                                                          \
  /* y = x / max(||x_row||, eps); norms receives the clamped norms. */                             \
  void RowL2Normalize(const float* x, int64_t rows, int64_t cols, float eps, float* y,             \
                      float* norms);                                                               \
  void RowL2NormalizeBackward(const float* y, const float* norms, const float* gy, int64_t rows,   \
                              int64_t cols, float eps, float* gx);                                 \
  /* y[r, j] = x[r, j] * m (x = null: y = m), m = (uniform(seed, row_id(r), j) >= p) / (1 - p);    \
     row_id = ids ? ids[r] : r. */                                                                 \
  void Dropout(uint64_t seed, const int64_t* row_ids, int64_t rows, int64_t cols, float p,         \
               const float* x, float* y);                                                          \
  /* y[r, y_at + c] = x[r, x_at + c] for r < rows, c < width (column blocks; Concat and Split). */ \
  void CopyColumns(const float* x, int64_t x_width, int64_t x_at, int64_t rows, int64_t width,     \
                   float* y, int64_t y_width, int64_t y_at);                                       \
  /* Updates parameters w in place from gradients g (null: zero) and the state m (momentum or      \
     first moment) and v (second moment; null for SGD), n elements. */                             \
  void OptimizerStep(const OptimizerStepArgs& o, float* w, const float* g, float* m, float* v,     \
                     int64_t n);                                                                   \
  /* out[0] = -(1/m) sum_k lp[rows[k], labels[rows[k]]] over log-probabilities [*, classes]. */    \
  void NllLoss(const float* lp, int64_t classes, const int64_t* labels, const int32_t* rows,       \
               int64_t m, float* out);                                                             \
  /* gl[rows[k], labels[rows[k]]] += -g[0] / m over a zeroed gl [*, classes]; rows distinct. */    \
  void NllLossBackward(const float* g, int64_t classes, const int64_t* labels,                     \
                       const int32_t* rows, int64_t m, float* gl);                                 \
  /* out[0] = (1/n) sum_i max(x_i, 0) - x_i t_i + log(1 + exp(-|x_i|)) (BCE with logits). */      \
  void BceWithLogits(const float* x, const float* t, int64_t n, float* out);                       \
  /* gx_i = (g[0] / n) (sigmoid(x_i) - t_i). */                                                    \
  void BceWithLogitsBackward(const float* g, const float* x, const float* t, int64_t n, float* gx);

namespace cpu {
FG_KERNEL_DECLS
}  // namespace cpu
namespace cuda {
FG_KERNEL_DECLS
}  // namespace cuda

// Aborts with a message naming the op: a CUDA tensor reached a build without the CUDA backend.
[[noreturn]] void NoCudaBackend(const char* op);

}  // namespace fg::ops

#if defined(FLEXGRAPH_HAVE_CUDA)
#define FG_DISPATCH(device, fn, ...) \
  ((device) == ::fg::Device::kCuda ? ::fg::ops::cuda::fn(__VA_ARGS__) : ::fg::ops::cpu::fn(__VA_ARGS__))
#else
#define FG_DISPATCH(device, fn, ...)                                          \
  ((device) == ::fg::Device::kCuda ? ::fg::ops::NoCudaBackend(#fn)            \
                                   : ::fg::ops::cpu::fn(__VA_ARGS__))
#endif
