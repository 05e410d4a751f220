// The datasets in ../shared/data, checked against their READMEs.
#include <set>
#include <string>

#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/summary.h"
#include "gtest/gtest.h"
#include "tests/graph/test_util.h"

namespace fg::graph {
namespace {

using testing::SharedData;

TEST(SharedDataTest, Cora) {
  auto ds = LoadDataset(SharedData("cora"), LoadOptions());
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->name, "cora");
  ASSERT_TRUE(ds->graph.IsHomogeneous());
  EXPECT_EQ(ds->graph.NumNodes("node"), 2708);
  const Csr& a = ds->Adjacency();
  EXPECT_EQ(a.num_rows, 2708);
  EXPECT_EQ(a.nnz(), 2 * 5278);  // 5278 undirected edges listed once, reverse edges added
  EXPECT_TRUE(a.Validate().ok());
  // Symmetric, sorted, no self loops.
  for (int64_t v = 0; v < a.num_rows; ++v) {
    for (int64_t e = a.row_ptr()[v]; e < a.row_ptr()[v + 1]; ++e) {
      ASSERT_NE(a.col()[e], v);
      if (e > a.row_ptr()[v]) {
        ASSERT_LT(a.col()[e - 1], a.col()[e]);
      }
      const int32_t u = a.col()[e];
      ASSERT_TRUE(std::binary_search(a.col() + a.row_ptr()[u], a.col() + a.row_ptr()[u + 1],
                                     static_cast<int32_t>(v)));
    }
  }
  EXPECT_EQ(ds->features.at("node").shape(), (Shape{2708, 1433}));
  EXPECT_EQ(ds->num_classes.at("node"), 7);
  EXPECT_EQ(ds->labels.at("node").shape(), (Shape{2708}));
  EXPECT_EQ(ds->split_name, "planetoid");
  const Split& s = ds->splits.at("node");
  EXPECT_EQ(s.train.numel(), 140);
  EXPECT_EQ(s.valid.numel(), 500);
  EXPECT_EQ(s.test.numel(), 1000);
  EXPECT_EQ(s.train.dtype(), DType::kInt64);
  EXPECT_EQ(ds->LabeledType(), "node");
  // Bag-of-words features are 0/1.
  const float* f = ds->features.at("node").f32();
  for (int64_t i = 0; i < 2708 * 1433; ++i) ASSERT_TRUE(f[i] == 0.0f || f[i] == 1.0f);
}

TEST(SharedDataTest, Imdb) {
  auto ds = LoadDataset(SharedData("imdb"), LoadOptions());
  ASSERT_TRUE(ds.ok()) << ds.status();
  const HeteroGraph& g = ds->graph;
  EXPECT_EQ(g.NumNodes("movie"), 4274);
  EXPECT_EQ(g.NumNodes("director"), 2079);
  EXPECT_EQ(g.NumNodes("actor"), 5252);
  const Relation* md = g.FindRelation("movie___directed_by___director");
  const Relation* ma = g.FindRelation("starring");
  ASSERT_NE(md, nullptr);
  ASSERT_NE(ma, nullptr);
  EXPECT_EQ(md->by_src.nnz(), 4274);
  EXPECT_EQ(md->by_dst.nnz(), 4274);
  EXPECT_EQ(md->by_dst.num_rows, 2079);
  EXPECT_EQ(ma->by_src.nnz(), 12822);
  EXPECT_TRUE(ma->by_dst.Validate().ok());
  for (const char* t : {"movie", "director", "actor"}) {
    EXPECT_EQ(ds->features.at(t).dim(1), 3065) << t;
  }
  EXPECT_EQ(ds->num_classes.at("movie"), 3);
  EXPECT_EQ(ds->LabeledType(), "movie");
  const Split& s = ds->splits.at("movie");
  EXPECT_EQ(s.train.numel(), 396);
  EXPECT_EQ(s.valid.numel(), 400);
  EXPECT_EQ(s.test.numel(), 3478);
}

TEST(SharedDataTest, LastFm) {
  auto ds = LoadDataset(SharedData("lastfm"), LoadOptions());
  ASSERT_TRUE(ds.ok()) << ds.status();
  const HeteroGraph& g = ds->graph;
  EXPECT_EQ(g.node_types, (std::vector<std::string>{"user", "artist", "tag"}));
  EXPECT_EQ(g.NumNodes("user"), 1892);
  EXPECT_EQ(g.NumNodes("artist"), 17632);
  EXPECT_EQ(g.NumNodes("tag"), 11945);
  const Relation* ua = g.FindRelation("user___listens___artist");
  ASSERT_NE(ua, nullptr);
  EXPECT_EQ(ua->by_src.nnz(), 92834);
  EXPECT_EQ(ua->edge_feat.shape(), (Shape{92834, 1}));
  EXPECT_EQ(g.FindRelation("user___friend___user")->by_src.nnz(), 12717);
  EXPECT_EQ(g.FindRelation("tagged")->by_src.nnz(), 108437);
  EXPECT_TRUE(ds->features.empty());
  const EdgeSplit& s = ds->edge_splits.at("user___listens___artist");
  EXPECT_EQ(s.train.shape(), (Shape{64984, 2}));
  EXPECT_EQ(s.valid.shape(), (Shape{9283, 2}));
  EXPECT_EQ(s.test.shape(), (Shape{18567, 2}));
  // The split's pairs are edges of the relation.
  const Csr& c = ua->by_src;
  for (int64_t k = 0; k < s.test.dim(0); k += 97) {
    const int64_t u = s.test.i64()[2 * k], a = s.test.i64()[2 * k + 1];
    EXPECT_TRUE(std::binary_search(c.col() + c.row_ptr()[u], c.col() + c.row_ptr()[u + 1],
                                   static_cast<int32_t>(a)));
  }
  const DatasetSummary sum = Summarize(*ds);
  EXPECT_EQ(sum.relations.size(), 3u);
  EXPECT_NE(sum.ToJson().find("\"user___listens___artist\""), std::string::npos);
}

}  // namespace
}  // namespace fg::graph
