// Metapath parsing, validation errors, exact instance enumeration on a hand-drawn graph, and the
// seeded uniform cap, metapath-based neighbours (nau/metapath.h), and sizing before building
// (nau/metapath_budget.h).
#include "nau/metapath.h"
#include "nau/metapath_budget.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/udf_examples/tiny_imdb.h"

namespace fg::nau {
namespace {

using Instances = std::vector<std::vector<int32_t>>;

Instances Split(const std::vector<int32_t>& flat, int len) {
  Instances out;
  for (size_t i = 0; i < flat.size(); i += len) out.emplace_back(flat.begin() + i, flat.begin() + i + len);
  return out;
}

std::string ErrorOf(const std::string& text, const graph::HeteroGraph& g) {
  auto mp = ParseMetapath(text, g);
  EXPECT_FALSE(mp.ok()) << text << " parsed";
  return mp.ok() ? "" : std::string(mp.status().message());
}

TEST(Metapath, ParsesInitialsFullNamesAndPrefixes) {
  const graph::Dataset ds = testing::TinyImdb();
  for (const char* text : {"M-D-M", "movie-director-movie", "m-dir-MOVIE", " M - D - M "}) {
    auto mp = ParseMetapath(text, ds.graph);
    ASSERT_TRUE(mp.ok()) << text << ": " << mp.status();
    EXPECT_EQ(mp->name, "M-D-M");
    EXPECT_EQ(mp->node_types, (std::vector<int>{0, 1, 0}));
    ASSERT_EQ(mp->steps.size(), 2u);
    EXPECT_EQ(mp->steps[0].relation, 0);
    EXPECT_TRUE(mp->steps[0].forward);  // movie -directed_by-> director
    EXPECT_FALSE(mp->steps[1].forward);  // director <-directed_by- movie
  }
  auto long_path = ParseMetapath("D-M-A-M-D", ds.graph);
  ASSERT_TRUE(long_path.ok());
  EXPECT_EQ(long_path->Describe(ds.graph),
            "director <-directed_by- movie -starring-> actor <-starring- movie -directed_by-> "
            "director");
  EXPECT_EQ(long_path->SchemaType().length, 5);
}

TEST(Metapath, ErrorsNameTheMetapathAndTheStep) {
  graph::Dataset ds = testing::TinyImdb();
  EXPECT_NE(ErrorOf("M-X-M", ds.graph).find("metapath 'M-X-M': 'X' names no node type (types: "
                                             "movie, director, actor)"),
            std::string::npos);
  EXPECT_NE(ErrorOf("M-M", ds.graph).find("metapath 'M-M': step 1 (movie -> movie) matches no "
                                          "relation"),
            std::string::npos);
  EXPECT_NE(ErrorOf("D-A", ds.graph).find("step 1 (director -> actor) matches no relation"),
            std::string::npos);
  EXPECT_NE(ErrorOf("M-D--M", ds.graph).find("empty node type at position 3"), std::string::npos);
  EXPECT_NE(ErrorOf("movie", ds.graph).find("expected node types joined by '-'"),
            std::string::npos);
  // Two types with the initial 'a', and two relations between movie and director.
  ds.graph.node_types.push_back("author");
  ds.graph.num_nodes.push_back(1);
  ds.graph.relations.push_back(
      testing::TinyRelation("director", "produced", "movie", 2, 3, {0}, {1}));
  EXPECT_NE(ErrorOf("M-A-M", ds.graph).find("'A' is ambiguous (actor, author)"), std::string::npos);
  EXPECT_NE(ErrorOf("M-D-M", ds.graph)
                .find("step 1 (movie -> director) is ambiguous, it matches "
                      "movie___directed_by___director (forward) and "
                      "director___produced___movie (backward)"),
            std::string::npos);
  // Canonical names fall back to full names when initials clash.
  auto mp = ParseMetapath("movie-actor-movie", ds.graph);
  ASSERT_TRUE(mp.ok());
  EXPECT_EQ(mp->name, "M-actor-M");
}

TEST(Metapath, ListsAndAuto) {
  const graph::Dataset ds = testing::TinyImdb();
  auto list = ParseMetapathList("M-D-M;movie-actor-movie D-M-D", ds.graph);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[1].name, "M-A-M");
  auto dup = ParseMetapathList("M-D-M,movie-director-movie", ds.graph);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("repeats M-D-M"), std::string::npos) << dup.status();
  EXPECT_FALSE(ParseMetapathList(" , ", ds.graph).ok());
  // MAGNN's IMDB metapaths follow from the schema.
  auto automatic = ParseMetapathList("auto", ds.graph);
  ASSERT_TRUE(automatic.ok());
  std::vector<std::string> names;
  for (const Metapath& mp : *automatic) names.push_back(mp.name);
  EXPECT_EQ(names, (std::vector<std::string>{"M-D-M", "M-A-M", "D-M-D", "D-M-A-M-D", "A-M-A",
                                             "A-M-D-M-A"}));
}

TEST(MetapathEnumerator, EnumeratesExactInstancesInBothDirections) {
  const graph::Dataset ds = testing::TinyImdb();
  const VertexSpace space(ds.graph);
  auto mps = ParseMetapathList("M-D-M,M-A-M,D-M-A-M-D,A-M-D-M-A", ds.graph);
  ASSERT_TRUE(mps.ok());
  MetapathEnumerator walk(&ds.graph, &space, *mps);
  auto all = [&](int m, int32_t start) {
    std::vector<int32_t> flat;
    const int64_t k = walk.Enumerate(m, start, 0, nullptr, &flat);
    EXPECT_EQ(k, walk.Count(m, start));
    return Split(flat, (*mps)[m].length());
  };
  // Global ids: movies 0..2, directors 3, 4, actors 5..7. Walks may revisit the root.
  EXPECT_EQ(all(0, 0), (Instances{{0, 3, 0}, {0, 3, 1}}));
  EXPECT_EQ(all(0, 2), (Instances{{2, 4, 2}}));
  EXPECT_EQ(all(1, 0), (Instances{{0, 5, 0}, {0, 6, 0}, {0, 6, 1}, {0, 6, 2}}));
  EXPECT_EQ(all(1, 2), (Instances{{2, 6, 0}, {2, 6, 1}, {2, 6, 2}, {2, 7, 2}}));
  EXPECT_EQ(all(2, 1),  // d1 - m2 - {a1, a2} - movie - director
            (Instances{{4, 2, 6, 0, 3}, {4, 2, 6, 1, 3}, {4, 2, 6, 2, 4}, {4, 2, 7, 2, 4}}));
  EXPECT_EQ(all(3, 0),  // a0 - m0 - d0 - {m0, m1} - actors
            (Instances{{5, 0, 3, 0, 5}, {5, 0, 3, 0, 6}, {5, 0, 3, 1, 6}}));
  EXPECT_EQ(walk.Count(3, 1), 8);  // a1 via m0 (3), m1 (3), m2 (2)
}

TEST(MetapathEnumerator, CapSamplesUniformlyAndDeterministically) {
  const graph::Dataset ds = testing::TinyImdb();
  const VertexSpace space(ds.graph);
  auto mps = ParseMetapathList("M-A-M", ds.graph);
  ASSERT_TRUE(mps.ok());
  MetapathEnumerator walk(&ds.graph, &space, *mps);
  std::vector<int32_t> full;
  walk.Enumerate(0, 0, 0, nullptr, &full);
  const Instances everything = Split(full, 3);  // 4 instances of m0
  auto sample = [&](uint64_t seed) {
    RandomStream rng(seed, 42);
    std::vector<int32_t> flat;
    EXPECT_EQ(walk.Enumerate(0, 0, 2, &rng, &flat), 2);
    return Split(flat, 3);
  };
  EXPECT_EQ(sample(7), sample(7));
  std::map<std::vector<int32_t>, int> hits;
  const int draws = 4000;
  for (int s = 0; s < draws; ++s) {
    const Instances got = sample(s);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_NE(got[0], got[1]);
    // A subset of the instances, in depth-first order.
    auto i0 = std::find(everything.begin(), everything.end(), got[0]);
    auto i1 = std::find(everything.begin(), everything.end(), got[1]);
    ASSERT_NE(i0, everything.end());
    ASSERT_NE(i1, everything.end());
    EXPECT_LT(i0 - everything.begin(), i1 - everything.begin());
    ++hits[got[0]];
    ++hits[got[1]];
  }
  // Each of the 4 instances is kept with probability 1/2 (3 sigma ~ 0.024 * draws).
  ASSERT_EQ(hits.size(), 4u);
  for (const auto& [inst, n] : hits) EXPECT_NEAR(n, draws / 2, 100) << inst[1] << "," << inst[2];
  // Below the cap, everything and no randomness.
  std::vector<int32_t> flat;
  EXPECT_EQ(walk.Enumerate(0, 0, 4, nullptr, &flat), 4);
  EXPECT_EQ(flat, full);
}

TEST(MetapathEnumerator, EndpointsAreTheDistinctInstanceEndsWithTheirPathCounts) {
  const graph::Dataset ds = testing::TinyImdb();
  const VertexSpace space(ds.graph);
  auto mps = ParseMetapathList("M-D-M,M-A-M,D-M-A-M-D,A-M-D-M-A", ds.graph);
  ASSERT_TRUE(mps.ok());
  MetapathEnumerator walk(&ds.graph, &space, *mps);
  for (int m = 0; m < static_cast<int>(mps->size()); ++m) {
    const int len = (*mps)[m].length();
    const int t = (*mps)[m].start_type();
    for (int32_t v = 0; v < ds.graph.num_nodes[t]; ++v) {
      // Brute force: every instance, grouped by its last vertex.
      std::vector<int32_t> flat;
      walk.Enumerate(m, v, 0, nullptr, &flat);
      std::map<int32_t, int64_t> expected;
      for (const auto& inst : Split(flat, len)) ++expected[inst.back()];
      std::vector<int32_t> ends;
      std::vector<int64_t> paths;
      const int64_t k = walk.Endpoints(m, v, 0, nullptr, &ends, &paths);
      ASSERT_EQ(k, static_cast<int64_t>(expected.size())) << (*mps)[m].name << " at " << v;
      std::map<int32_t, int64_t> got;
      for (int64_t i = 0; i < k; ++i) got[ends[i]] = paths[i];
      EXPECT_EQ(got, expected) << (*mps)[m].name << " at " << v;
      EXPECT_TRUE(std::is_sorted(ends.begin(), ends.end()));
    }
  }
  // m0's M-A-M neighbours are m0, m1, m2 (via a0 and a1): a cap of 2 samples distinct ones,
  // each kept with probability 2/3, the same for the same stream.
  std::map<int32_t, int> hits;
  const int draws = 3000;
  for (int s = 0; s < draws; ++s) {
    RandomStream rng(s, 3), again(s, 3);
    std::vector<int32_t> ends, same;
    ASSERT_EQ(walk.Endpoints(1, 0, 2, &rng, &ends), 2);
    walk.Endpoints(1, 0, 2, &again, &same);
    EXPECT_EQ(ends, same);
    ASSERT_LT(ends[0], ends[1]);
    for (int32_t u : ends) ++hits[u];
  }
  ASSERT_EQ(hits.size(), 3u);
  for (const auto& [u, n] : hits) EXPECT_NEAR(n, 2 * draws / 3, 80) << u;
}

TEST(MetapathBudget, EstimatesAreCappedCountsOrAverageDegreesOnAPart) {
  graph::Dataset ds = testing::TinyImdb();
  auto mps = ParseMetapathList("M-A-M,A-M-D-M-A", ds.graph);
  ASSERT_TRUE(mps.ok());
  const VertexSpace space(ds.graph);
  MetapathEnumerator walk(&ds.graph, &space, *mps);
  for (int64_t cap : {0, 1, 3}) {
    const std::vector<MetapathEstimate> est = EstimateMetapaths(*mps, ds, cap);
    ASSERT_EQ(est.size(), 2u);
    for (int m = 0; m < 2; ++m) {
      const int t = (*mps)[m].start_type();
      double expected = 0, most = 0;
      for (int32_t v = 0; v < ds.graph.num_nodes[t]; ++v) {
        const int64_t c = walk.Count(m, v);
        expected += static_cast<double>(cap > 0 ? std::min(c, cap) : c);
        most = std::max(most, static_cast<double>(c));
      }
      EXPECT_TRUE(est[m].exact);
      EXPECT_EQ(est[m].roots, ds.graph.num_nodes[t]);
      EXPECT_DOUBLE_EQ(est[m].instances, expected) << (*mps)[m].name << " cap " << cap;
      EXPECT_DOUBLE_EQ(est[m].per_root_max, most);
    }
  }
  // One part of two: products of the whole graph's average degrees, capped per root.
  ds.part.emplace();
  ds.part->bounds = {{0, 2, 3}, {0, 1, 2}, {0, 2, 3}};
  ds.part->relation_edges = {3, 5};  // directed_by, starring
  const std::vector<MetapathEstimate> est = EstimateMetapaths(*mps, ds, 0);
  EXPECT_FALSE(est[0].exact);
  // M-A-M: 3 movies x (5 / 3 actors per movie) x (5 / 3 movies per actor).
  EXPECT_NEAR(est[0].instances, 3 * (5.0 / 3) * (5.0 / 3), 1e-9);
  // A-M-D-M-A: 3 actors x 5/3 x 3/3 x 3/2 x 5/3.
  EXPECT_NEAR(est[1].instances, 3 * (5.0 / 3) * 1.0 * 1.5 * (5.0 / 3), 1e-9);
  EXPECT_NEAR(EstimateMetapaths(*mps, ds, 2)[0].instances, 3 * 2.0, 1e-9);
}

TEST(MetapathBudget, DropsOtherTypesFirstLargestFirstAndKeepsTheTargetsSmallest) {
  const graph::Dataset ds = testing::TinyImdb();
  auto mps = ParseMetapathList("M-D-M,M-A-M,D-M-D,A-M-A", ds.graph);
  ASSERT_TRUE(mps.ok());
  // Sizes by hand: M-D-M 10, M-A-M 40, D-M-D 30, A-M-A 20 bytes.
  const std::map<std::string, double> size = {{"M-D-M", 10}, {"M-A-M", 40}, {"D-M-D", 30}, {"A-M-A", 20}};
  std::vector<MetapathEstimate> est(mps->size());
  auto bytes = [&](const Metapath& mp, const MetapathEstimate&) { return size.at(mp.name); };
  auto kept = [&](double budget) {
    std::vector<std::string> names;
    for (const Metapath& mp : ChooseMetapaths(*mps, est, bytes, budget, /*keep_type=*/0).Kept()) {
      names.push_back(mp.name);
    }
    return names;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(kept(100), (Names{"M-D-M", "M-A-M", "D-M-D", "A-M-A"}));
  EXPECT_EQ(kept(70), (Names{"M-D-M", "M-A-M", "A-M-A"}));  // D-M-D (other type, largest) goes
  EXPECT_EQ(kept(50), (Names{"M-D-M", "M-A-M"}));           // then A-M-A
  EXPECT_EQ(kept(49), (Names{"M-D-M"}));                    // then the target's largest
  EXPECT_EQ(kept(1), (Names{"M-D-M"}));                     // the target's smallest stays
  const MetapathBudget b = ChooseMetapaths(*mps, est, bytes, 50, 0);
  EXPECT_DOUBLE_EQ(b.kept_bytes, 50);
  EXPECT_NE(b.Describe().find("D-M-D"), std::string::npos);
  EXPECT_NE(b.Describe().find("dropped"), std::string::npos);
}

}  // namespace
}  // namespace fg::nau
