// The filter stage's dataset writer on a hand-made set of two events whose answer is worked out
// below: the kept edges with their features and labels, the dropped true edges counted at their
// source hits (and added to by a second stage), the cut for an efficiency, the tracking metrics
// counting the dropped true edges as lost, and the .fgc cache keeping it all.
#include "flexgraph/graph/edge_filter.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "flexgraph/graph/io/cache.h"
#include "flexgraph/graph/track_building.h"
#include "flexgraph/graph/tracking.h"

namespace fg::graph {
namespace {

// Event 0: hits 0-5, particles A (hits 0, 1, 2) and B (3, 4), noise 5. Event 1: hits 6-9,
// particle C (6, 7, 8), noise 9. Edge k has features (k, 10 k) and the score below.
struct Edge {
  int64_t a, b, label;
  float score;
};
const std::vector<Edge> kEdges = {
    {0, 1, 1, 0.9f},  {1, 2, 1, 0.2f},  {0, 4, 0, 0.1f}, {3, 4, 1, 0.8f}, {1, 5, 0, 0.7f},
    {5, 2, 0, 0.05f}, {6, 7, 1, 0.95f}, {7, 8, 1, 0.6f}, {6, 9, 0, 0.3f}, {9, 8, 0, 0.01f}};

Dataset Events() {
  Dataset ds;
  ds.name = "hand-made events";
  GraphSet& gs = ds.graphs.emplace();
  const int64_t n = 10, m = static_cast<int64_t>(kEdges.size());
  gs.node_offsets = Tensor::FromVector(std::vector<int64_t>{0, 6, 10});
  gs.edge_offsets = Tensor::FromVector(std::vector<int64_t>{0, 6, 10});
  std::vector<int64_t> edges, labels;
  std::vector<float> feat;
  for (int64_t k = 0; k < m; ++k) {
    edges.insert(edges.end(), {kEdges[k].a, kEdges[k].b});
    labels.push_back(kEdges[k].label);
    feat.insert(feat.end(), {static_cast<float>(k), 10.0f * k});
  }
  gs.edges = Tensor::FromVector(edges).Reshape({m, 2});
  gs.edge_labels = Tensor::FromVector(labels);
  gs.num_edge_classes = 2;
  gs.edge_feat = Tensor::FromVector(feat).Reshape({m, 2});
  gs.train = Tensor::FromVector(std::vector<int64_t>{0});
  gs.test = Tensor::FromVector(std::vector<int64_t>{1});
  gs.node_info[kHitParticle] =
      Tensor::FromVector(std::vector<int64_t>{0, 0, 0, 1, 1, -1, 2, 2, 2, -1});
  gs.node_info[kHitLayer] = Tensor::FromVector(std::vector<int64_t>{0, 1, 2, 0, 1, 1, 0, 1, 2, 1});
  gs.particle_offsets = Tensor::FromVector(std::vector<int64_t>{0, 2, 3});
  gs.particles[kParticlePt] = Tensor::FromVector(std::vector<float>{2.0f, 1.5f, 3.0f});
  gs.particles[kParticleEta] = Tensor::FromVector(std::vector<float>{0.1f, -0.5f, 0.4f});
  gs.particles[kParticleHits] = Tensor::FromVector(std::vector<int64_t>{3, 2, 3});
  ds.features["node"] = Tensor::Zeros({n, 3});
  EXPECT_TRUE(BuildGraphSetGraph(&ds, {}).ok());
  return ds;
}

std::vector<uint8_t> KeepAbove(double cut) {
  std::vector<uint8_t> keep;
  for (const Edge& e : kEdges) keep.push_back(e.score > cut);
  return keep;
}

std::vector<float> Scores() {
  std::vector<float> s;
  for (const Edge& e : kEdges) s.push_back(e.score);
  return s;
}

TEST(EdgeFilter, KeepsTheEdgesAboveTheCutWithTheirFeaturesLabelsAndTruth) {
  const Dataset ds = Events();
  // Cut 0.25 keeps edges 0, 3, 4 of event 0 and 6, 7, 8 of event 1; of the dropped 1, 2, 5, 9
  // only edge 1 (1 -> 2, A's) is true: counted at its source, hit 1.
  auto f = FilterGraphSetEdges(ds, KeepAbove(0.25));
  ASSERT_TRUE(f.ok()) << f.status();
  const GraphSet& fs = *f->graphs;
  EXPECT_EQ(fs.edge_offsets.ToVector<int64_t>(), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(fs.edges.ToVector<int64_t>(),
            (std::vector<int64_t>{0, 1, 3, 4, 1, 5, 6, 7, 7, 8, 6, 9}));
  EXPECT_EQ(fs.edge_labels.ToVector<int64_t>(), (std::vector<int64_t>{1, 1, 0, 1, 1, 0}));
  EXPECT_EQ(fs.edge_feat.ToVector<float>(),
            (std::vector<float>{0, 0, 3, 30, 4, 40, 6, 60, 7, 70, 8, 80}));
  EXPECT_EQ(fs.node_info.at(kHitDroppedTrueEdges).ToVector<int64_t>(),
            (std::vector<int64_t>{0, 1, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(DroppedTrueEdgesPerGraph(fs), (std::vector<int64_t>{1, 0}));
  // Everything else as it was; the union graph with both directions of each kept edge.
  EXPECT_EQ(fs.node_offsets.ToVector<int64_t>(), ds.graphs->node_offsets.ToVector<int64_t>());
  EXPECT_EQ(fs.node_info.at(kHitParticle).ToVector<int64_t>(),
            ds.graphs->node_info.at(kHitParticle).ToVector<int64_t>());
  EXPECT_EQ(fs.particles.at(kParticleHits).ToVector<int64_t>(), (std::vector<int64_t>{3, 2, 3}));
  EXPECT_EQ(fs.train.ToVector<int64_t>(), (std::vector<int64_t>{0}));
  EXPECT_EQ(fs.test.ToVector<int64_t>(), (std::vector<int64_t>{1}));
  EXPECT_EQ(f->Adjacency().nnz(), 12);
  EXPECT_TRUE(f->graph.relations[0].symmetric);
  EXPECT_TRUE(CheckTrackingDataset(*f).ok());

  // A second stage drops event 0's edge 0 -> 1 (A's, source 0) and event 1's 7 -> 8 (C's, source
  // 7): the counts add to the first stage's.
  auto g = FilterGraphSetEdges(*f, {0, 1, 1, 1, 0, 1});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->graphs->node_info.at(kHitDroppedTrueEdges).ToVector<int64_t>(),
            (std::vector<int64_t>{1, 1, 0, 0, 0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(DroppedTrueEdgesPerGraph(*g->graphs), (std::vector<int64_t>{2, 1}));
}

TEST(EdgeFilter, TrackMetricsCountTheDroppedTrueEdgesAsLost) {
  auto f = FilterGraphSetEdges(Events(), KeepAbove(0.25));
  ASSERT_TRUE(f.ok()) << f.status();
  // Every kept edge scored 1: 4 true edges kept of 5 (A's 1 -> 2 lost to the filter).
  auto m = MeasureTracks(*f, {0, 1}, std::vector<float>(6, 1.0f), {.cut = 0.5, .min_hits = 2}, {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->true_edges, 5);
  EXPECT_EQ(m->dropped_true_edges, 1);
  EXPECT_EQ(m->kept_true_edges, 4);
  EXPECT_DOUBLE_EQ(m->edge_efficiency(), 0.8);
  EXPECT_DOUBLE_EQ(m->edge_purity(), 4.0 / 6.0);
  // The unfiltered set at the same cut: the same 4 of 5 true edges kept by the scores alone.
  auto u = MeasureTracks(Events(), {0, 1}, Scores(), {.cut = 0.25, .min_hits = 2}, {});
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->true_edges, 5);
  EXPECT_EQ(u->kept_true_edges, 4);
  EXPECT_EQ(u->dropped_true_edges, 0);
}

TEST(EdgeFilter, TheCutForAnEfficiency) {
  const Dataset ds = Events();
  const std::vector<float> s = Scores();
  // True scores 0.95, 0.9, 0.8, 0.6, 0.2: 4 of 5 need the cut just below 0.6; all, below 0.2.
  auto c = CutForEfficiency(*ds.graphs, s, {0, 1}, 0.8);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_LT(*c, 0.6);
  EXPECT_GT(*c, 0.5999);
  EXPECT_GT(0.6f, *c);  // a score of 0.6 is kept (score > cut)
  EXPECT_LT(*CutForEfficiency(*ds.graphs, s, {0, 1}, 1.0), 0.2);
  EXPECT_GT(*CutForEfficiency(*ds.graphs, s, {0, 1}, 1.0), 0.1999);
  EXPECT_LT(*CutForEfficiency(*ds.graphs, s, {0, 1}, 0.5), 0.8);
  EXPECT_GT(*CutForEfficiency(*ds.graphs, s, {0, 1}, 0.5), 0.7999);
  // Event 1 alone: 0.95 and 0.6.
  EXPECT_GT(*CutForEfficiency(*ds.graphs, s, {1}, 0.5), 0.9499);
  EXPECT_FALSE(CutForEfficiency(*ds.graphs, s, {0, 1}, 0.0).ok());
  EXPECT_FALSE(CutForEfficiency(*ds.graphs, s, {}, 0.9).ok());
}

TEST(EdgeFilter, TheCacheKeepsTheFilteredSetAndBadInputIsRefused) {
  auto f = FilterGraphSetEdges(Events(), KeepAbove(0.25));
  ASSERT_TRUE(f.ok()) << f.status();
  const std::string path = ::testing::TempDir() + "/edge_filter_test.fgc";
  ASSERT_TRUE(io::WriteCache(*f, path).ok());
  auto back = LoadDataset(path, {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->graphs->node_info.at(kHitDroppedTrueEdges).ToVector<int64_t>(),
            f->graphs->node_info.at(kHitDroppedTrueEdges).ToVector<int64_t>());
  EXPECT_EQ(back->graphs->edge_labels.ToVector<int64_t>(),
            f->graphs->edge_labels.ToVector<int64_t>());
  EXPECT_EQ(back->Adjacency().nnz(), 12);
  std::remove(path.c_str());

  auto wrong = FilterGraphSetEdges(Events(), {1, 0});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("2 keep flags for 10 edges"), std::string::npos)
      << wrong.status();
  Dataset multi = Events();
  multi.graphs->edge_labels.i64()[3] = 2;
  auto bad = FilterGraphSetEdges(multi, KeepAbove(0.25));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not binary"), std::string::npos) << bad.status();
  Dataset plain = *LoadDataset("sbm:nodes=20,classes=2,features=3", {});
  EXPECT_FALSE(FilterGraphSetEdges(plain, {}).ok());
}

}  // namespace
}  // namespace fg::graph
