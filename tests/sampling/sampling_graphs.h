// Test helpers of the sampling tests: small neighbourhood matrices and batch comparisons.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "flexgraph/base/rng.h"
#include "hdg/builder.h"
#include "sampling/sampler.h"

namespace fg::sampling {

// Adjacency lists with optional weights: nbrs[v] = {(u, w), ...}.
using Lists = std::vector<std::vector<std::pair<int32_t, float>>>;

inline NeighbourhoodMatrix MatrixOf(const Lists& nbrs, bool weighted) {
  const int64_t n = static_cast<int64_t>(nbrs.size());
  std::vector<int32_t> roots(n);
  for (int64_t v = 0; v < n; ++v) roots[v] = static_cast<int32_t>(v);
  auto hdg = hdg::HdgBuilder(hdg::SchemaTree::Flat("neighbor", weighted), n)
                 .Build(roots, [&](int32_t v, hdg::NeighborWriter& out) {
                   for (auto [u, w] : nbrs[v]) out.Add(u, w);
                 });
  EXPECT_TRUE(hdg.ok()) << hdg.status();
  auto m = NeighbourhoodMatrix::Create(std::make_shared<const hdg::Hdg>(std::move(*hdg)), n);
  EXPECT_TRUE(m.ok()) << m.status();
  return std::move(*m);
}

// A random graph of n vertices, each with 1..max_degree distinct neighbours and random weights.
inline Lists RandomLists(int64_t n, int max_degree, uint64_t seed) {
  Lists nbrs(n);
  RandomStream rng(seed, 1);
  for (int64_t v = 0; v < n; ++v) {
    std::set<int32_t> seen;
    const int d = 1 + static_cast<int>(rng.Below(max_degree));
    while (static_cast<int>(seen.size()) < d) seen.insert(static_cast<int32_t>(rng.Below(n)));
    for (int32_t u : seen) nbrs[v].push_back({u, 0.1f + rng.Uniform()});
  }
  return nbrs;
}

inline std::vector<Tensor> Repeat(std::vector<int64_t> seeds, int64_t times) {
  return std::vector<Tensor>(times, Tensor::FromVector(seeds));
}

// Global ids of block b's level-1 children of root j, and their weights.
inline std::vector<std::pair<int64_t, float>> Kept(const Block& b, int64_t j) {
  const hdg::HdgLevel& l = b.hdg->level(1);
  std::vector<std::pair<int64_t, float>> out;
  for (int64_t e = l.csr().row_ptr()[j]; e < l.csr().row_ptr()[j + 1]; ++e) {
    out.push_back({b.table.i64()[l.csr().col()[e]], l.weights.defined() ? l.weights.f32()[e] : 1.0f});
  }
  return out;
}

// The same graph with its vertices spread over a space of 8M, keyed by their old ids: rows are found
// through a map.
inline constexpr int64_t kSpace = int64_t{1} << 23;
inline int64_t Spread(int64_t v) { return v * 7919 % kSpace; }  // one to one: 7919 is odd
inline NeighbourhoodMatrix SpreadMatrix(const Lists& nbrs) {
  const int64_t n = static_cast<int64_t>(nbrs.size());
  std::vector<int32_t> roots(n);
  std::vector<int64_t> keys(n);
  for (int64_t v = 0; v < n; ++v) roots[v] = static_cast<int32_t>(Spread(v)), keys[v] = v;
  auto hdg = hdg::HdgBuilder(hdg::SchemaTree::Flat("neighbor", true), kSpace)
                 .Build(roots, [&](int32_t root, hdg::NeighborWriter& out) {
                   const int64_t v = std::find(roots.begin(), roots.end(), root) - roots.begin();
                   for (auto [u, w] : nbrs[v]) out.Add(static_cast<int32_t>(Spread(u)), w);
                 });
  EXPECT_TRUE(hdg.ok()) << hdg.status();
  auto m = NeighbourhoodMatrix::Create(std::make_shared<const hdg::Hdg>(std::move(*hdg)), kSpace,
                                       Tensor::FromVector(keys));
  EXPECT_TRUE(m.ok()) << m.status();
  return std::move(*m);
}

// a and b hold the same batches: indices, tables, levels and weights.
inline void ExpectSameBatches(const std::vector<MiniBatch>& a, const std::vector<MiniBatch>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].blocks.size(), b[k].blocks.size());
    EXPECT_EQ(a[k].index, b[k].index);
    EXPECT_EQ(a[k].sampled_edges, b[k].sampled_edges);
    for (size_t l = 0; l < a[k].blocks.size(); ++l) {
      const Block &x = a[k].blocks[l], &y = b[k].blocks[l];
      EXPECT_EQ(x.table.ToVector<int64_t>(), y.table.ToVector<int64_t>()) << "batch " << k << " layer " << l;
      const hdg::HdgLevel &lx = x.hdg->level(1), &ly = y.hdg->level(1);
      EXPECT_EQ(lx.csr().offsets.ToVector<int64_t>(), ly.csr().offsets.ToVector<int64_t>());
      EXPECT_EQ(lx.csr().indices.ToVector<int32_t>(), ly.csr().indices.ToVector<int32_t>());
      ASSERT_EQ(lx.weights.defined(), ly.weights.defined());
      if (lx.weights.defined()) {
        EXPECT_EQ(lx.weights.ToVector<float>(), ly.weights.ToVector<float>());
      }
    }
  }
}

}  // namespace fg::sampling
