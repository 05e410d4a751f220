// Datasets of many graphs: the OGB graph-property layout read into Dataset::graphs (union graph,
// offsets, edge ids, edge features and labels, graph labels, whole-graph splits), bad inputs named
// by file, line and graph, and round trips through the OGB writer and the binary cache.
#include "flexgraph/graph/graph_set.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "flexgraph/graph/builder.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/io/cache.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/ogb.h"
#include "flexgraph/graph/summary.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/test_util.h"

namespace fg::graph {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

// Three graphs: a path 0-1-2 (3 nodes), one edge 0->1 (2 nodes), and 4 nodes with a self loop
// on local node 3 and a duplicate edge. Edge ids 0..6 in file order.
void WriteThreeGraphs(const TempDir& d) {
  d.Write("raw/num-node-list.csv.gz", "3\n2\n4\n");
  d.Write("raw/num-edge-list.csv.gz", "2\n1\n4\n");
  d.Write("raw/edge.csv.gz", "0,1\n1,2\n0,1\n0,3\n3,3\n2,1\n0,3\n");
  d.Write("raw/edge-feat.csv.gz", "0,0.5\n1,1.5\n2,2.5\n3,3.5\n4,4.5\n5,5.5\n6,6.5\n");
  d.Write("raw/edge-label.csv.gz", "1\n0\n1\nnan\n0\n1\n0\n");
  d.Write("raw/node-feat.csv.gz", "0\n1\n2\n3\n4\n5\n6\n7\n8\n");
  d.Write("raw/graph-label.csv.gz", "1\n0\nnan\n");
  d.Write("split/scaffold/train.csv.gz", "0\n2\n");
  d.Write("split/scaffold/valid.csv.gz", "1\n");
  d.Write("split/scaffold/test.csv.gz", "");
}

std::string LoadError(const TempDir& d, const LoadOptions& o = LoadOptions()) {
  auto ds = LoadDataset(d.path(), o);
  EXPECT_FALSE(ds.ok());
  return ds.ok() ? "" : std::string(ds.status().message());
}

TEST(GraphSetTest, LoadsTheGraphPropertyLayout) {
  TempDir d;
  WriteThreeGraphs(d);
  auto ds = LoadDataset(d.path(), LoadOptions());
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_TRUE(ds->IsGraphSet());
  const GraphSet& gs = *ds->graphs;
  EXPECT_TRUE(ValidateGraphSet(*ds).ok()) << ValidateGraphSet(*ds);
  EXPECT_EQ(gs.num_graphs(), 3);
  EXPECT_EQ(gs.node_offsets.ToVector<int64_t>(), (std::vector<int64_t>{0, 3, 5, 9}));
  EXPECT_EQ(gs.edge_offsets.ToVector<int64_t>(), (std::vector<int64_t>{0, 2, 3, 7}));
  EXPECT_EQ(gs.edges.ToVector<int64_t>(),
            (std::vector<int64_t>{0, 1, 1, 2, 3, 4, 5, 8, 8, 8, 7, 6, 5, 8}));
  EXPECT_EQ(ds->graph.num_nodes[0], 9);
  EXPECT_EQ(gs.GraphOfNode(0), 0);
  EXPECT_EQ(gs.GraphOfNode(4), 1);
  EXPECT_EQ(gs.GraphOfNode(8), 2);
  EXPECT_EQ(gs.edge_feat.ShapeString(), "[7, 2]");
  EXPECT_EQ(gs.edge_labels.ToVector<int64_t>(), (std::vector<int64_t>{1, 0, 1, -1, 0, 1, 0}));
  EXPECT_EQ(gs.num_edge_classes, 2);
  EXPECT_EQ(gs.graph_labels.ToVector<int64_t>(), (std::vector<int64_t>{1, 0, -1}));
  EXPECT_EQ(gs.num_graph_classes, 2);
  EXPECT_EQ(ds->split_name, "scaffold");
  EXPECT_EQ(gs.train.ToVector<int64_t>(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(gs.valid.ToVector<int64_t>(), (std::vector<int64_t>{1}));
  EXPECT_EQ(gs.test.numel(), 0);
  EXPECT_TRUE(ds->splits.empty());
  EXPECT_EQ(ds->features.at("node").ShapeString(), "[9, 1]");
  // Undirected union (defaults): loop dropped, duplicate (5, 8) kept once; 5 distinct edges.
  const Csr& a = ds->Adjacency();
  EXPECT_EQ(a.nnz(), 10);
  EXPECT_TRUE(ds->graph.relations[0].symmetric);
  EXPECT_FALSE(ds->graph.relations[0].edge_feat.defined());
  // Entry ids: every entry maps back to its edge; reverse entries to M + k.
  const std::vector<int64_t> ids = gs.entry_edges.ToVector<int64_t>();
  const std::vector<int64_t> off = a.offsets.ToVector<int64_t>();
  const std::vector<int32_t> col = a.indices.ToVector<int32_t>();
  for (int64_t r = 0; r < 9; ++r) {
    for (int64_t x = off[r]; x < off[r + 1]; ++x) {
      const int64_t k = ids[x] % 7;
      const bool reversed = ids[x] >= 7;
      EXPECT_EQ(gs.edges.i64()[2 * k + (reversed ? 1 : 0)], col[x]) << "entry " << x;
      EXPECT_EQ(gs.edges.i64()[2 * k + (reversed ? 0 : 1)], r) << "entry " << x;
    }
  }
  // Graph 1's entries are its vertices' rows: 3 <-> 4, edge 2 both ways.
  EXPECT_EQ(off[5] - off[3], 2);
  // Per-entry features gathered by edge id.
  Tensor per_entry = GatherEntryRows(gs.edge_feat, gs.entry_edges, gs.num_edges());
  for (int64_t x = 0; x < a.nnz(); ++x) EXPECT_EQ(per_entry.f32()[2 * x], ids[x] % 7);
  const DatasetSummary summary = Summarize(*ds);
  EXPECT_THAT(summary.ToText(), HasSubstr("graphs: 3 (split: train 2, valid 1, test 0)"));
  EXPECT_THAT(summary.ToText(), HasSubstr("edge classes: 2 (edges per class: 3 3)"));
  EXPECT_THAT(summary.ToJson(), HasSubstr("\"graph_set\": {\"graphs\": 3"));
  EXPECT_FALSE(summary.graph_set->construction.has_value());
  const GraphSizeStats st = SizeStats(gs);
  EXPECT_EQ(st.min_nodes, 2);
  EXPECT_EQ(st.max_nodes, 4);
  EXPECT_EQ(st.median_edges, 2);
  EXPECT_DOUBLE_EQ(st.mean_nodes, 3.0);
}

TEST(GraphSetTest, DirectedLoadKeepsEveryEdge) {
  TempDir d;
  WriteThreeGraphs(d);
  LoadOptions o;
  o.add_reverse_edges = false;
  o.deduplicate = false;
  o.remove_self_loops = false;
  auto ds = LoadDataset(d.path(), o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->Adjacency().nnz(), 7);
  EXPECT_FALSE(ds->graph.relations[0].symmetric);
  EXPECT_EQ(ds->graph.relations[0].by_src.nnz(), 7);
  std::vector<int64_t> ids = ds->graphs->entry_edges.ToVector<int64_t>();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(ValidateGraphSet(*ds).ok()) << ValidateGraphSet(*ds);
}

TEST(GraphSetTest, OneGraphWithoutGraphLevelFilesStaysASingleGraph) {
  TempDir d;
  d.Write("raw/num-node-list.csv.gz", "3\n");
  d.Write("raw/num-edge-list.csv.gz", "2\n");
  d.Write("raw/edge.csv.gz", "0,1\n1,2\n");
  d.Write("split/s/train.csv.gz", "0\n2\n");
  auto ds = LoadDataset(d.path(), LoadOptions());
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_FALSE(ds->IsGraphSet());
  EXPECT_EQ(ds->splits.at("node").train.ToVector<int64_t>(), (std::vector<int64_t>{0, 2}));
  // With edge labels it is a graph set of one graph.
  d.Write("raw/edge-label.csv.gz", "1\n0\n");
  d.Write("split/s/train.csv.gz", "0\n");
  auto one = LoadDataset(d.path(), LoadOptions());
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(one->IsGraphSet());
  EXPECT_EQ(one->graphs->num_graphs(), 1);
  EXPECT_EQ(one->graphs->edge_labels.ToVector<int64_t>(), (std::vector<int64_t>{1, 0}));
}

TEST(GraphSetTest, RealGraphLabelsAreRegressionTargets) {
  TempDir d;
  WriteThreeGraphs(d);
  d.Write("raw/graph-label.csv.gz", "0.5,1\n-2.25,nan\n3,4\n");
  auto ds = LoadDataset(d.path(), LoadOptions());
  ASSERT_TRUE(ds.ok()) << ds.status();
  const Tensor& y = ds->graphs->graph_labels;
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  EXPECT_EQ(y.ShapeString(), "[3, 2]");
  EXPECT_EQ(y.f32()[2], -2.25f);
  EXPECT_EQ(ds->graphs->num_graph_classes, 0);
}

TEST(GraphSetTest, BadInputIsNamedByFileLineAndGraph) {
  TempDir d;
  WriteThreeGraphs(d);
  // Line 3 is graph 1's only edge; graph 1 has 2 nodes.
  d.Write("raw/edge.csv.gz", "0,1\n1,2\n0,2\n0,3\n3,3\n2,1\n0,3\n");
  EXPECT_THAT(LoadError(d),
              HasSubstr("raw/edge.csv.gz:3: node id 2 out of range [0, 2) of graph 1"));
  WriteThreeGraphs(d);
  d.Write("raw/edge-label.csv.gz", "1\n0\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/edge-label.csv.gz: has 2 rows but"));
  WriteThreeGraphs(d);
  d.Write("raw/edge-label.csv.gz", "1\n0\n1\n-3\n0\n1\n0\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/edge-label.csv.gz:4"));
  WriteThreeGraphs(d);
  d.Write("raw/graph-label.csv.gz", "1\n0\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/graph-label.csv.gz: has 2 rows but"));
  WriteThreeGraphs(d);
  d.Write("split/scaffold/valid.csv.gz", "1\n3\n");
  EXPECT_THAT(LoadError(d), HasSubstr("split/scaffold/valid.csv.gz:2"));
  WriteThreeGraphs(d);
  d.Write("raw/num-edge-list.csv.gz", "2\n1\n");
  EXPECT_THAT(LoadError(d), HasSubstr("lists 3 graphs but"));
  WriteThreeGraphs(d);
  d.Write("raw/num-edge-list.csv.gz", "2\n1\n5\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/edge.csv.gz: has 7 rows but"));
  WriteThreeGraphs(d);
  d.Write("raw/node-feat.csv.gz", "0\n1\n");
  EXPECT_THAT(LoadError(d), HasSubstr("raw/node-feat.csv.gz: has 2 rows"));
}

void ExpectSameGraphSet(const Dataset& a, const Dataset& b) {
  ASSERT_TRUE(b.IsGraphSet());
  const GraphSet& x = *a.graphs;
  const GraphSet& y = *b.graphs;
  EXPECT_EQ(x.node_offsets.ToVector<int64_t>(), y.node_offsets.ToVector<int64_t>());
  EXPECT_EQ(x.edge_offsets.ToVector<int64_t>(), y.edge_offsets.ToVector<int64_t>());
  EXPECT_EQ(x.edges.ToVector<int64_t>(), y.edges.ToVector<int64_t>());
  EXPECT_EQ(x.entry_edges.ToVector<int64_t>(), y.entry_edges.ToVector<int64_t>());
  EXPECT_EQ(x.edge_feat.ToVector<float>(), y.edge_feat.ToVector<float>());
  EXPECT_EQ(x.edge_labels.ToVector<int64_t>(), y.edge_labels.ToVector<int64_t>());
  EXPECT_EQ(x.graph_labels.ToVector<int64_t>(), y.graph_labels.ToVector<int64_t>());
  EXPECT_EQ(x.num_edge_classes, y.num_edge_classes);
  EXPECT_EQ(x.num_graph_classes, y.num_graph_classes);
  EXPECT_EQ(x.train.ToVector<int64_t>(), y.train.ToVector<int64_t>());
  EXPECT_EQ(x.valid.ToVector<int64_t>(), y.valid.ToVector<int64_t>());
  EXPECT_EQ(x.test.numel(), y.test.numel());
  EXPECT_EQ(a.Adjacency().indices.ToVector<int32_t>(), b.Adjacency().indices.ToVector<int32_t>());
  EXPECT_EQ(a.features.at("node").ToVector<float>(), b.features.at("node").ToVector<float>());
  EXPECT_EQ(a.split_name, b.split_name);
}

TEST(GraphSetTest, OgbWriterRoundTrip) {
  TempDir d;
  WriteThreeGraphs(d);
  auto ds = LoadDataset(d.path(), LoadOptions());
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_TRUE(io::WriteOgb(*ds, d.path() + "/copy").ok());
  auto back = LoadDataset(d.path() + "/copy", LoadOptions());
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSameGraphSet(*ds, *back);
}

TEST(GraphSetTest, CacheRoundTripKeepsEveryField) {
  TempDir d;
  WriteThreeGraphs(d);
  auto ds = LoadDataset(d.path(), LoadOptions());
  ASSERT_TRUE(ds.ok()) << ds.status();
  // Side tables as a tracking dataset has them.
  ds->graphs->node_info[kHitLayer] =
      Tensor::FromVector(std::vector<int64_t>{0, 1, 2, 0, 1, 0, 1, 2, 3});
  ds->graphs->node_info[kHitParticle] =
      Tensor::FromVector(std::vector<int64_t>{0, 0, -1, 1, 1, 2, 2, 3, -1});
  ds->graphs->particle_offsets = Tensor::FromVector(std::vector<int64_t>{0, 1, 2, 4});
  ds->graphs->particles[kParticlePt] = Tensor::FromVector(std::vector<float>{1.5f, 0.7f, 2, 3});
  ASSERT_TRUE(ValidateGraphSet(*ds).ok()) << ValidateGraphSet(*ds);
  const std::string path = d.path() + "/three.fgc";
  ASSERT_TRUE(io::WriteCache(*ds, path).ok());
  auto back = io::ReadCache(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSameGraphSet(*ds, *back);
  EXPECT_EQ(back->graphs->node_info.at(kHitParticle).ToVector<int64_t>(),
            ds->graphs->node_info.at(kHitParticle).ToVector<int64_t>());
  EXPECT_EQ(back->graphs->particles.at(kParticlePt).ToVector<float>(),
            (std::vector<float>{1.5f, 0.7f, 2, 3}));
  EXPECT_EQ(back->graphs->particle_offsets.ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 4}));
  // Through LoadDataset's cache directory: the second load reads the cache.
  LoadOptions cached;
  cached.cache_dir = d.path() + "/cache";
  auto first = LoadDataset(d.path(), cached);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(io::ListDirectory(cached.cache_dir).size(), 1u);
  auto second = LoadDataset(d.path(), cached);
  ASSERT_TRUE(second.ok()) << second.status();
  ExpectSameGraphSet(*first, *second);
}

TEST(GraphSetTest, CacheRefusesBrokenGraphSets) {
  TempDir d;
  WriteThreeGraphs(d);
  auto ds = LoadDataset(d.path(), LoadOptions());
  ASSERT_TRUE(ds.ok()) << ds.status();
  Dataset bad = *ds;
  bad.graphs->entry_edges = bad.graphs->entry_edges.Clone();
  bad.graphs->entry_edges.i64()[0] = 3;  // entry 0 is not edge 3
  auto r = io::ParseCache(io::EncodeCache(bad), "bad.fgc");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("bad.fgc: corrupt cache: graph set: entry_edges"));
  bad = *ds;
  bad.graphs->train = Tensor::FromVector(std::vector<int64_t>{0, 3});
  r = io::ParseCache(io::EncodeCache(bad), "bad.fgc");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("train: graph id 3 outside [0, 3)"));
}

TEST(GraphSetTest, OldCacheVersionsLoadAndNewerAreRefused) {
  auto ds = LoadDataset("sbm:nodes=200,classes=3,features=4,seed=3", LoadOptions());
  ASSERT_TRUE(ds.ok());
  std::string image = io::EncodeCache(*ds);
  uint32_t version = 1;
  std::memcpy(image.data() + 8, &version, 4);
  auto v1 = io::ParseCache(image, "v1.fgc", /*verify_checksums=*/false);
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_FALSE(v1->IsGraphSet());
  EXPECT_EQ(v1->Adjacency().nnz(), ds->Adjacency().nnz());
  version = io::kCacheVersion + 1;
  std::memcpy(image.data() + 8, &version, 4);
  auto v3 = io::ParseCache(image, "v3.fgc", /*verify_checksums=*/false);
  ASSERT_FALSE(v3.ok());
  EXPECT_THAT(std::string(v3.status().message()), HasSubstr("rebuild the cache"));
}

}  // namespace
}  // namespace fg::graph
