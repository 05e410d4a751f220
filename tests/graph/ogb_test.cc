// The OGB raw layout: small hand-written datasets, write/read round trips, and bad datasets that
// must fail with the file and line named (and no crash).
#include "flexgraph/graph/io/ogb.h"

#include <string>

#include "flexgraph/base/progress.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/io/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/test_util.h"

namespace fg::graph::io {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

//   0 - 1 - 2      3 (isolated), edges listed once, one duplicate (1,0)
void WriteToy(const TempDir& d) {
  d.Write("raw/num-node-list.csv.gz", "4\n");
  d.Write("raw/num-edge-list.csv.gz", "3\n");
  d.Write("raw/edge.csv.gz", "0,1\n1,2\n1,0\n");
  d.Write("raw/node-feat.csv.gz", "1,0\n0,1\n0.5,0.5\n-1,2e1\n");
  d.Write("raw/node-label.csv.gz", "0\n1\n1\nnan\n");
  d.Write("split/s/train.csv.gz", "0\n1\n");
  d.Write("split/s/valid.csv.gz", "2\n");
  d.Write("split/s/test.csv.gz", "3\n");
}

TEST(OgbTest, LoadsAHomogeneousToy) {
  TempDir d;
  WriteToy(d);
  auto ds = LoadDataset(d.path(), LoadOptions());
  ASSERT_TRUE(ds.ok()) << ds.status();
  const Csr& a = ds->Adjacency();
  EXPECT_EQ(a.offsets.ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 3, 4, 4}));
  EXPECT_EQ(a.indices.ToVector<int32_t>(), (std::vector<int32_t>{1, 0, 2, 1}));
  EXPECT_TRUE(ds->graph.relations[0].symmetric);
  EXPECT_EQ(ds->graph.relations[0].Key(), "node___edge___node");
  EXPECT_EQ(ds->features.at("node").ShapeString(), "[4, 2]");
  EXPECT_EQ(ds->features.at("node").f32()[7], 20.0f);
  EXPECT_EQ(ds->labels.at("node").ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 1, -1}));
  EXPECT_EQ(ds->num_classes.at("node"), 2);
  EXPECT_EQ(ds->split_name, "s");
  EXPECT_EQ(ds->splits.at("node").train.ToVector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ds->LabeledType(), "node");
  // Directed, with duplicates kept.
  LoadOptions directed;
  directed.add_reverse_edges = false;
  directed.deduplicate = false;
  auto dd = LoadDataset(d.path(), directed);
  ASSERT_TRUE(dd.ok());
  EXPECT_EQ(dd->graph.relations[0].by_src.indices.ToVector<int32_t>(), (std::vector<int32_t>{1, 0, 2}));
  EXPECT_EQ(dd->Adjacency().indices.ToVector<int32_t>(), (std::vector<int32_t>{1, 0, 1}));
}

TEST(OgbTest, HomogeneousRoundTrip) {
  TempDir d;
  auto ds = LoadDataset("sbm:nodes=500,classes=4,features=6,seed=2", LoadOptions());
  ASSERT_TRUE(ds.ok());
  ASSERT_TRUE(WriteOgb(*ds, d.path() + "/sbm").ok());
  auto back = LoadDataset(d.path() + "/sbm", LoadOptions());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->Adjacency().indices.ToVector<int32_t>(), ds->Adjacency().indices.ToVector<int32_t>());
  EXPECT_EQ(back->features.at("node").ToVector<float>(), ds->features.at("node").ToVector<float>());
  EXPECT_EQ(back->labels.at("node").ToVector<int64_t>(), ds->labels.at("node").ToVector<int64_t>());
  EXPECT_EQ(back->splits.at("node").test.ToVector<int64_t>(), ds->splits.at("node").test.ToVector<int64_t>());
  EXPECT_EQ(back->split_name, "random");
}

//   user 0,1   item 0,1,2: user___buys___item with an edge feature, link split on it,
//   labels on item
void WriteHetero(const TempDir& d) {
  d.Write("raw/num-node-dict.csv.gz", "user,item\n2,3\n");
  d.Write("raw/triplet-type-list.csv.gz", "user,buys,item\nuser,knows,user\n");
  d.Write("raw/relations/user___buys___item/edge.csv.gz", "0,2\n1,0\n0,1\n");
  d.Write("raw/relations/user___buys___item/num-edge-list.csv.gz", "3\n");
  d.Write("raw/relations/user___buys___item/edge-feat.csv.gz", "10\n20\n30\n");
  d.Write("raw/relations/user___knows___user/edge.csv.gz", "0,1\n");
  d.Write("raw/relations/user___knows___user/num-edge-list.csv.gz", "1\n");
  d.Write("raw/node-feat/item/node-feat.csv.gz", "1,2\n3,4\n5,6\n");
  d.Write("raw/node-label/item/node-label.csv.gz", "2\n0\n1\n");
  d.Write("split/x/item/train.csv.gz", "0\n");
  d.Write("split/x/item/test.csv.gz", "1\n2\n");
  d.Write("split/x/user___buys___item/train.csv.gz", "0,2\n");
  d.Write("split/x/user___buys___item/valid.csv.gz", "1,0\n");
  d.Write("split/x/user___buys___item/test.csv.gz", "0,1\n");
}

TEST(OgbTest, LoadsAHeterogeneousToyAndRoundTrips) {
  TempDir d;
  WriteHetero(d);
  auto ds = LoadDataset(d.path(), LoadOptions());
  ASSERT_TRUE(ds.ok()) << ds.status();
  const HeteroGraph& g = ds->graph;
  EXPECT_EQ(g.node_types, (std::vector<std::string>{"user", "item"}));
  EXPECT_EQ(g.NumNodes("item"), 3);
  const Relation* buys = g.FindRelation("buys");
  ASSERT_NE(buys, nullptr);
  EXPECT_EQ(buys, g.FindRelation("user___buys___item"));
  EXPECT_EQ(buys->by_src.indices.ToVector<int32_t>(), (std::vector<int32_t>{1, 2, 0}));
  EXPECT_EQ(buys->edge_feat.ToVector<float>(), (std::vector<float>{30, 10, 20}));
  EXPECT_EQ(buys->by_dst.indices.ToVector<int32_t>(), (std::vector<int32_t>{1, 0, 0}));
  EXPECT_EQ(ds->LabeledType(), "item");
  EXPECT_EQ(ds->num_classes.at("item"), 3);
  EXPECT_EQ(ds->splits.at("item").valid.numel(), 0);
  EXPECT_EQ(ds->edge_splits.at("user___buys___item").valid.ToVector<int64_t>(), (std::vector<int64_t>{1, 0}));
  TempDir out;
  ASSERT_TRUE(WriteOgb(*ds, out.path() + "/h").ok());
  auto back = LoadDataset(out.path() + "/h", LoadOptions());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->graph.FindRelation("buys")->edge_feat.ToVector<float>(), (std::vector<float>{30, 10, 20}));
  EXPECT_EQ(back->edge_splits.at("user___buys___item").test.ToVector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(back->features.at("item").ToVector<float>(), ds->features.at("item").ToVector<float>());
}

// --- bad datasets ---------------------------------------------------------------------------------

std::string LoadError(const TempDir& d) {
  auto ds = LoadDataset(d.path(), LoadOptions());
  EXPECT_FALSE(ds.ok());
  return ds.ok() ? std::string() : std::string(ds.status().message());
}

TEST(OgbBadInputTest, MissingFile) {
  TempDir d;
  WriteToy(d);
  std::filesystem::remove(d.path() + "/raw/edge.csv.gz");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/edge.csv.gz: file not found"));
  TempDir empty;
  EXPECT_THAT(LoadError(empty), HasSubstr("not a dataset directory"));
  EXPECT_THAT(std::string(LoadDataset("/no/such/dataset", {}).status().message()), HasSubstr("no such dataset"));
}

TEST(OgbBadInputTest, WrongColumnCount) {
  TempDir d;
  WriteToy(d);
  d.Write("raw/edge.csv.gz", "0,1\n1,2,3\n1,0\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/edge.csv.gz:2: expected 2 columns, found 3"));
  d.Write("raw/edge.csv.gz", "0,1\n1,2\n1,0\n");
  d.Write("raw/node-feat.csv.gz", "1,0\n0,1\n0.5\n-1,2\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/node-feat.csv.gz:3: expected 2 columns, found 1"));
}

TEST(OgbBadInputTest, NonNumericToken) {
  TempDir d;
  WriteToy(d);
  d.Write("raw/node-label.csv.gz", "0\n1\ncat\n0\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/node-label.csv.gz:3: column 1: 'cat' is not an integer"));
}

TEST(OgbBadInputTest, IdOutOfRange) {
  TempDir d;
  WriteToy(d);
  d.Write("raw/edge.csv.gz", "0,1\n1,4\n1,0\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/edge.csv.gz:2: column 2: node id 4 out of range [0, 4)"));
  d.Write("raw/edge.csv.gz", "0,1\n1,2\n1,0\n");
  d.Write("split/s/test.csv.gz", "3\n9\n");
  EXPECT_THAT(LoadError(d), HasSubstr("split/s/test.csv.gz:2: column 1: node id 9 out of range [0, 4)"));
}

TEST(OgbBadInputTest, NegativeId) {
  TempDir d;
  WriteToy(d);
  d.Write("raw/edge.csv.gz", "0,1\n-1,2\n1,0\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/edge.csv.gz:2: column 1: negative node id -1"));
}

TEST(OgbBadInputTest, CountsDisagreeWithData) {
  TempDir d;
  WriteToy(d);
  d.Write("raw/num-edge-list.csv.gz", "4\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/edge.csv.gz: has 3 rows but"));
  EXPECT_THAT(LoadError(d), HasSubstr("raw/num-edge-list.csv.gz:1 says 4 edges"));
  d.Write("raw/num-edge-list.csv.gz", "3\n");
  d.Write("raw/node-feat.csv.gz", "1,0\n0,1\n0.5,0.5\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/node-feat.csv.gz: has 3 rows but"));
}

TEST(OgbBadInputTest, AHugeNodeCountIsCheckedBeforeAllocating) {
  // 10^9 nodes would need gigabytes of graph arrays: the feature file's 4 rows refute it first.
  TempDir d;
  WriteToy(d);
  d.Write("raw/num-node-list.csv.gz", "1000000000\n");
  const int64_t before = PeakRssBytes();
  EXPECT_THAT(LoadError(d), HasSubstr("raw/node-feat.csv.gz: has 4 rows but"));
  EXPECT_LT(PeakRssBytes() - before, int64_t{256} << 20);
}

TEST(OgbBadInputTest, EmptyFile) {
  TempDir d;
  WriteToy(d);
  d.Write("raw/edge.csv.gz", "");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/edge.csv.gz:1: empty file"));
  d.Write("raw/edge.csv.gz", "0,1\n1,2\n1,0\n");
  d.Write("raw/num-node-list.csv.gz", "");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/num-node-list.csv.gz:1: empty file"));
}

TEST(OgbBadInputTest, TruncatedGzip) {
  TempDir d;
  WriteToy(d);
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "0,1\n";
  const std::string gz = io::GzipCompress(big);
  d.Write("raw/edge.csv", "");
  std::filesystem::remove(d.path() + "/raw/edge.csv");
  ASSERT_TRUE(WriteStringToFile(d.path() + "/raw/edge.csv.gz", gz.substr(0, gz.size() - 10)).ok());
  EXPECT_THAT(LoadError(d), HasSubstr("raw/edge.csv.gz: truncated gzip stream"));
}

TEST(OgbBadInputTest, HeterogeneousErrors) {
  TempDir d;
  WriteHetero(d);
  d.Write("raw/triplet-type-list.csv.gz", "user,buys,item\nuser,knows,robot\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/triplet-type-list.csv.gz:2: column 3: unknown node type 'robot'"));
  d.Write("raw/triplet-type-list.csv.gz", "user,buys,item\nuser,knows,user\n");
  d.Write("raw/relations/user___buys___item/edge.csv.gz", "0,2\n2,0\n0,1\n");
  EXPECT_THAT(LoadError(d), HasSubstr("user___buys___item/edge.csv.gz:2: column 1: user id 2 out of range [0, 2)"));
  d.Write("raw/relations/user___buys___item/edge.csv.gz", "0,2\n1,0\n0,1\n");
  d.Write("raw/num-node-dict.csv.gz", "user,item\n2,x\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/num-node-dict.csv.gz:2: column 2: bad node count 'x'"));
  d.Write("raw/num-node-dict.csv.gz", "user,item\n2\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/num-node-dict.csv.gz:2: expected 2 columns, found 1"));
  d.Write("raw/num-node-dict.csv.gz", "user,item\n2,3\n");
  d.Write("split/x/item/train.csv.gz", "0,1\n");
  EXPECT_THAT(LoadError(d), HasSubstr("split/x/item/train.csv.gz:1: expected 1 columns, found 2"));
}

}  // namespace
}  // namespace fg::graph::io
