// Graph-set tasks on hand-made data whose answers are known: batching of whole graphs, shuffled
// batches, edge classification's loss and its metrics (efficiency, purity, ROC AUC) on a hand-made
// event, and graph classification's accuracy.
#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "flexgraph/autograd/var.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/gen/trackml.h"
#include "flexgraph/graph/tracking.h"
#include "proto/config.pb.h"
#include "runtime/tasks/graph_batch.h"
#include "runtime/tasks/graph_tasks.h"

namespace fg::runtime {
namespace {

// Two events:
//   graph 0: hits 0, 1, 2, 3   edges e0 = 0->1 (true), e1 = 1->2 (true), e2 = 0->2 (false),
//                              e3 = 2->3 (true), e4 = 1->3 (false)
//   graph 1: hits 4, 5, 6      edges e5 = 4->5 (true), e6 = 5->6 (false), e7 = 4->6 (-1, unlabeled)
// Reverse edges are added, so every edge is two Csr entries. Graph labels: 1, 0. Graph 0 trains,
// graph 1 is the test split.
graph::Dataset TwoEvents() {
  graph::Dataset ds;
  ds.name = "two-events";
  graph::GraphSet& gs = ds.graphs.emplace();
  gs.node_offsets = Tensor::FromVector(std::vector<int64_t>{0, 4, 7});
  gs.edge_offsets = Tensor::FromVector(std::vector<int64_t>{0, 5, 8});
  gs.edges = Tensor::FromVector(std::vector<int64_t>{0, 1, 1, 2, 0, 2, 2, 3, 1, 3, 4, 5, 5, 6, 4, 6},
                                {8, 2});
  gs.edge_labels = Tensor::FromVector(std::vector<int64_t>{1, 1, 0, 1, 0, 1, 0, -1});
  gs.num_edge_classes = 2;
  gs.graph_labels = Tensor::FromVector(std::vector<int64_t>{1, 0});
  gs.num_graph_classes = 2;
  gs.train = Tensor::FromVector(std::vector<int64_t>{0});
  gs.test = Tensor::FromVector(std::vector<int64_t>{1});
  std::vector<float> feat(7 * 2);
  for (int v = 0; v < 7; ++v) feat[2 * v] = feat[2 * v + 1] = static_cast<float>(v);
  ds.features["node"] = Tensor::FromVector(feat, {7, 2});
  gs.edge_feat = Tensor::FromVector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}, {8, 1});
  graph::LoadOptions options;
  EXPECT_TRUE(graph::BuildGraphSetGraph(&ds, options).ok());
  return ds;
}

// Output rows per entry of `batch`: logit `by_edge[e]` on both entries of edge e (batch numbering).
Tensor EntryLogits(const GraphBatch& batch, const std::vector<float>& by_edge) {
  const graph::GraphSet& bs = *batch.data->graphs;
  const int64_t M = bs.num_edges();
  std::vector<float> out(bs.entry_edges.numel());
  for (size_t k = 0; k < out.size(); ++k) out[k] = by_edge[bs.entry_edges.i64()[k] % M];
  return Tensor::FromVector(out, {static_cast<int64_t>(out.size()), 1});
}

nau::OptionValues EdgeOptions(std::map<std::string, std::string> values = {}) {
  return nau::OptionValues(EdgeClassificationTask::Options(), std::move(values));
}

TEST(GraphBatch, BlockDiagonalUnionRenumbersVerticesAndEdges) {
  graph::Dataset ds = TwoEvents();
  GraphBatch b = BatchGraphs(ds, {1, 0});
  const graph::GraphSet& bs = *b.data->graphs;
  EXPECT_EQ(b.data->graph.num_nodes[0], 7);
  EXPECT_EQ(bs.node_offsets.i64()[1], 3);  // graph 1's three hits come first
  EXPECT_EQ(bs.edge_offsets.i64()[1], 3);
  // Batch edge 0 is dataset edge e5 = 4->5, now 0->1; batch edge 3 is e0 = 0->1, now 3->4.
  EXPECT_EQ(bs.edges.i64()[0], 0);
  EXPECT_EQ(bs.edges.i64()[1], 1);
  EXPECT_EQ(bs.edges.i64()[6], 3);
  EXPECT_EQ(bs.edges.i64()[7], 4);
  EXPECT_EQ(bs.edge_labels.i64()[2], -1);
  EXPECT_EQ(bs.graph_labels.i64()[0], 0);
  EXPECT_EQ(b.data->features.at("node").f32()[0], 4.0f);  // vertex 4's row first
  // Every entry's original edge joins the entry's ends, and its features are the edge's.
  const Csr& a = b.data->Adjacency();
  ASSERT_EQ(a.nnz(), 16);
  for (int64_t r = 0; r < a.num_rows; ++r) {
    for (int64_t k = a.row_ptr()[r]; k < a.row_ptr()[r + 1]; ++k) {
      const int64_t e = bs.entry_edges.i64()[k], edge = e % 8;
      const int64_t src = bs.edges.i64()[2 * edge], dst = bs.edges.i64()[2 * edge + 1];
      if (e < 8) {
        EXPECT_TRUE(src == a.col()[k] && dst == r) << "entry " << k;
      } else {
        EXPECT_TRUE(dst == a.col()[k] && src == r) << "entry " << k;
      }
      EXPECT_EQ(b.entry_features.f32()[k], bs.edge_feat.f32()[edge]);
    }
  }
}

TEST(GraphBatch, ShuffledBatchesAreASeededPermutationPerEpoch) {
  Tensor ids = Tensor::FromVector(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto a = ShuffledBatches(ids, 4, 7, 0), again = ShuffledBatches(ids, 4, 7, 0);
  auto next = ShuffledBatches(ids, 4, 7, 1);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a.back().size(), 2u);
  EXPECT_EQ(a, again);
  EXPECT_NE(a, next);
  std::set<int64_t> seen;
  for (const auto& b : a) seen.insert(b.begin(), b.end());
  EXPECT_EQ(seen.size(), 10u);
}

// Rows [lo, hi) of a float [n, w] table, sorted (a graph's rows whatever the order of its hits).
std::vector<std::vector<float>> SortedRows(const Tensor& t, int64_t lo, int64_t hi) {
  const int64_t w = t.row_width();
  std::vector<std::vector<float>> rows;
  for (int64_t r = lo; r < hi; ++r) rows.emplace_back(t.f32() + r * w, t.f32() + (r + 1) * w);
  std::sort(rows.begin(), rows.end());
  return rows;
}

void ExpectSameRows(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                    const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t r = 0; r < a.size(); ++r) {
    for (size_t c = 0; c < a[r].size(); ++c) ASSERT_NEAR(a[r][c], b[r][c], 1e-5) << what << " row " << r << " column " << c;
  }
}

TEST(GraphBatch, ReflectEventsGivesTheFeaturesOfTheMirroredEvents) {
  // The events simulated, then mirrored hit by hit (z -> -z; y -> -y, i.e. phi -> -phi) and built
  // again: each reflected graph's node and edge features must be those of one of its four images.
  graph::TrackmlOptions o;
  o.events = 6;
  o.particles = 30;
  o.seed = 5;
  std::vector<graph::TrackingEvent> images[4];
  for (int64_t i = 0; i < o.events; ++i) {
    const graph::TrackingEvent ev = graph::SimulateTrackmlEvent(o, i);
    for (int image = 0; image < 4; ++image) {
      graph::TrackingEvent m = ev;
      for (graph::TrackingHit& h : m.hits) {
        if (image & 1) h.z = -h.z;
        if (image & 2) h.y = -h.y;
      }
      images[image].push_back(m);
    }
  }
  std::vector<graph::Dataset> built;
  for (const auto& events : images) {
    auto ds = graph::BuildTrackingDataset(events, {});
    ASSERT_TRUE(ds.ok()) << ds.status();
    built.push_back(*std::move(ds));
  }
  ASSERT_TRUE(graph::HasTrackingLayout(built[0]));
  EXPECT_FALSE(graph::HasTrackingLayout(TwoEvents()));
  const GraphBatch batch = BatchGraphs(built[0], {4, 1, 0, 2, 5, 3});
  std::set<int> seen;
  for (int epoch = 0; epoch < 4; ++epoch) {
    const GraphBatch r = ReflectEvents(batch, 11, epoch);
    const GraphBatch alone = ReflectEvents(BatchGraphs(built[0], {1}), 11, epoch);  // graph 1 by itself
    ExpectSameRows(SortedRows(alone.data->features.at("node"), 0, alone.data->graph.num_nodes[0]),
                   SortedRows(r.data->features.at("node"), r.data->graphs->NodeBegin(1), r.data->graphs->NodeEnd(1)),
                   "graph 1 alone and in the batch");
    for (int64_t i = 0; i < r.num_graphs(); ++i) {
      const graph::GraphSet& rs = *r.data->graphs;
      const auto nodes = SortedRows(r.data->features.at("node"), rs.NodeBegin(i), rs.NodeEnd(i));
      const auto edges = SortedRows(rs.edge_feat, rs.EdgeBegin(i), rs.EdgeEnd(i));
      const Csr& a = r.data->Adjacency();
      const auto entries = SortedRows(r.entry_features, a.row_ptr()[rs.NodeBegin(i)], a.row_ptr()[rs.NodeEnd(i)]);
      // Which image: the sign of the first hit's z and of the first edge's dphi against the original's.
      const int64_t g = batch.graphs[i];
      const graph::GraphSet& gs = *built[0].graphs;
      const auto original_nodes = SortedRows(built[0].features.at("node"), gs.NodeBegin(g), gs.NodeEnd(g));
      int image = -1;
      for (int k = 0; k < 4; ++k) {
        const graph::GraphSet& ks = *built[k].graphs;
        if (SortedRows(built[k].features.at("node"), ks.NodeBegin(g), ks.NodeEnd(g)) == nodes) image = k;
      }
      ASSERT_GE(image, 0) << "graph " << g << " epoch " << epoch << ": no image has its hits";
      seen.insert(image);
      const graph::GraphSet& ks = *built[image].graphs;
      ExpectSameRows(edges, SortedRows(ks.edge_feat, ks.EdgeBegin(g), ks.EdgeEnd(g)), "edges");
      const GraphBatch whole = BatchGraphs(built[image], {g});
      ExpectSameRows(entries, SortedRows(whole.entry_features, 0, whole.entry_features.rows()), "entries");
      EXPECT_EQ(original_nodes.size(), nodes.size());
    }
  }
  EXPECT_EQ(seen.size(), 4u);  // 24 draws: every image
  // The batch as drawn is left as it was.
  EXPECT_EQ(SortedRows(batch.data->features.at("node"), 0, 3), SortedRows(BatchGraphs(built[0], {4, 1, 0, 2, 5, 3}).data->features.at("node"), 0, 3));
}

TEST(EdgeClassification, MetricsOnAHandMadeEvent) {
  graph::Dataset ds = TwoEvents();
  auto task = EdgeClassificationTask::Create(&ds, EdgeOptions());
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_TRUE((*task)->binary());
  // Scores (sigmoid of the logits) on graph 0: e0 0.88 (true, kept), e1 0.27 (true, lost),
  // e2 0.73 (false, kept), e3 0.95 (true, kept), e4 0.05 (false, dropped) at cut 0.5:
  // TP 2, FN 1, FP 1 -> efficiency 2/3, purity 2/3; AUC: true {0.88, 0.27, 0.95} against false
  // {0.73, 0.05}: pairs won 2 + 1 + 2 = 5 of 6.
  const std::vector<float> logits = {2.0f, -1.0f, 1.0f, 3.0f, -3.0f, 0.5f, -0.5f, 9.0f};
  const GraphBatch whole = WholeSet(ds);
  auto m = (*task)->Metrics(EntryLogits(whole, logits), whole, 0);
  EXPECT_NEAR(m["efficiency"], 2.0 / 3, 1e-9);
  EXPECT_NEAR(m["purity"], 2.0 / 3, 1e-9);
  EXPECT_NEAR(m["auc"], 5.0 / 6, 1e-9);
  EXPECT_NEAR(m["accuracy"], 3.0 / 5, 1e-9);
  EXPECT_EQ(m["items"], 5);
  // Graph 1 (test): e5 kept and true, e6 dropped and false; e7 is unlabeled: perfect.
  auto t = (*task)->Metrics(EntryLogits(whole, logits), whole, 2);
  EXPECT_EQ(t["efficiency"], 1.0);
  EXPECT_EQ(t["purity"], 1.0);
  EXPECT_EQ(t["items"], 2);
  // A stricter cut keeps only e3 on graph 0: efficiency 1/3, purity 1.
  auto strict = EdgeClassificationTask::Create(&ds, EdgeOptions({{"cut", "0.9"}}));
  ASSERT_TRUE(strict.ok());
  auto s = (*strict)->Metrics(EntryLogits(whole, logits), whole, 0);
  EXPECT_NEAR(s["efficiency"], 1.0 / 3, 1e-9);
  EXPECT_EQ(s["purity"], 1.0);
  // Evaluate reports them per split.
  EpochMetrics em = (*task)->Evaluate(EntryLogits(whole, logits), [](std::vector<double>*) {});
  EXPECT_NEAR(em.extra["train_efficiency"], 2.0 / 3, 1e-9);
  EXPECT_EQ(em.extra["test_purity"], 1.0);
  EXPECT_TRUE(std::isnan(em.valid));  // no validation graphs
}

TEST(EdgeClassification, LossWeighsTrueEdgesAndReadsOnlyTrainingGraphs) {
  graph::Dataset ds = TwoEvents();
  auto plain = EdgeClassificationTask::Create(&ds, EdgeOptions());
  auto weighted = EdgeClassificationTask::Create(&ds, EdgeOptions({{"pos_weight", "3"}}));
  ASSERT_TRUE(plain.ok() && weighted.ok());
  // All logits 0: every entry's BCE is log 2. Graph 0 holds 10 entries, 6 of true edges.
  const GraphBatch whole = WholeSet(ds);
  ag::Var out(EntryLogits(whole, std::vector<float>(8, 0.0f)));
  EXPECT_NEAR((*plain)->Loss(out, 0).value().Item(), std::log(2.0), 1e-6);
  EXPECT_NEAR((*weighted)->Loss(out, 0).value().Item(), (3 * 6 + 4) / 10.0 * std::log(2.0), 1e-6);
  // Logits of graph 1 (not training) do not move the loss.
  std::vector<float> other(8, 0.0f);
  other[5] = other[6] = 5.0f;
  EXPECT_NEAR((*plain)->Loss(ag::Var(EntryLogits(whole, other)), 0).value().Item(), std::log(2.0),
              1e-6);
  // A batch of graph 0 alone gives the same loss.
  GraphBatch b = BatchGraphs(ds, {0});
  EXPECT_NEAR((*weighted)->BatchLoss(ag::Var(EntryLogits(b, std::vector<float>(5, 0.0f))), b)
                  .value()
                  .Item(),
              (3 * 6 + 4) / 10.0 * std::log(2.0), 1e-6);
  EXPECT_FALSE(EdgeClassificationTask::Create(&ds, EdgeOptions({{"cut", "1.5"}})).ok());
}

TEST(GraphClassification, AccuracyAndAuc) {
  graph::Dataset ds = TwoEvents();
  ds.graphs->edge_labels = Tensor();
  flexgraph::RunConfig config;
  auto task = MakeTask(&ds, config);
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_EQ((*task)->kind(), nau::Task::kGraphClassification);
  auto* gt = static_cast<GraphClassificationTask*>(task->get());
  // Graph 0 (label 1) predicted 1, graph 1 (label 0) predicted 1.
  Tensor out = Tensor::FromVector(std::vector<float>{0, 2, 0, 1}, {2, 2});
  auto m = gt->Metrics(out, WholeSet(ds));
  EXPECT_EQ(m["accuracy"], 0.5);
  EXPECT_EQ(m["auc"], 1.0);  // class-1 margin 2 for the positive above 1 for the negative
  // Loss over the training graph only: -log softmax([0, 2])[1].
  EXPECT_NEAR(gt->BatchLoss(ag::Var(out), WholeSet(ds)).value().Item(),
              std::log(1 + std::exp(-2.0)), 1e-6);
}

TEST(EdgeClassification, MakeTaskChoosesEdgesForEdgeLabels) {
  graph::Dataset ds = TwoEvents();
  flexgraph::RunConfig config;
  (*config.mutable_model()->mutable_options())["pos_weight"] = "2";
  auto task = MakeTask(&ds, config);
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*task)->kind(), nau::Task::kEdgeClassification);
}

}  // namespace
}  // namespace fg::runtime
