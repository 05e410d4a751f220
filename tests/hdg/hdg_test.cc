// HDG tests: flat and metapath builds on hand-drawn graphs, errors from bad selections, and
// identical results for any thread count.
#include <gtest/gtest.h>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "hdg/builder.h"

namespace fg::hdg {
namespace {

//   0 -- 1 -- 2      neighbours: 0:{1}, 1:{0,2,3}, 2:{1}, 3:{1}
//        |
//        3
std::vector<std::vector<int32_t>> Star() { return {{1}, {0, 2, 3}, {1}, {1}}; }

TEST(HdgBuilder, FlatLevelMatchesSelection) {
  auto nbrs = Star();
  HdgBuilder b(SchemaTree::Flat("neighbor", true), 4);
  auto hdg = b.Build({0, 1, 2, 3}, [&](int32_t r, NeighborWriter& out) {
    for (int32_t u : nbrs[r]) out.Add(u, 0.5f * (u + 1));
  });
  ASSERT_TRUE(hdg.ok()) << hdg.status();
  ASSERT_EQ(hdg->num_levels(), 1);
  const Csr& c = hdg->level(1).csr();
  EXPECT_EQ(c.offsets.ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 4, 5, 6}));
  EXPECT_EQ(c.indices.ToVector<int32_t>(), (std::vector<int32_t>{1, 0, 2, 3, 1, 1}));
  EXPECT_EQ(hdg->level(1).weights.ToVector<float>(),
            (std::vector<float>{1, 0.5f, 1.5f, 2, 1, 1}));
  EXPECT_EQ(hdg->level(1).block_arity, (std::vector<int64_t>{-1}));
  HdgStats s = hdg->Stats();
  EXPECT_EQ(s.nodes_per_level, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(s.arity_histogram[1], (std::vector<int64_t>{0, 3, 0, 1}));
  EXPECT_GT(hdg->Bytes(), 0u);
}

TEST(HdgBuilder, MetapathLevels) {
  // Two metapaths: A of length 3, B of length 2. Root 0: A{0,5,1}, A{0,6,2}, B{0,7}; root 1: B{1,8}.
  HdgBuilder b(SchemaTree::Metapaths({{"A", 3}, {"B", 2}}), 10);
  auto hdg = b.Build({0, 1}, [](int32_t r, NeighborWriter& out) {
    if (r == 0) {
      out.AddInstance(0, {0, 5, 1});
      out.AddInstance(0, {0, 6, 2});
      out.AddInstance(1, {0, 7});
    } else {
      out.AddInstance(1, {1, 8});
    }
  });
  ASSERT_TRUE(hdg.ok()) << hdg.status();
  ASSERT_EQ(hdg->num_levels(), 3);
  // Level 1: instances [A0, A1 | B0, B1].
  const HdgLevel& l1 = hdg->level(1);
  EXPECT_EQ(l1.type_offsets, (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(l1.block_arity, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(l1.csr().indices.ToVector<int32_t>(),
            (std::vector<int32_t>{0, 5, 1, 0, 6, 2, 0, 7, 1, 8}));
  // Level 2: groups (A, r0), (A, r1), (B, r0), (B, r1).
  const HdgLevel& l2 = hdg->level(2);
  EXPECT_EQ(l2.csr().offsets.ToVector<int64_t>(), (std::vector<int64_t>{0, 2, 2, 3, 4}));
  EXPECT_EQ(l2.csr().indices.ToVector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3}));
  // Level 3: root r's groups are r and 2 + r.
  EXPECT_EQ(hdg->level(3).csr().indices.ToVector<int32_t>(), (std::vector<int32_t>{0, 2, 1, 3}));
  EXPECT_EQ(hdg->level(3).block_arity, (std::vector<int64_t>{2}));
}

TEST(HdgBuilder, BadSelectionsAreErrorsNamingTheRoot) {
  HdgBuilder flat(SchemaTree::Flat(), 3);
  auto out_of_range = flat.Build({0, 1}, [](int32_t r, NeighborWriter& out) { out.Add(r + 5); });
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.status().message().find("root 0: neighbor 5 outside"), std::string::npos)
      << out_of_range.status();
  HdgBuilder mp(SchemaTree::Metapaths({{"A", 3}}), 5);
  auto wrong_len = mp.Build({0}, [](int32_t, NeighborWriter& out) { out.AddInstance(0, {0, 1}); });
  ASSERT_FALSE(wrong_len.ok());
  EXPECT_NE(wrong_len.status().message().find("has 2 vertices, expected 3"), std::string::npos);
  auto wrong_kind = mp.Build({0}, [](int32_t, NeighborWriter& out) { out.Add(1); });
  EXPECT_FALSE(wrong_kind.ok());
}

TEST(HdgBuilder, IdenticalForAnyThreadCount) {
  const int64_t n = 5000;
  auto select = [](int32_t r, NeighborWriter& out) {
    RandomStream rng(3, r);
    const int deg = static_cast<int>(rng.Below(7));
    for (int k = 0; k < deg; ++k) out.Add(static_cast<int32_t>(rng.Below(5000)), rng.Uniform());
  };
  std::vector<int32_t> roots(n);
  for (int64_t i = 0; i < n; ++i) roots[i] = static_cast<int32_t>(i);
  std::vector<std::vector<int32_t>> idx;
  std::vector<std::vector<float>> w;
  for (int threads : {1, 2, 3}) {
    SetNumThreads(threads);
    auto hdg = HdgBuilder(SchemaTree::Flat("n", true), n).Build(roots, select);
    ASSERT_TRUE(hdg.ok());
    idx.push_back(hdg->level(1).csr().indices.ToVector<int32_t>());
    w.push_back(hdg->level(1).weights.ToVector<float>());
  }
  SetNumThreads(2);
  EXPECT_EQ(idx[0], idx[1]);
  EXPECT_EQ(idx[0], idx[2]);
  EXPECT_EQ(w[0], w[2]);
}

}  // namespace
}  // namespace fg::hdg
