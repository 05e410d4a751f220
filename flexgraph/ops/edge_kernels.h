// Internal: the CPU kernels behind ops/edge_ops.h, over raw host pointers. Not public API.
#pragma once

#include <cstdint>

namespace fg::ops::cpu {

// out[k] = [xs[col[k]] | xd[row of k] | e[k]] over the rows' entries (e null when de == 0).
void EdgeInput(const int64_t* off, const int32_t* col, int64_t rows, const float* xs, int64_t ds,
               const float* xd, int64_t dd, const float* e, int64_t de, float* out);
// gxs[c] = sum over transposed entries t of column c of g[perm[t], 0:ds] (null: skipped);
// gxd[r] = sum over row r's entries k of g[k, ds:ds+dd] (null: skipped); ge[k] = g[k, ds+dd:].
void EdgeInputBackward(const int64_t* off, int64_t rows, const int64_t* t_off, const int32_t* perm,
                       int64_t cols, const float* g, int64_t ds, int64_t dd, int64_t de,
                       float* gxs, float* gxd, float* ge);
void SegmentStd(const int64_t* off, int64_t segs, const float* x, int64_t d, float eps, float* y);
void SegmentStdBackward(const int64_t* off, int64_t segs, const float* x, const float* y,
                        const float* g, int64_t d, float* gx);

}  // namespace fg::ops::cpu
