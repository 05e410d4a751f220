// RMAT generator, symmetric Csr builder and vertex reorderings: determinism across thread counts,
// the Graph500 shape (edge count, skewed degrees), and hand-checked small cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "flexgraph/base/parallel.h"
#include "flexgraph/graph/gen/rmat.h"
#include "flexgraph/graph/reorder.h"

namespace fg::graph {
namespace {

std::vector<int64_t> OutDegrees(int64_t n, const std::vector<Edge>& edges) {
  std::vector<int64_t> deg(n, 0);
  for (const auto& [u, v] : edges) {
    ++deg[u];
    ++deg[v];
  }
  return deg;
}

TEST(Rmat, EdgeCountAndRange) {
  RmatOptions opt{.scale = 10, .edge_factor = 16, .seed = 3};
  const auto edges = GenerateRmatEdges(opt);
  ASSERT_EQ(edges.size(), 16u * 1024u);
  for (const auto& [u, v] : edges) {
    ASSERT_GE(u, 0);
    ASSERT_LT(u, 1024);
    ASSERT_GE(v, 0);
    ASSERT_LT(v, 1024);
  }
}

TEST(Rmat, SameSeedSameEdgesForAnyThreadCount) {
  RmatOptions opt{.scale = 14, .edge_factor = 8, .seed = 42};
  std::vector<std::vector<Edge>> runs;
  for (int threads : {1, 2, 3}) {
    SetNumThreads(threads);
    runs.push_back(GenerateRmatEdges(opt));
  }
  SetNumThreads(2);
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
  opt.seed = 43;
  EXPECT_NE(GenerateRmatEdges(opt), runs[0]);
}

TEST(Rmat, DegreesAreSkewed) {
  RmatOptions opt{.scale = 14, .edge_factor = 16, .seed = 5};
  const auto deg = OutDegrees(int64_t{1} << opt.scale, GenerateRmatEdges(opt));
  const double mean = 2.0 * opt.edge_factor;
  const int64_t max_deg = *std::max_element(deg.begin(), deg.end());
  EXPECT_GT(max_deg, 20 * mean);  // Graph500 scale 14: the top vertex has ~1000+ edges
  // Many vertices get no edge at all (a uniform graph of this density would leave none).
  EXPECT_GT(std::count(deg.begin(), deg.end(), 0), (int64_t{1} << opt.scale) / 10);
}

TEST(Rmat, QuadrantFrequenciesFollowParameters) {
  // Without the permutation, the top bit of (u, v) is the first level's quadrant choice.
  RmatOptions opt{.scale = 8, .edge_factor = 64, .seed = 9, .permute = false};
  const auto edges = GenerateRmatEdges(opt);
  int64_t q[4] = {0, 0, 0, 0};
  for (const auto& [u, v] : edges) ++q[(u >> 7) * 2 + (v >> 7)];
  const double m = static_cast<double>(edges.size());
  EXPECT_NEAR(q[0] / m, 0.57, 0.02);
  EXPECT_NEAR(q[1] / m, 0.19, 0.02);
  EXPECT_NEAR(q[2] / m, 0.19, 0.02);
  EXPECT_NEAR(q[3] / m, 0.05, 0.02);
}

TEST(Rmat, PermutationRelabelsTheSameGraph) {
  RmatOptions opt{.scale = 9, .edge_factor = 4, .seed = 11, .permute = false};
  const auto plain = GenerateRmatEdges(opt);
  opt.permute = true;
  const auto permuted = GenerateRmatEdges(opt);
  const auto perm = RmatVertexPermutation(512, 11);
  std::vector<int32_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 512; ++i) ASSERT_EQ(sorted[i], i);
  ASSERT_EQ(plain.size(), permuted.size());
  for (size_t e = 0; e < plain.size(); ++e) {
    EXPECT_EQ(permuted[e], Edge(perm[plain[e].first], perm[plain[e].second]));
  }
}

//   0 - 1     edges (0,1) (1,0) (1,2) (2,2) (3,1) (1,3)
//   |         -> undirected {0-1, 1-2, 1-3}; the loop and the duplicates go
//   2  3 - 1
TEST(BuildSymmetricCsr, DropsLoopsAndDuplicatesAndSorts) {
  const std::vector<Edge> edges = {{0, 1}, {1, 0}, {1, 2}, {2, 2}, {3, 1}, {1, 3}};
  Csr a = BuildSymmetricCsr(5, edges);
  ASSERT_TRUE(a.Validate().ok());
  EXPECT_EQ(a.offsets.ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 4, 5, 6, 6}));
  EXPECT_EQ(a.indices.ToVector<int32_t>(), (std::vector<int32_t>{1, 0, 2, 3, 1, 1}));
}

TEST(BuildSymmetricCsr, MatchesSetReferenceForAnyThreadCount) {
  RmatOptions opt{.scale = 11, .edge_factor = 8, .seed = 2};
  const auto edges = GenerateRmatEdges(opt);
  const int64_t n = int64_t{1} << opt.scale;
  std::vector<std::set<int32_t>> ref(n);
  for (const auto& [u, v] : edges) {
    if (u == v) continue;
    ref[u].insert(v);
    ref[v].insert(u);
  }
  std::vector<int64_t> ref_off = {0};
  std::vector<int32_t> ref_idx;
  for (const auto& s : ref) {
    ref_idx.insert(ref_idx.end(), s.begin(), s.end());
    ref_off.push_back(static_cast<int64_t>(ref_idx.size()));
  }
  for (int threads : {1, 2, 3}) {
    SetNumThreads(threads);
    Csr a = BuildSymmetricCsr(n, edges);
    EXPECT_EQ(a.offsets.ToVector<int64_t>(), ref_off);
    EXPECT_EQ(a.indices.ToVector<int32_t>(), ref_idx);
  }
  SetNumThreads(2);
}

// Path 0 - 1 - 2 - 3 labelled out of order as 2 - 0 - 3 - 1.
Csr ScrambledPath() { return BuildSymmetricCsr(4, {{2, 0}, {0, 3}, {3, 1}}); }

bool IsPermutation(const std::vector<int32_t>& p) {
  std::vector<int32_t> s = p;
  std::sort(s.begin(), s.end());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != static_cast<int32_t>(i)) return false;
  }
  return true;
}

TEST(Reorder, RcmLaysAPathOutContiguously) {
  Csr a = ScrambledPath();
  const auto new_id = RcmOrder(a);
  ASSERT_TRUE(IsPermutation(new_id));
  Csr b = PermuteCsr(a, new_id);
  ASSERT_TRUE(b.Validate().ok());
  // Every edge joins consecutive ids: bandwidth 1.
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t e = b.row_ptr()[r]; e < b.row_ptr()[r + 1]; ++e) {
      EXPECT_EQ(std::abs(b.col()[e] - r), 1);
    }
  }
}

TEST(Reorder, DegreeSortPutsHubsFirstAndPermuteKeepsEdges) {
  // Star around 3 plus edge 0-1.
  Csr a = BuildSymmetricCsr(5, {{3, 0}, {3, 1}, {3, 2}, {3, 4}, {0, 1}});
  const auto new_id = DegreeSortOrder(a);
  ASSERT_TRUE(IsPermutation(new_id));
  EXPECT_EQ(new_id[3], 0);
  EXPECT_EQ(new_id[0], 1);  // degree 2, ties broken by old id
  EXPECT_EQ(new_id[1], 2);
  Csr b = PermuteCsr(a, new_id);
  ASSERT_EQ(b.nnz(), a.nnz());
  for (int64_t r = 0; r < 5; ++r) {
    ASSERT_EQ(b.degree(new_id[r]), a.degree(r));
    for (int64_t e = a.row_ptr()[r]; e < a.row_ptr()[r + 1]; ++e) {
      const int32_t* lo = b.col() + b.row_ptr()[new_id[r]];
      const int32_t* hi = b.col() + b.row_ptr()[new_id[r] + 1];
      EXPECT_TRUE(std::binary_search(lo, hi, new_id[a.col()[e]]));
    }
  }
  EXPECT_EQ(InversePermutation(new_id)[0], 3);
}

}  // namespace
}  // namespace fg::graph
