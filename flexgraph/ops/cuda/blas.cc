// CUDA entry points backed by NVIDIA libraries: GEMM on cuBLAS (sgemm, strided batched sgemm for the
// dense path) and SpMM on cuSPARSE's generic API (CSR, row-major dense operands, workspace reused
// per thread). Everything runs on the calling thread's stream.
#include <climits>

#include "flexgraph/base/logging.h"
#include "flexgraph/ops/cuda/cuda_util.h"
#include "flexgraph/ops/cuda/handles.h"
#include "flexgraph/ops/kernels.h"
#include "flexgraph/tensor/device_alloc.h"

namespace fg::ops::cuda {
namespace {

int AsInt(int64_t v, const char* what) {
  FG_CHECK(v >= 0 && v <= INT_MAX) << what << " = " << v << " exceeds the 32-bit range of the library";
  return static_cast<int>(v);
}

// Scratch slots (cuda_util.h).
constexpr int kWorkspaceSlot = 0;
constexpr int kOffsetsSlot = 1;
constexpr int kValuesSlot = 2;
// Output widths from which an unweighted mean weighs entries instead of scaling rows.
constexpr int64_t kWideMean = 32;

// n or more ones on the device: filled once per thread, refilled only when it grows.
const float* Ones(int64_t n) {
  struct Buffer {
    float* p = nullptr;
    int64_t n = 0;
    ~Buffer() { DeviceFree(p, sizeof(float) * n); }
  };
  thread_local Buffer b;
  if (b.n < n) {
    DeviceFree(b.p, sizeof(float) * b.n);  // stream-ordered: reused on this stream only
    b.n = n + n / 2;
    b.p = static_cast<float*>(DeviceAlloc(sizeof(float) * b.n));
    LaunchFill(b.p, 1.0f, b.n);
  }
  return b.p;
}

}  // namespace

void MatmulBiasRelu(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                    const float* bias, float* c) {
  Gemm(false, false, m, n, k, 1.0f, a, b, 0.0f, c, 1);
  BiasRelu(c, bias, m, n, c);
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  if (k == 0) {  // C = beta * C without reading C when beta is 0
    if (beta == 0.0f) {
      FG_CUDA_CHECK(cudaMemsetAsync(c, 0, sizeof(float) * m * n * batch, CurrentStream()));
    } else {
      Scale(c, beta, c, m * n * batch);
    }
    return;
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int mi = AsInt(m, "Gemm m"), ni = AsInt(n, "Gemm n"), ki = AsInt(k, "Gemm k");
  const int lda = trans_a ? mi : ki, ldb = trans_b ? ki : ni;
  cublasHandle_t h = CublasHandle();
  if (batch == 1) {
    FG_CUBLAS_CHECK(Cublas().sgemm(h, op_b, op_a, ni, mi, ki, &alpha, b, ldb, a, lda, &beta, c, ni));
  } else {
    FG_CUBLAS_CHECK(Cublas().sgemm_strided_batched(h, op_b, op_a, ni, mi, ki, &alpha, b, ldb, k * n, a,
                                              lda, m * k, &beta, c, ni, m * n,
                                              AsInt(batch, "Gemm batch")));
  }
}

void Spmm(const int64_t* off, const int32_t* col, const float* w, int64_t w_heads, int64_t rows,
          const float* x, int64_t width, int mean, float* out) {
  LaunchSpmmElementwise(off, col, w, w_heads, rows, x, width, mean, out);
}

// cuSPARSE for one weight per entry (or none); per-head weights use the custom kernel. cuSPARSE
// wants matching index types, so the int64 offsets are narrowed to int32 in a scratch buffer (the
// entry count is below 2^31 by the Csr contract).
void SpmmCsr(const int64_t* off, const int32_t* col, const float* w, int64_t w_heads, int64_t rows,
             int64_t x_rows, int64_t nnz, const float* x, int64_t width, int mean, float* out) {
  if (rows == 0 || width == 0) return;
  if (w_heads > 1) {
    LaunchSpmmElementwise(off, col, w, w_heads, rows, x, width, mean, out);
    return;
  }
  if (nnz == 0) {
    FG_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float) * rows * width, CurrentStream()));
    return;
  }
  auto* off32 = static_cast<int32_t*>(ThreadScratch(kOffsetsSlot, sizeof(int32_t) * (rows + 1)));
  LaunchOffsetsToInt32(off, rows + 1, off32);
  const float* values = w;
  // An unweighted mean over wide rows weighs each entry by its row's 1 / degree (one pass over
  // the entries) rather than scaling the output afterwards (a pass over rows x width floats).
  const bool weighted_mean = mean && w == nullptr && width >= kWideMean;
  if (weighted_mean) {
    auto* inv = static_cast<float*>(ThreadScratch(kValuesSlot, sizeof(float) * nnz));
    LaunchInverseDegreeValues(off, rows, inv);
    values = inv;
  } else if (values == nullptr) {
    values = Ones(nnz);
  }
  cusparseHandle_t h = CusparseHandle();
  cusparseConstSpMatDescr_t a_desc;
  cusparseConstDnMatDescr_t x_desc;
  cusparseDnMatDescr_t out_desc;
  FG_CUSPARSE_CHECK(Cusparse().create_const_csr(&a_desc, rows, x_rows, nnz, off32, col, values,
                                           CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                           CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  FG_CUSPARSE_CHECK(Cusparse().create_const_dn_mat(&x_desc, x_rows, width, width, x, CUDA_R_32F,
                                             CUSPARSE_ORDER_ROW));
  FG_CUSPARSE_CHECK(
      Cusparse().create_dn_mat(&out_desc, rows, width, width, out, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  const float alpha = 1.0f, beta = 0.0f;
  // ALG2 suits row-major operands and is deterministic for a non-transposed sparse matrix.
  constexpr cusparseSpMMAlg_t kAlg = CUSPARSE_SPMM_CSR_ALG2;
  size_t ws_bytes = 0;
  FG_CUSPARSE_CHECK(Cusparse().spmm_buffer_size(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                            CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a_desc,
                                            x_desc, &beta, out_desc, CUDA_R_32F, kAlg, &ws_bytes));
  void* ws = ws_bytes > 0 ? ThreadScratch(kWorkspaceSlot, ws_bytes) : nullptr;
  FG_CUSPARSE_CHECK(Cusparse().spmm(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                 CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a_desc, x_desc, &beta,
                                 out_desc, CUDA_R_32F, kAlg, ws));
  FG_CUSPARSE_CHECK(Cusparse().destroy_sp_mat(a_desc));
  FG_CUSPARSE_CHECK(Cusparse().destroy_dn_mat(x_desc));
  FG_CUSPARSE_CHECK(Cusparse().destroy_dn_mat(out_desc));
  if (mean && !weighted_mean) LaunchScaleByInverseDegree(off, rows, width, out);
}

}  // namespace fg::ops::cuda
