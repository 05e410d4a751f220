#include "flexgraph/graph/reorder.h"

#include <algorithm>
#include <numeric>

#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"

namespace fg::graph {

std::vector<int32_t> InversePermutation(const std::vector<int32_t>& perm) {
  std::vector<int32_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int32_t>(i);
  return inv;
}

std::vector<int32_t> DegreeSortOrder(const Csr& adj) {
  const int64_t n = adj.num_rows;
  std::vector<int32_t> order(n);  // order[new] = old
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t x, int32_t y) { return adj.degree(x) > adj.degree(y); });
  return InversePermutation(order);
}

std::vector<int32_t> RcmOrder(const Csr& adj) {
  FG_CHECK(adj.num_rows == adj.num_cols)
      << "RcmOrder: needs a square matrix, got " << adj.num_rows << " x " << adj.num_cols;
  const int64_t n = adj.num_rows;
  const int64_t* off = adj.row_ptr();
  const int32_t* col = adj.col();
  // Component roots in increasing (degree, id) order: each new BFS starts at a peripheral vertex.
  std::vector<int32_t> roots(n);
  std::iota(roots.begin(), roots.end(), 0);
  std::stable_sort(roots.begin(), roots.end(),
                   [&](int32_t x, int32_t y) { return adj.degree(x) < adj.degree(y); });
  std::vector<int32_t> order;  // order[k] = old id visited k-th
  order.reserve(n);
  std::vector<char> seen(n, 0);
  std::vector<int32_t> fresh;
  for (int32_t root : roots) {
    if (seen[root]) continue;
    seen[root] = 1;
    size_t head = order.size();
    order.push_back(root);
    for (; head < order.size(); ++head) {
      const int32_t v = order[head];
      fresh.clear();
      for (int64_t e = off[v]; e < off[v + 1]; ++e) {
        const int32_t u = col[e];
        if (!seen[u]) {
          seen[u] = 1;
          fresh.push_back(u);
        }
      }
      std::stable_sort(fresh.begin(), fresh.end(),
                       [&](int32_t x, int32_t y) { return adj.degree(x) < adj.degree(y); });
      order.insert(order.end(), fresh.begin(), fresh.end());
    }
  }
  std::reverse(order.begin(), order.end());
  return InversePermutation(order);
}

Csr PermuteCsr(const Csr& adj, const std::vector<int32_t>& new_id) {
  FG_CHECK(adj.num_rows == adj.num_cols && static_cast<int64_t>(new_id.size()) == adj.num_rows)
      << "PermuteCsr: " << adj.num_rows << " x " << adj.num_cols << " matrix, permutation of "
      << new_id.size();
  const int64_t n = adj.num_rows;
  const std::vector<int32_t> old_id = InversePermutation(new_id);
  const int64_t* off = adj.row_ptr();
  const int32_t* col = adj.col();
  const float* val = adj.val();
  Csr out;
  out.num_rows = out.num_cols = n;
  out.offsets = Tensor::Empty({n + 1}, DType::kInt64);
  int64_t* noff = out.offsets.i64();
  noff[0] = 0;
  for (int64_t r = 0; r < n; ++r) noff[r + 1] = noff[r] + adj.degree(old_id[r]);
  out.indices = Tensor::Empty({adj.nnz()}, DType::kInt32);
  if (val != nullptr) out.values = Tensor::Empty({adj.nnz()}, DType::kFloat32);
  int32_t* ncol = out.indices.i32();
  float* nval = val != nullptr ? out.values.f32() : nullptr;
  ParallelForDynamic(0, n, 1024, [&](int64_t r) {
    const int64_t src = off[old_id[r]], deg = noff[r + 1] - noff[r];
    if (nval == nullptr) {
      for (int64_t k = 0; k < deg; ++k) ncol[noff[r] + k] = new_id[col[src + k]];
      std::sort(ncol + noff[r], ncol + noff[r + 1]);
      return;
    }
    std::vector<std::pair<int32_t, float>> row(deg);
    for (int64_t k = 0; k < deg; ++k) row[k] = {new_id[col[src + k]], val[src + k]};
    std::stable_sort(row.begin(), row.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (int64_t k = 0; k < deg; ++k) {
      ncol[noff[r] + k] = row[k].first;
      nval[noff[r] + k] = row[k].second;
    }
  });
  return out;
}

}  // namespace fg::graph
