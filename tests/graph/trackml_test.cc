// Tracking graphs: construction on a hand-made event (edges, labels, features, quality counted by
// hand), the TrackML-like generator (determinism by seed and thread count, physics sanity, and the
// construction's truth-edge efficiency and purity), and the spec's errors.
#include "flexgraph/graph/gen/trackml.h"

#include <cmath>
#include <string>
#include <vector>

#include "flexgraph/base/parallel.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/gen/spec.h"
#include "flexgraph/graph/graph_set.h"
#include "flexgraph/graph/io/cache.h"
#include "flexgraph/graph/summary.h"
#include "flexgraph/graph/tracking.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fg::graph {
namespace {

using ::testing::HasSubstr;

TrackingHit At(int layer, double phi, double z, int64_t particle) {
  const double r = kBarrelRadius[layer];
  return {r * std::cos(phi), r * std::sin(phi), z, layer, particle};
}

// Two straight particles (0 at phi 0.1, 1 at phi -0.1 with a lost hit on layer 2), one noise hit
// near particle 0 on layer 1, one hit far away in phi. Two events: the second is the first shifted.
TrackingEvent HandMade() {
  TrackingEvent ev;
  ev.particles = {{11, 2.0, 0.0, 0.1, 0.0}, {12, 0.8, 0.0, -0.1, 0.0}};
  for (int l = 0; l < 4; ++l) ev.hits.push_back(At(l, 0.1, 0.0, 0));
  for (int l : {0, 1, 3}) ev.hits.push_back(At(l, -0.1, 0.0, 1));
  ev.hits.push_back(At(1, 0.1 + 1e-3, 1.0, -1));
  ev.hits.push_back(At(2, 2.0, 0.0, -1));
  return ev;
}

TEST(TrackingTest, BuildsAHandMadeEvent) {
  TrackingGraphOptions o;
  o.cuts.phi_slope_max = 1e-3;  // dphi <= 0.04 over 40 mm: the two particles never meet
  o.train_fraction = 0.5;
  o.valid_fraction = 0;
  auto ds = BuildTrackingDataset({HandMade(), HandMade()}, o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_TRUE(ValidateGraphSet(*ds).ok()) << ValidateGraphSet(*ds);
  const GraphSet& gs = *ds->graphs;
  EXPECT_EQ(gs.num_graphs(), 2);
  EXPECT_EQ(gs.node_offsets.ToVector<int64_t>(), (std::vector<int64_t>{0, 9, 18}));
  // Edges per event: particle 0: 0-1, 1-2, 2-3 (3 true); noise on layer 1 joins particle 0's
  // layers 0 and 2 hits (2 false); particle 1: 0-1 (true), nothing across its lost layer 2.
  EXPECT_EQ(gs.edge_offsets.ToVector<int64_t>(), (std::vector<int64_t>{0, 6, 12}));
  std::vector<int64_t> labels = gs.edge_labels.ToVector<int64_t>();
  EXPECT_EQ(std::count(labels.begin(), labels.begin() + 6, 1), 4);
  EXPECT_EQ(gs.train.ToVector<int64_t>(), (std::vector<int64_t>{0}));
  EXPECT_EQ(gs.test.ToVector<int64_t>(), (std::vector<int64_t>{1}));
  // Hits sorted by (layer, phi): vertex 0 is particle 1's layer-0 hit.
  EXPECT_EQ(gs.node_info.at(kHitParticle).i64()[0], 1);
  EXPECT_EQ(gs.node_info.at(kHitParticle).i64()[9], 3);  // second event: rows shifted by 2
  EXPECT_EQ(gs.node_info.at(kHitLayer).ToVector<int64_t>()[8], 3);
  EXPECT_EQ(gs.particles.at(kParticleHits).ToVector<int64_t>(), (std::vector<int64_t>{4, 3, 4, 3}));
  EXPECT_EQ(gs.particles.at(kParticleId).ToVector<int64_t>(),
            (std::vector<int64_t>{11, 12, 11, 12}));
  EXPECT_EQ(ds->features.at("node").ShapeString(), "[18, 3]");
  EXPECT_NEAR(ds->features.at("node").f32()[0], 0.032, 1e-6);
  EXPECT_NEAR(ds->features.at("node").f32()[1], -0.1 / M_PI, 1e-6);
  EXPECT_EQ(gs.edge_feat.ShapeString(), "[12, 6]");
  // Every edge goes outwards by one layer; features: dr / 1000 matches the radii.
  for (int64_t k = 0; k < 12; ++k) {
    const int64_t a = gs.edges.i64()[2 * k], b = gs.edges.i64()[2 * k + 1];
    const int64_t la = gs.node_info.at(kHitLayer).i64()[a];
    EXPECT_EQ(gs.node_info.at(kHitLayer).i64()[b], la + 1);
    EXPECT_NEAR(gs.edge_feat.f32()[6 * k], (kBarrelRadius[la + 1] - kBarrelRadius[la]) / 1000,
                1e-6);
  }
  // Both directions in the union graph.
  EXPECT_EQ(ds->Adjacency().nnz(), 24);
  auto q = MeasureConstruction(*ds, 1.0);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->true_segments, 6);  // particle 0 (pT 2) in both events
  EXPECT_EQ(q->found_segments, 6);
  EXPECT_EQ(q->candidates, 12);
  EXPECT_EQ(q->true_candidates, 8);
  EXPECT_DOUBLE_EQ(q->purity(), 8.0 / 12);
  auto all = MeasureConstruction(*ds, 0.5, {1});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->true_segments,
            4);  // particle 1's segment 0-1 counts, the one over the gap does not exist
  EXPECT_EQ(all->found_segments, 4);
}

TEST(TrackingTest, BadHitsAreNamed) {
  TrackingEvent ev = HandMade();
  ev.hits[3].layer = 10;
  auto ds = BuildTrackingDataset({HandMade(), ev}, TrackingGraphOptions());
  ASSERT_FALSE(ds.ok());
  EXPECT_THAT(std::string(ds.status().message()), HasSubstr("event 1, hit 3"));
  auto q = MeasureConstruction(*LoadDataset("sbm:nodes=100,classes=2,features=2", LoadOptions()));
  EXPECT_FALSE(q.ok());
}

TEST(TrackmlTest, DeterministicBySeedAndThreads) {
  const std::string spec = "trackml:events=3,particles=60,noise=0.2,seed=7";
  const int threads = NumThreads();
  SetNumThreads(1);
  auto a = GenerateFromSpec(spec);
  SetNumThreads(2);
  auto b = GenerateFromSpec(spec);
  SetNumThreads(threads);
  auto c = GenerateFromSpec("trackml:events=3,particles=60,noise=0.2,seed=8");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status();
  EXPECT_EQ(a->graphs->edges.ToVector<int64_t>(), b->graphs->edges.ToVector<int64_t>());
  EXPECT_EQ(a->features.at("node").ToVector<float>(), b->features.at("node").ToVector<float>());
  EXPECT_EQ(a->graphs->edge_feat.ToVector<float>(), b->graphs->edge_feat.ToVector<float>());
  EXPECT_NE(a->features.at("node").ToVector<float>(), c->features.at("node").ToVector<float>());
  ASSERT_TRUE(ValidateGraphSet(*a).ok()) << ValidateGraphSet(*a);
  // The cache keeps the tracking tables.
  auto back = io::ParseCache(io::EncodeCache(*a), "trackml.fgc");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->graphs->particles.at(kParticlePt).ToVector<float>(),
            a->graphs->particles.at(kParticlePt).ToVector<float>());
  EXPECT_EQ(MeasureConstruction(*back)->found_segments, MeasureConstruction(*a)->found_segments);
}

TEST(TrackmlTest, PhysicsIsSane) {
  TrackmlOptions o;
  o.events = 4;
  o.particles = 200;
  o.noise = 0.1;
  o.seed = 3;
  int64_t hits = 0, noise = 0, particles = 0, ten_hit = 0, central_high_pt = 0;
  for (int64_t e = 0; e < o.events; ++e) {
    const TrackingEvent ev = SimulateTrackmlEvent(o, e);
    particles += static_cast<int64_t>(ev.particles.size());
    std::vector<int> count(ev.particles.size(), 0);
    for (const TrackingHit& h : ev.hits) {
      ++hits;
      const double r = std::hypot(h.x, h.y);
      EXPECT_NEAR(r, kBarrelRadius[h.layer], 0.01);
      EXPECT_LE(std::abs(h.z), kBarrelHalfLength[h.layer] + 20);
      if (h.particle < 0) {
        ++noise;
      } else {
        ++count[h.particle];
      }
    }
    for (size_t i = 0; i < ev.particles.size(); ++i) {
      EXPECT_GE(ev.particles[i].pt, o.pt_min);
      EXPECT_LE(std::abs(ev.particles[i].eta), o.eta_max);
      if (count[i] == 10) ++ten_hit;
      if (ev.particles[i].pt > 1 && std::abs(ev.particles[i].eta) < 0.5) ++central_high_pt;
    }
  }
  EXPECT_NEAR(particles, 800, 120);  // Poisson mean 200 per event
  EXPECT_NEAR(static_cast<double>(noise) / (hits - noise), 0.1, 0.01);
  EXPECT_GT(ten_hit, particles / 2);  // most cross all ten layers
  EXPECT_GT(central_high_pt, 0);
}

TEST(TrackmlTest, ConstructionKeepsTruthEdgesWithReasonablePurity) {
  auto ds = GenerateFromSpec("trackml:events=4,particles=1000,noise=0.1,seed=11");
  ASSERT_TRUE(ds.ok()) << ds.status();
  auto q = MeasureConstruction(*ds, 1.0);
  ASSERT_TRUE(q.ok()) << q.status();
  std::printf(
      "construction: %lld graphs, %lld hits, %lld candidates, efficiency(pT>1) %.4f "
      "(%lld of %lld), purity %.4f\n",
      static_cast<long long>(q->graphs), static_cast<long long>(ds->graph.num_nodes[0]),
      static_cast<long long>(q->candidates), q->efficiency(),
      static_cast<long long>(q->found_segments), static_cast<long long>(q->true_segments),
      q->purity());
  auto low = MeasureConstruction(*ds, 0.5);
  std::printf("efficiency(pT>0.5) %.4f\n", low->efficiency());
  EXPECT_GT(q->efficiency(), 0.98);
  EXPECT_GT(q->purity(), 0.1);
  EXPECT_EQ(ds->graphs->train.numel() + ds->graphs->valid.numel() + ds->graphs->test.numel(), 4);
  const DatasetSummary summary = Summarize(*ds);
  ASSERT_TRUE(summary.graph_set && summary.graph_set->construction);
  EXPECT_EQ(summary.graph_set->construction->found_segments, q->found_segments);
  EXPECT_THAT(summary.ToText(), HasSubstr("graph construction: efficiency 1.0000"));
  EXPECT_THAT(summary.ToJson(), HasSubstr("\"construction\": {\"pt_min\": 1.00"));
}

TEST(TrackmlTest, SpecErrorsNameTheField) {
  auto bad = GenerateFromSpec("trackml:events=2,colour=3");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("unknown trackml parameter 'colour'"));
  bad = GenerateFromSpec("trackml:events=2,pt_slope=0.5");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("'pt_slope'"));
  bad = GenerateFromSpec("trackml:events=0");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("'events'"));
  EXPECT_TRUE(IsGeneratorSpec("trackml:events=1"));
}

}  // namespace
}  // namespace fg::graph
