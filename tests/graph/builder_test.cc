// Csr builders: deduplication, self loops, reverse edges, sorting, entry ids, thread independence.
#include "flexgraph/graph/builder.h"

#include <vector>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "gtest/gtest.h"

namespace fg::graph {
namespace {

//   0 -> 1, 0 -> 1 (duplicate), 2 -> 0, 1 -> 1 (loop), 3 -> 2
//
//   in-edges (rows = destinations) without loops/duplicates, with reverse edges:
//     0: {1, 2}   1: {0}   2: {0, 3}   3: {2}
const std::vector<int64_t> kSrc = {0, 0, 2, 1, 3};
const std::vector<int64_t> kDst = {1, 1, 0, 1, 2};

std::vector<int64_t> Offsets(const Csr& c) { return c.offsets.ToVector<int64_t>(); }
std::vector<int32_t> Cols(const Csr& c) { return c.indices.ToVector<int32_t>(); }

TEST(BuilderTest, DedupDropsLoopsAndAddsReverse) {
  CsrBuildOptions o{.deduplicate = true, .remove_self_loops = true, .add_reverse_edges = true};
  Tensor ids;
  auto c = BuildCsr(4, 4, kDst.data(), kSrc.data(), 5, nullptr, o, &ids);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Offsets(*c), (std::vector<int64_t>{0, 2, 3, 5, 6}));
  EXPECT_EQ(Cols(*c), (std::vector<int32_t>{1, 2, 0, 0, 3, 2}));
  // Row 0 <- 1 is edge 0 (0->1) reversed (id 5 + 0); its duplicate edge 1 is dropped.
  EXPECT_EQ(ids.ToVector<int64_t>(), (std::vector<int64_t>{5, 2, 0, 7, 4, 9}));
  EXPECT_TRUE(c->Validate().ok());
}

TEST(BuilderTest, KeepsDuplicatesAndLoopsWhenAsked) {
  CsrBuildOptions o{.deduplicate = false, .remove_self_loops = false};
  auto c = BuildCsr(4, 4, kDst.data(), kSrc.data(), 5, nullptr, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Offsets(*c), (std::vector<int64_t>{0, 1, 4, 5, 5}));
  EXPECT_EQ(Cols(*c), (std::vector<int32_t>{2, 0, 0, 1, 3}));
}

TEST(BuilderTest, AddsExactlyOneSelfLoopPerRow) {
  const std::vector<float> w = {1, 2, 3, 4, 5};
  CsrBuildOptions o{.deduplicate = true, .add_self_loops = true};
  auto c = BuildCsr(4, 4, kDst.data(), kSrc.data(), 5, w.data(), o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Offsets(*c), (std::vector<int64_t>{0, 2, 4, 6, 7}));
  EXPECT_EQ(Cols(*c), (std::vector<int32_t>{0, 2, 0, 1, 2, 3, 3}));
  EXPECT_EQ(c->values.ToVector<float>(), (std::vector<float>{1, 3, 1, 1, 1, 5, 1}));
}

TEST(BuilderTest, RejectsIdsOutsideTheMatrix) {
  const std::vector<int64_t> r = {0, 4}, col = {1, 1};
  auto c = BuildCsr(4, 4, r.data(), col.data(), 2, nullptr, {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("edge 1 (4, 1)"), std::string::npos);
  EXPECT_FALSE(BuildCsr(3, 4, r.data(), col.data(), 1, nullptr, {.add_reverse_edges = true}).ok());
}

TEST(BuilderTest, RelationDirectionsAreTransposesAndCarryEdgeFeatures) {
  // user 0 -> item 2, user 1 -> item 0, user 0 -> item 1 with features 10, 20, 30.
  const std::vector<int64_t> src = {0, 1, 0}, dst = {2, 0, 1};
  Tensor feat = Tensor::FromVector(std::vector<float>{10, 20, 30}, {3, 1});
  auto r = BuildRelation("user", "buys", "item", 2, 3, src.data(), dst.data(), 3, nullptr, feat, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->Key(), "user___buys___item");
  EXPECT_EQ(Cols(r->by_src), (std::vector<int32_t>{1, 2, 0}));
  EXPECT_EQ(r->edge_feat.ToVector<float>(), (std::vector<float>{30, 10, 20}));
  EXPECT_EQ(Offsets(r->by_dst), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(Cols(r->by_dst), (std::vector<int32_t>{1, 0, 0}));
  EXPECT_FALSE(r->symmetric);
}

TEST(BuilderTest, SameResultForAnyThreadCount) {
  const int64_t n = 5000, m = 60000;
  std::vector<int64_t> src(m), dst(m);
  RandomStream rng(11, 0);
  for (int64_t e = 0; e < m; ++e) {
    src[e] = rng.Below(n);
    dst[e] = rng.Below(e % 3 == 0 ? 10 : n);  // skewed: heavy rows
  }
  const int saved = NumThreads();
  std::vector<std::vector<int32_t>> results;
  for (int t : {1, 2, 4}) {
    SetNumThreads(t);
    Tensor ids;
    auto c = BuildCsr(n, n, dst.data(), src.data(), m, nullptr, {.add_reverse_edges = true}, &ids);
    ASSERT_TRUE(c.ok());
    std::vector<int32_t> v = Cols(*c);
    for (int64_t x : ids.ToVector<int64_t>()) v.push_back(static_cast<int32_t>(x));
    results.push_back(v);
  }
  SetNumThreads(saved);
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

}  // namespace
}  // namespace fg::graph
