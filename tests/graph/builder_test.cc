// Csr builders: deduplication, self loops, reverse edges, sorting, entry ids, thread independence,
// int64 column ids.
#include "flexgraph/graph/builder.h"

#include <limits>
#include <vector>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "gmock/gmock.h"
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

std::vector<int32_t> Narrowed(const std::vector<int64_t>& v) {
  return std::vector<int32_t>(v.begin(), v.end());
}

TEST(BuilderTest, Int64IdsGiveTheSameMatrixAsInt32Ids) {
  const int64_t n = 3000, m = 20000;
  std::vector<int64_t> src(m), dst(m);
  std::vector<float> w(m);
  RandomStream rng(5, 1);
  for (int64_t e = 0; e < m; ++e) {
    src[e] = rng.Below(n);
    dst[e] = rng.Below(e % 4 == 0 ? 7 : n);
    w[e] = static_cast<float>(e % 11);
  }
  for (CsrBuildOptions o : {CsrBuildOptions{.add_reverse_edges = true},
                            CsrBuildOptions{.deduplicate = false, .add_self_loops = true}}) {
    Tensor ids32, ids64;
    auto narrow = BuildCsr(n, n, dst.data(), src.data(), m, w.data(), o, &ids32);
    o.int64_indices = true;
    auto wide = BuildCsr(n, n, dst.data(), src.data(), m, w.data(), o, &ids64);
    ASSERT_TRUE(narrow.ok() && wide.ok());
    ASSERT_FALSE(narrow->has_int64_indices());
    ASSERT_TRUE(wide->has_int64_indices());
    EXPECT_TRUE(wide->Validate().ok());
    EXPECT_EQ(Offsets(*wide), Offsets(*narrow));
    EXPECT_EQ(Narrowed(wide->indices.ToVector<int64_t>()), Cols(*narrow));
    EXPECT_EQ(wide->values.ToVector<float>(), narrow->values.ToVector<float>());
    EXPECT_EQ(ids64.ToVector<int64_t>(), ids32.ToVector<int64_t>());
    // Narrowing and transposing agree with the int32 build.
    auto back = wide->WithInt32Indices();
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(Cols(*back), Cols(*narrow));
    Tensor perm32, perm64;
    const Csr t32 = narrow->Transpose(&perm32), t64 = wide->Transpose(&perm64);
    EXPECT_EQ(Offsets(t64), Offsets(t32));
    EXPECT_EQ(Cols(t64), Cols(t32));  // row ids fit int32
    EXPECT_EQ(perm64.ToVector<int32_t>(), perm32.ToVector<int32_t>());
    EXPECT_EQ(t64.values.ToVector<float>(), t32.values.ToVector<float>());
  }
}

TEST(BuilderTest, NodeTypesBeyondInt32GetInt64Ids) {
  // 3 users x 3 billion items: item ids do not fit int32.
  const int64_t items = 3000000000;
  const std::vector<int64_t> user = {0, 2, 2}, item = {items - 1, 5, 2147483648};
  auto c = BuildCsr(3, items, user.data(), item.data(), 3, nullptr, {});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->has_int64_indices());
  EXPECT_EQ(c->indices.ToVector<int64_t>(), (std::vector<int64_t>{items - 1, 5, 2147483648}));
  EXPECT_TRUE(c->Validate().ok());
  auto narrow = c->WithInt32Indices();
  ASSERT_FALSE(narrow.ok());
  EXPECT_THAT(std::string(narrow.status().message()),
              ::testing::HasSubstr("csr has 3000000000 columns, more than int32 column ids"));
  // An id beyond the columns is caught by Validate.
  Csr bad = Csr::FromInt64Vectors(1, 10, {0, 1}, {int64_t{1} << 40});
  EXPECT_THAT(std::string(bad.Validate().message()),
              ::testing::HasSubstr("column index 1099511627776 at entry 0 outside [0, 10)"));
}

TEST(BuilderTest, GraphsConvertToInt32IdsForTraining) {
  const std::vector<int64_t> src = {0, 1, 2}, dst = {1, 2, 0};
  CsrBuildOptions o{.add_reverse_edges = true, .int64_indices = true};
  auto g = BuildHomogeneousGraph(3, src.data(), dst.data(), 3, Tensor(), o);
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(g->relations[0].by_src.has_int64_indices());
  ASSERT_TRUE(g->ToInt32Indices().ok());
  const Relation& r = g->relations[0];
  EXPECT_FALSE(r.by_src.has_int64_indices());
  EXPECT_EQ(Cols(r.by_src), (std::vector<int32_t>{1, 2, 0, 2, 0, 1}));
  EXPECT_EQ(r.by_dst.indices.raw(), r.by_src.indices.raw());  // still shared
  // A relation whose node type is too large for int32 ids is named.
  const std::vector<int64_t> u = {0}, v = {4000000000};
  auto likes = BuildCsr(1, 5000000000, u.data(), v.data(), 1, nullptr, {});
  ASSERT_TRUE(likes.ok());
  HeteroGraph h;
  h.node_types = {"user", "item"};
  h.num_nodes = {1, 5000000000};
  Relation rel;
  rel.src_type = "user";
  rel.name = "likes";
  rel.dst_type = "item";
  rel.by_src = *likes;
  h.relations.push_back(rel);
  absl::Status s = h.ToInt32Indices();
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("relation user___likes___item: csr has "
                                                             "5000000000 columns"));
}

}  // namespace
}  // namespace fg::graph
