// Track building and the tracking metrics on a hand-made event whose answer is worked out below.
#include "flexgraph/graph/track_building.h"

#include <gtest/gtest.h>

#include <cmath>

#include "flexgraph/graph/tracking.h"

namespace fg::graph {
namespace {

// 23 hits. Particles (row: pT GeV, eta, hits): A 0 (2.0, 0.1, 5) hits 0-4; B 1 (1.5, -0.5, 5)
// hits 5-9; C 2 (0.7, 0.2, 3) hits 12-14; D 3 (3.0, 0.4, 6) hits 15-20; noise 10, 11, 21, 22.
struct Edge {
  int64_t a, b;
  float score;
  int64_t label;
};
const std::vector<Edge> kEdges = {
    // A's chain, then a fork from hit 1 to B's hit 7 (weaker than 1-2), then noise after hit 4.
    {0, 1, 0.9f, 1}, {1, 2, 0.9f, 1}, {2, 3, 0.9f, 1}, {3, 4, 0.9f, 1}, {1, 7, 0.6f, 0},
    {4, 10, 0.6f, 0}, {10, 11, 0.7f, 0},
    // B broken twice: pieces of 2, 2 and 1 hits, none a candidate.
    {5, 6, 0.8f, 1}, {6, 7, 0.2f, 1}, {7, 8, 0.8f, 1}, {8, 9, 0.2f, 1},
    // D broken once: two candidates of 3 hits, each half of D's: neither matches, one duplicate.
    {15, 16, 0.9f, 1}, {16, 17, 0.9f, 1},
    // B's last hit points at D's hit 16, which takes its better inward edge 15-16: a merge refused.
    {9, 16, 0.7f, 0}, {17, 18, 0.1f, 1}, {18, 19, 0.9f, 1}, {19, 20, 0.9f, 1},
    // C's hits 12 and 13 joined through noise: a 4-hit candidate without a majority (a fake).
    {12, 21, 0.9f, 0}, {21, 13, 0.9f, 0}, {13, 22, 0.9f, 0}};

Dataset Event() {
  Dataset ds;
  ds.name = "hand-made event";
  ds.graphs.emplace();
  GraphSet& gs = *ds.graphs;
  const int64_t n = 23, m = static_cast<int64_t>(kEdges.size());
  gs.node_offsets = Tensor::FromVector(std::vector<int64_t>{0, n});
  gs.edge_offsets = Tensor::FromVector(std::vector<int64_t>{0, m});
  std::vector<int64_t> edges, labels;
  for (const Edge& e : kEdges) {
    edges.insert(edges.end(), {e.a, e.b});
    labels.push_back(e.label);
  }
  gs.edges = Tensor::FromVector(edges).Reshape({m, 2});
  gs.edge_labels = Tensor::FromVector(labels);
  std::vector<int64_t> particle(n, -1), layer(n, 0);
  auto hits = [&](int64_t p, int64_t first, int64_t last) {
    for (int64_t v = first; v <= last; ++v) particle[v] = p, layer[v] = v - first;
  };
  hits(0, 0, 4);
  hits(1, 5, 9);
  hits(2, 12, 14);
  hits(3, 15, 20);
  gs.node_info[kHitParticle] = Tensor::FromVector(particle);
  gs.node_info[kHitLayer] = Tensor::FromVector(layer);
  gs.particle_offsets = Tensor::FromVector(std::vector<int64_t>{0, 4});
  gs.particles[kParticlePt] = Tensor::FromVector(std::vector<float>{2.0f, 1.5f, 0.7f, 3.0f});
  gs.particles[kParticleEta] = Tensor::FromVector(std::vector<float>{0.1f, -0.5f, 0.2f, 0.4f});
  gs.particles[kParticleHits] = Tensor::FromVector(std::vector<int64_t>{5, 5, 3, 6});
  return ds;
}

std::vector<float> Scores() {
  std::vector<float> s;
  for (const Edge& e : kEdges) s.push_back(e.score);
  return s;
}

TEST(TrackBuilding, ResolvesForksByScoreAndKeepsComponentsOfEnoughHits) {
  const Dataset ds = Event();
  const auto candidates = BuildTrackCandidates(*ds.graphs, 0, Scores(), {.cut = 0.5, .extend_cut = 0.5, .min_hits = 3});
  const std::vector<std::vector<int64_t>> want = {
      {0, 1, 2, 3, 4, 10, 11}, {12, 13, 21, 22}, {15, 16, 17}, {18, 19, 20}};
  EXPECT_EQ(candidates, want);
}

// Extension at 0.15: B's ends left free at cut 0.5 (6 and 7, 8 and 9) have edges of 0.2, but its
// pieces (2, 2 and 1 hits) are all shorter than min_hits 3 and stay apart; with min_hits 2 they join.
// At 0.05 D's halves (3 hits each) join through 17-18 (0.1). 9-16 (0.7) stays out: 16's inward
// edge is taken.
TEST(TrackBuilding, ExtensionJoinsFreeEndsOfCandidatesAboveTheLowerCut) {
  const Dataset ds = Event();
  const std::vector<std::vector<int64_t>> unextended = {
      {0, 1, 2, 3, 4, 10, 11}, {12, 13, 21, 22}, {15, 16, 17}, {18, 19, 20}};
  EXPECT_EQ(BuildTrackCandidates(*ds.graphs, 0, Scores(), {.cut = 0.5, .extend_cut = 0.15}), unextended);
  const std::vector<std::vector<int64_t>> pairs_too = {
      {0, 1, 2, 3, 4, 10, 11}, {5, 6, 7, 8, 9}, {12, 13, 21, 22}, {15, 16, 17}, {18, 19, 20}};
  EXPECT_EQ(BuildTrackCandidates(*ds.graphs, 0, Scores(), {.cut = 0.5, .extend_cut = 0.15, .min_hits = 2}),
            pairs_too);
  const std::vector<std::vector<int64_t>> d_joined = {
      {0, 1, 2, 3, 4, 10, 11}, {12, 13, 21, 22}, {15, 16, 17, 18, 19, 20}};
  EXPECT_EQ(BuildTrackCandidates(*ds.graphs, 0, Scores(), {.cut = 0.5, .extend_cut = 0.05}), d_joined);
  auto m = MeasureTracks(ds, {0}, Scores(), {.cut = 0.5, .extend_cut = 0.05}, {.particle_min_hits = 5});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->kept_edges, 17);  // edge metrics stay those of the cut
  EXPECT_EQ(m->matched, 2);      // A and D
  EXPECT_EQ(m->duplicates, 0);
}

TEST(TrackBuilding, MeasuresTheHandMadeEvent) {
  const Dataset ds = Event();
  std::vector<std::vector<std::vector<int64_t>>> candidates;
  auto m = MeasureTracks(ds, {0}, Scores(), {.cut = 0.5, .extend_cut = 0.5, .min_hits = 3},
                         {.pt_min = 1.0, .particle_min_hits = 5, .pt_bins = {0, 1, 2.5, 5}}, &candidates);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(candidates.size(), 1u);  // the candidates it measured, per graph
  EXPECT_EQ(candidates[0], BuildTrackCandidates(*ds.graphs, 0, Scores(), {.cut = 0.5, .extend_cut = 0.5, .min_hits = 3}));
  // True edges 13 (A 4, B 4, D 5); kept 17 (A 4, the fork, 4-10, 10-11, B 2, 9-16, D 4, C's 3);
  // kept true 10.
  EXPECT_EQ(m->true_edges, 13);
  EXPECT_EQ(m->kept_edges, 17);
  EXPECT_EQ(m->kept_true_edges, 10);
  EXPECT_DOUBLE_EQ(m->edge_efficiency(), 10.0 / 13);
  EXPECT_DOUBLE_EQ(m->edge_purity(), 10.0 / 17);
  // Candidates: A's (matched: 5 of its 7 hits are A's, all 5 of A's), the fake, D's two halves.
  EXPECT_EQ(m->candidates, 4);
  EXPECT_EQ(m->fakes, 1);
  EXPECT_EQ(m->duplicates, 1);
  EXPECT_EQ(m->reconstructable, 3);  // A, B, D (C: pT 0.7 and 3 hits)
  EXPECT_EQ(m->matched, 1);
  EXPECT_DOUBLE_EQ(m->track_efficiency(), 1.0 / 3);
  EXPECT_DOUBLE_EQ(m->fake_rate(), 0.25);
  EXPECT_DOUBLE_EQ(m->duplicate_rate(), 0.25);
  // pT bins [0, 1) [1, 2.5) [2.5, 5): B and A in the second (A matched), D in the third.
  EXPECT_EQ(m->by_pt.particles, (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(m->by_pt.matched, (std::vector<int64_t>{0, 1, 0}));
  // Eta: 10 bins over [-0.5, 0.4]: B first, A (0.1) in bin 6, D last.
  ASSERT_EQ(m->by_eta.particles.size(), 10u);
  EXPECT_EQ(m->by_eta.particles[0], 1);
  EXPECT_EQ(m->by_eta.particles[6], 1);
  EXPECT_EQ(m->by_eta.matched[6], 1);
  EXPECT_EQ(m->by_eta.particles[9], 1);
}

TEST(TrackBuilding, AHighCutKeepsNothingAndRatesOfNothingAreUndefined) {
  auto m = MeasureTracks(Event(), {0}, Scores(), {.cut = 0.95, .extend_cut = 0.95}, {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->kept_edges, 0);
  EXPECT_EQ(m->candidates, 0);
  EXPECT_EQ(m->track_efficiency(), 0.0);
  EXPECT_TRUE(std::isnan(m->fake_rate()));
  EXPECT_TRUE(std::isnan(m->edge_purity()));
}

TEST(TrackBuilding, RefusesWhatItCannotMeasure) {
  Dataset ds = Event();
  auto short_scores = MeasureTracks(ds, {0}, std::vector<float>(3, 0.9f), {}, {});
  ASSERT_FALSE(short_scores.ok());
  EXPECT_NE(short_scores.status().message().find("3 for 20 edges"), std::string::npos);
  auto bad_graph = MeasureTracks(ds, {1}, Scores(), {}, {});
  ASSERT_FALSE(bad_graph.ok());
  EXPECT_NE(bad_graph.status().message().find("graph 1"), std::string::npos);
  ds.graphs->particles.erase(kParticleHits);
  auto no_hits = MeasureTracks(ds, {0}, Scores(), {}, {});
  ASSERT_FALSE(no_hits.ok());
  EXPECT_NE(no_hits.status().message().find("num_hits"), std::string::npos);
  Dataset plain;
  plain.name = "plain";
  EXPECT_FALSE(MeasureTracks(plain, {}, {}, {}, {}).ok());
}

}  // namespace
}  // namespace fg::graph
