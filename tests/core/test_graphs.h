// Test helper: small random CSR matrices with empty rows and skewed degrees.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "flexgraph/base/rng.h"
#include "flexgraph/tensor/csr.h"

namespace fg::testing {

// rows x cols; row degrees drawn from {0, 1, ..} with a few heavy rows when skewed. No duplicate
// columns within a row (sorted).
inline Csr RandomCsr(int64_t rows, int64_t cols, int max_degree, bool skewed, uint64_t seed) {
  RandomStream rng(seed, 3);
  std::vector<int64_t> off = {0};
  std::vector<int32_t> idx;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t deg = static_cast<int64_t>(rng.Below(max_degree + 1));
    if (skewed && r % 17 == 0) deg = std::min<int64_t>(cols, max_degree * 20);
    if (r % 5 == 1) deg = 0;  // empty rows
    deg = std::min<int64_t>(deg, cols);
    std::vector<int32_t> row;
    while (static_cast<int64_t>(row.size()) < deg) {
      const int32_t c = static_cast<int32_t>(rng.Below(cols));
      if (std::find(row.begin(), row.end(), c) == row.end()) row.push_back(c);
    }
    std::sort(row.begin(), row.end());
    idx.insert(idx.end(), row.begin(), row.end());
    off.push_back(static_cast<int64_t>(idx.size()));
  }
  return Csr::FromVectors(rows, cols, off, idx);
}

// A hand-checkable matrix and table:
//   row 0: cols {0, 2}     x = [[1, 2],
//   row 1: {}                   [3, 4],
//   row 2: cols {1}             [5, 6]]
inline Csr Tiny() { return Csr::FromVectors(3, 3, {0, 2, 2, 3}, {0, 2, 1}); }
inline Tensor TinyX() { return Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {3, 2}); }

inline SparseMatrixPtr Shared(Csr c) { return std::make_shared<SparseMatrix>(std::move(c)); }

}  // namespace fg::testing
