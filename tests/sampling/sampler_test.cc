// Mini-batch samplers: sampled neighbourhoods follow their exact distributions (chi-square tests
// on small graphs), blocks fit together, and a bulk of K batches equals K batches sampled alone,
// for any thread count.
#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "hdg/builder.h"
#include "tests/sampling/sampling_graphs.h"

namespace fg::sampling {
namespace {

double ChiSquare(const std::vector<double>& observed, const std::vector<double>& expected) {
  double x = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    x += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
  }
  return x;
}

//      1   2
//       \ /
//   5 -- 0 -- 3        root 0 has five neighbours; fanout 2 keeps each of the 10 pairs with
//        |             probability 1/10, and scales the weights by 5/2.
//        4
TEST(NodeWiseSampler, KeepsEverySubsetOfFanoutNeighboursEquallyOften) {
  Lists nbrs(6);
  for (int32_t u = 1; u <= 5; ++u) nbrs[0].push_back({u, 0.1f * u});
  const NeighbourhoodMatrix a = MatrixOf(nbrs, /*weighted=*/true);
  const int64_t draws = 20000;
  auto bulk = SampleBulk({&a}, {.fanouts = {2}, .seed = 7}, /*epoch=*/0, 0, Repeat({0}, draws));
  ASSERT_TRUE(bulk.ok()) << bulk.status();
  std::map<std::pair<int64_t, int64_t>, double> pairs;
  for (const MiniBatch& b : *bulk) {
    auto kept = Kept(b.blocks[0], 0);
    ASSERT_EQ(kept.size(), 2u);
    ASSERT_LT(kept[0].first, kept[1].first);  // distinct, in the neighbourhood's order
    for (auto [u, w] : kept) EXPECT_FLOAT_EQ(w, 0.1f * u * 2.5f);
    pairs[{kept[0].first, kept[1].first}] += 1;
  }
  ASSERT_EQ(pairs.size(), 10u);
  std::vector<double> observed, expected;
  for (auto [pair, count] : pairs) {
    observed.push_back(count);
    expected.push_back(draws / 10.0);
  }
  EXPECT_LT(ChiSquare(observed, expected), 27.88) << "chi-square, 9 degrees of freedom, p = 0.001";
}

// Rows of 4096 and of 4097 entries (Floyd's picks kept in a bit mask up to 4096, in a list beyond):
// each entry is kept equally often, and a row's picks are distinct and in the row's order.
TEST(NodeWiseSampler, LongRowsKeepEveryEntryEquallyOften) {
  const std::vector<int32_t> degrees = {4096, 4097};
  Lists nbrs(2 + degrees.back());
  for (int32_t r = 0; r < 2; ++r) {
    for (int32_t u = 0; u < degrees[r]; ++u) nbrs[r].push_back({2 + u, 1.0f});
  }
  const NeighbourhoodMatrix a = MatrixOf(nbrs, /*weighted=*/false);
  const int64_t draws = 10000, fanout = 4;
  auto bulk = SampleBulk({&a}, {.fanouts = {fanout}, .seed = 3}, /*epoch=*/0, 0, Repeat({0, 1}, draws));
  ASSERT_TRUE(bulk.ok()) << bulk.status();
  for (int32_t r = 0; r < 2; ++r) {
    std::vector<double> observed(degrees[r], 0.0);
    for (const MiniBatch& b : *bulk) {
      auto kept = Kept(b.blocks[0], r);
      ASSERT_EQ(kept.size(), static_cast<size_t>(fanout));
      for (size_t t = 0; t < kept.size(); ++t) {
        if (t > 0) {
          ASSERT_LT(kept[t - 1].first, kept[t].first);
        }
        observed[kept[t].first - 2] += 1;
      }
    }
    const std::vector<double> expected(degrees[r], static_cast<double>(draws * fanout) / degrees[r]);
    // Wilson-Hilferty: the chi-square quantile at p = 0.001 (z = 3.09) of degrees[r] - 1 dof.
    const double k = degrees[r] - 1.0, c = 2.0 / (9.0 * k);
    const double limit = k * std::pow(1.0 - c + 3.09 * std::sqrt(c), 3);
    EXPECT_LT(ChiSquare(observed, expected), limit) << "row of " << degrees[r];
  }
}

// A row that holds its root samples the same entries wherever the root sits among them (a
// partitioned dataset renumbers the neighbours, and GCN places the root among them by id).
TEST(NodeWiseSampler, TheRootsOwnEntryDoesNotMoveTheSample) {
  Lists first(7), middle(7);
  first[0] = {{0, 9.0f}, {1, 1.0f}, {2, 2.0f}, {3, 3.0f}, {4, 4.0f}, {5, 5.0f}, {6, 6.0f}};
  middle[0] = {{1, 1.0f}, {2, 2.0f}, {3, 3.0f}, {0, 9.0f}, {4, 4.0f}, {5, 5.0f}, {6, 6.0f}};
  const NeighbourhoodMatrix a = MatrixOf(first, true), b = MatrixOf(middle, true);
  ASSERT_NE(a.own_entries(), nullptr);
  ASSERT_NE(b.own_entries(), nullptr);
  EXPECT_EQ(a.own_entries()[0], 0);
  EXPECT_EQ(b.own_entries()[0], 3);
  EXPECT_EQ(a.own_entries()[1], -1);
  std::set<int64_t> seen;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    auto x = SampleBulk({&a}, {.fanouts = {3}, .seed = seed}, 0, 0, Repeat({0}, 1));
    auto y = SampleBulk({&b}, {.fanouts = {3}, .seed = seed}, 0, 0, Repeat({0}, 1));
    ASSERT_TRUE(x.ok() && y.ok());
    auto kx = Kept((*x)[0].blocks[0], 0), ky = Kept((*y)[0].blocks[0], 0);
    std::sort(kx.begin(), kx.end());
    std::sort(ky.begin(), ky.end());
    EXPECT_EQ(kx, ky) << "seed " << seed;
    for (auto [u, w] : kx) seen.insert(u);
  }
  EXPECT_EQ(seen.size(), 7u);  // every entry, the root's own included, is drawn at some seed
}

// Roots 0 and 1 reach columns 2..5:  0 -> 2 (w 1), 3 (w 2);  1 -> 3 (w 1), 4 (w 1), 5 (w 3).
// LADIES draws column u with probability proportional to the sum of its squared weights:
// 2: 1, 3: 4 + 1, 4: 1, 5: 9 (of 16).
TEST(LayerWiseSampler, DrawsColumnsInProportionToTheirSquaredWeights) {
  Lists nbrs(6);
  nbrs[0] = {{2, 1.0f}, {3, 2.0f}};
  nbrs[1] = {{3, 1.0f}, {4, 1.0f}, {5, 3.0f}};
  const NeighbourhoodMatrix a = MatrixOf(nbrs, /*weighted=*/true);
  const int64_t draws = 20000;
  auto bulk = SampleBulk({&a}, {.kind = SamplerKind::kLayerWise, .fanouts = {}, .layer_size = 1, .seed = 3}, 0, 0,
                         Repeat({0, 1}, draws));
  ASSERT_TRUE(bulk.ok()) << bulk.status();
  std::vector<double> observed(4, 0);
  for (const MiniBatch& b : *bulk) {
    const Block& block = b.blocks[0];
    ASSERT_EQ(block.table.numel(), 3) << "the two roots and the one drawn column";
    const int64_t u = block.table.i64()[2];
    ASSERT_GE(u, 2);
    observed[u - 2] += 1;
    for (int64_t root = 0; root < 2; ++root) {
      auto kept = Kept(block, root);
      float full = 0, sum = 0;
      for (auto [v, w] : nbrs[root]) full += w;
      for (auto [v, w] : kept) {
        EXPECT_EQ(v, u);
        sum += w;
      }
      if (!kept.empty()) {
        EXPECT_NEAR(sum, full, 1e-5) << "rows keep their full weight";
      }
    }
  }
  const std::vector<double> p = {1 / 16.0, 5 / 16.0, 1 / 16.0, 9 / 16.0};
  std::vector<double> expected;
  for (double x : p) expected.push_back(x * draws);
  EXPECT_LT(ChiSquare(observed, expected), 16.27) << "chi-square, 3 degrees of freedom, p = 0.001";
}

TEST(BulkSampling, EqualsTheBatchesSampledOneByOneForAnyThreadCount) {
  const Lists nbrs = RandomLists(400, 12, 11);
  const NeighbourhoodMatrix a = MatrixOf(nbrs, /*weighted=*/true);
  std::vector<int64_t> all(400);
  for (int64_t v = 0; v < 400; ++v) all[v] = v;
  const std::vector<Tensor> batches = EpochBatches(Tensor::FromVector(all), 48, 5, 2);
  for (const SamplerOptions& o :
       {SamplerOptions{.fanouts = {5, 3}, .seed = 9},
        SamplerOptions{.kind = SamplerKind::kLayerWise, .fanouts = {}, .layer_size = 40, .seed = 9}}) {
    SCOPED_TRACE(SamplerKindName(o.kind));
    const int threads = NumThreads();
    auto bulk = SampleBulk({&a, &a}, o, 2, 0, batches);
    ASSERT_TRUE(bulk.ok()) << bulk.status();
    std::vector<MiniBatch> alone;
    SetNumThreads(1);
    for (size_t k = 0; k < batches.size(); ++k) {
      auto one = SampleBulk({&a, &a}, o, 2, static_cast<int64_t>(k), {batches[k]});
      ASSERT_TRUE(one.ok()) << one.status();
      alone.push_back(std::move((*one)[0]));
    }
    SetNumThreads(threads);
    ExpectSameBatches(*bulk, alone);
    auto other_epoch = SampleBulk({&a, &a}, o, 3, 0, batches);
    ASSERT_TRUE(other_epoch.ok());
    EXPECT_NE((*other_epoch)[0].blocks[0].table.ToVector<int64_t>(),
              (*bulk)[0].blocks[0].table.ToVector<int64_t>())
        << "another epoch samples anew";
  }
}

// Each batch's vertices get their slots from an array over the vertex space where it is small,
// else from a map sized by the batches. The same graph, its vertices spread over a space of 8M
// (and keyed by their old ids), must give the same blocks.
TEST(BulkSampling, SameBlocksWithTheVerticesSpreadOverALargerSpace) {
  constexpr int64_t kN = 400;  // in a space over the sampler's array limit
  const Lists nbrs = RandomLists(kN, 12, 7);
  const NeighbourhoodMatrix large = SpreadMatrix(nbrs);
  const NeighbourhoodMatrix small = MatrixOf(nbrs, /*weighted=*/true);
  std::vector<int64_t> all(kN);
  for (int64_t v = 0; v < kN; ++v) all[v] = v;
  const std::vector<Tensor> batches = EpochBatches(Tensor::FromVector(all), 48, 5, 0);
  for (const SamplerOptions& o :
       {SamplerOptions{.fanouts = {5, 3}, .seed = 4},
        SamplerOptions{.kind = SamplerKind::kLayerWise, .fanouts = {}, .layer_size = 40, .seed = 4}}) {
    SCOPED_TRACE(SamplerKindName(o.kind));
    for (size_t k : {size_t{1}, batches.size()}) {
      const std::vector<Tensor> bulk(batches.begin(), batches.begin() + k);
      std::vector<Tensor> spread_bulk;
      for (const Tensor& b : bulk) {
        std::vector<int64_t> ids = b.ToVector<int64_t>();
        for (int64_t& v : ids) v = Spread(v);
        spread_bulk.push_back(Tensor::FromVector(ids));
      }
      auto in_small = SampleBulk({&small, &small}, o, 0, 0, bulk);
      auto in_large = SampleBulk({&large, &large}, o, 0, 0, spread_bulk);
      ASSERT_TRUE(in_small.ok() && in_large.ok());
      for (MiniBatch& b : *in_small) {  // renumbered as in the larger space
        b.seeds = spread_bulk[b.index];
        for (Block& block : b.blocks) {
          std::vector<int64_t> table = block.table.ToVector<int64_t>();
          for (int64_t& v : table) v = Spread(v);
          block.table = Tensor::FromVector(table);
        }
      }
      ExpectSameBatches(*in_small, *in_large);
    }
  }
}

// Blocks are built from rows as the layer step reports them drawn. Whatever the order, grouping
// and threads of the reports (none at all included), a block is its frontier, then its sampled
// vertices new to it in order of first appearance, and the same blocks come out.
TEST(BulkSampling, BlocksDoNotDependOnHowTheirRowsAreReported) {
  constexpr int64_t kN = 3000;
  const Lists nbrs = RandomLists(kN, 30, 8);
  const NeighbourhoodMatrix a = MatrixOf(nbrs, /*weighted=*/true);
  std::vector<int64_t> all(kN);
  for (int64_t v = 0; v < kN; ++v) all[v] = v;
  std::vector<Tensor> batches = EpochBatches(Tensor::FromVector(all), 300, 3, 0);
  batches.resize(5);
  batches[2] = Tensor::FromVector(std::vector<int64_t>{});  // an empty one among them
  const SamplerOptions o{.fanouts = {7, 4}, .seed = 6};
  const int threads = NumThreads();
  // Draws every batch's rows aside, then copies them out and reports them per `order` (none:
  // never), in ranges of `grain`; rows not yet reported hold vertex 0.
  auto step = [&](const std::string& order, int64_t grain) {
    return [&, order, grain](int l, const std::vector<std::vector<int64_t>>& frontier,
                             std::vector<SampledRows>* out, const RowsReady& ready) {
      const int64_t K = static_cast<int64_t>(frontier.size());
      std::vector<std::vector<int64_t>> rows = frontier;  // the matrix's rows are the vertices
      std::vector<int64_t> batch(K);
      std::iota(batch.begin(), batch.end(), 0);
      std::vector<SampledRows> drawn(K);
      SampleRows(a, o, o.fanouts[1 - l], 0, l, batch, frontier, rows, &drawn);
      std::vector<std::pair<int64_t, int64_t>> stacked;  // (batch, row) of each stacked row
      for (int64_t k = 0; k < K; ++k) {
        (*out)[k].offsets = drawn[k].offsets;
        (*out)[k].cols.assign(drawn[k].cols.size(), 0);
        (*out)[k].weights.assign(drawn[k].weights.size(), 0.0f);
        for (size_t j = 0; j < frontier[k].size(); ++j) stacked.push_back({k, j});
      }
      if (order == "none") {
        *out = drawn;
        return absl::OkStatus();
      }
      const int64_t total = static_cast<int64_t>(stacked.size());
      std::vector<int64_t> starts;
      for (int64_t r = 0; r < total; r += grain) starts.push_back(r);
      if (order == "reversed") std::reverse(starts.begin(), starts.end());
      if (order == "shuffled") {
        RandomStream rng(17, static_cast<uint64_t>(l));
        for (int64_t i = static_cast<int64_t>(starts.size()) - 1; i > 0; --i)
          std::swap(starts[i], starts[rng.Below(static_cast<uint64_t>(i + 1))]);
      }
      ParallelForDynamic(0, static_cast<int64_t>(starts.size()), 1, [&](int64_t i) {
        const int64_t end = std::min(total, starts[i] + grain);
        for (int64_t r = starts[i]; r < end; ++r) {
          const auto [k, j] = stacked[r];
          for (int64_t e = drawn[k].offsets[j]; e < drawn[k].offsets[j + 1]; ++e) {
            (*out)[k].cols[e] = drawn[k].cols[e];
            (*out)[k].weights[e] = drawn[k].weights[e];
          }
        }
        ready(starts[i], end);
      });
      return absl::OkStatus();
    };
  };
  auto reference = SampleBlocks({&a, &a}, 0, batches, step("none", 1));
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (const MiniBatch& b : *reference) {
    std::vector<int64_t> frontier = b.seeds.ToVector<int64_t>();
    for (int l = 1; l >= 0; --l) {
      const Block& block = b.blocks[l];
      std::vector<int64_t> expect = frontier;
      const std::vector<int64_t> table = block.table.ToVector<int64_t>();
      for (int32_t c : block.hdg->level(1).csr().indices.ToVector<int32_t>()) {
        ASSERT_LT(c, static_cast<int32_t>(table.size()));
        if (std::find(expect.begin(), expect.end(), table[c]) == expect.end()) expect.push_back(table[c]);
      }
      EXPECT_EQ(table, expect) << "batch " << b.index << " layer " << l;
      frontier = table;
    }
  }
  SetNumThreads(4);
  for (const char* order : {"in order", "reversed", "shuffled"}) {
    for (int64_t grain : {1, 37, 1000}) {
      SCOPED_TRACE(::testing::Message() << order << ", ranges of " << grain);
      auto got = SampleBlocks({&a, &a}, 0, batches, step(order, grain));
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectSameBatches(*got, *reference);
    }
  }
  SetNumThreads(threads);
}

TEST(BulkSampling, EmptyBatchesAmongOthersSampleNothing) {
  const Lists nbrs = RandomLists(100, 8, 3);
  const NeighbourhoodMatrix a = MatrixOf(nbrs, /*weighted=*/false);
  const Tensor none = Tensor::FromVector(std::vector<int64_t>{});
  const std::vector<Tensor> batches = {Tensor::FromVector(std::vector<int64_t>{1, 2}), none, none,
                                       Tensor::FromVector(std::vector<int64_t>{3, 50})};
  auto bulk = SampleBulk({&a, &a}, {.fanouts = {3, 2}, .seed = 1}, 0, 0, batches);
  ASSERT_TRUE(bulk.ok()) << bulk.status();
  EXPECT_EQ((*bulk)[1].sampled_edges, 0);
  EXPECT_EQ((*bulk)[2].blocks[0].table.numel(), 0);
  auto last = SampleBulk({&a, &a}, {.fanouts = {3, 2}, .seed = 1}, 0, 3, {batches[3]});
  ASSERT_TRUE(last.ok());
  ExpectSameBatches({(*bulk)[3]}, *last);
}

TEST(BulkSampling, BlocksChainFromTheInputRowsToTheSeeds) {
  const Lists nbrs = RandomLists(300, 20, 4);
  const NeighbourhoodMatrix a = MatrixOf(nbrs, /*weighted=*/false);
  std::vector<int64_t> all(300);
  for (int64_t v = 0; v < 300; ++v) all[v] = v;
  const std::vector<Tensor> batches = EpochBatches(Tensor::FromVector(all), 32, 1, 0);
  auto bulk = SampleBulk({&a, &a, &a}, {.fanouts = {6, 4, 0}, .seed = 2}, 0, 0, batches);
  ASSERT_TRUE(bulk.ok()) << bulk.status();
  for (const MiniBatch& b : *bulk) {
    EXPECT_EQ(b.blocks[2].hdg->num_roots(), b.seeds.numel());
    for (int l = 0; l < 3; ++l) {
      const Block& block = b.blocks[l];
      const std::vector<int64_t> table = block.table.ToVector<int64_t>();
      EXPECT_EQ(std::set<int64_t>(table.begin(), table.end()).size(), table.size()) << "distinct rows";
      const std::vector<int64_t> roots =
          l == 2 ? b.seeds.ToVector<int64_t>() : b.blocks[l + 1].table.ToVector<int64_t>();
      ASSERT_EQ(block.hdg->num_roots(), static_cast<int64_t>(roots.size()));
      const int fanout = std::vector<int>{0, 4, 6}[l];  // hops from the seeds: 6, 4, then all
      for (size_t j = 0; j < roots.size(); ++j) {
        EXPECT_EQ(table[j], roots[j]) << "the layer's roots lead its input rows";
        std::set<int64_t> full;
        for (auto [u, w] : nbrs[roots[j]]) full.insert(u);
        auto kept = Kept(block, static_cast<int64_t>(j));
        const size_t expect = fanout > 0 ? std::min<size_t>(fanout, full.size()) : full.size();
        EXPECT_EQ(kept.size(), expect);
        for (auto [u, w] : kept) EXPECT_TRUE(full.count(u)) << u << " is not a neighbour of " << roots[j];
      }
    }
  }
}

TEST(EpochBatches, CoverEveryIdOnceInAnOrderThatDependsOnSeedAndEpoch) {
  std::vector<int64_t> ids;
  for (int64_t v = 0; v < 1000; ++v) ids.push_back(3 * v + 1);
  const Tensor t = Tensor::FromVector(ids);
  const std::vector<Tensor> a = EpochBatches(t, 64, 1, 0);
  ASSERT_EQ(a.size(), 16u);
  EXPECT_EQ(a.back().numel(), 1000 - 15 * 64);
  std::vector<int64_t> seen;
  for (const Tensor& b : a) {
    for (int64_t v : b.ToVector<int64_t>()) seen.push_back(v);
  }
  EXPECT_NE(seen, ids) << "shuffled";
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, ids);
  EXPECT_EQ(EpochBatches(t, 64, 1, 0)[3].ToVector<int64_t>(), a[3].ToVector<int64_t>());
  EXPECT_NE(EpochBatches(t, 64, 1, 1)[0].ToVector<int64_t>(), a[0].ToVector<int64_t>());
  EXPECT_NE(EpochBatches(t, 64, 2, 0)[0].ToVector<int64_t>(), a[0].ToVector<int64_t>());
}

TEST(BulkSampling, ErrorsNameTheVertexOrTheOption) {
  Lists nbrs(4);
  nbrs[0] = {{1, 1.0f}};
  const NeighbourhoodMatrix a = MatrixOf(nbrs, false);
  auto wrong = SampleBulk({&a}, {.fanouts = {2, 2}}, 0, 0, Repeat({0}, 1));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("fanouts: 2 given for a model of 1 layers"), std::string::npos)
      << wrong.status();
  auto outside = SampleBulk({&a}, {.fanouts = {2}}, 0, 0, Repeat({9}, 1));
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("vertex 9"), std::string::npos) << outside.status();
  auto no_size = SampleBulk({&a}, {.kind = SamplerKind::kLayerWise, .fanouts = {}}, 0, 0, Repeat({0}, 1));
  ASSERT_FALSE(no_size.ok());
  EXPECT_NE(no_size.status().message().find("layer_size"), std::string::npos);
}

// Seeds without a row (past the vertices, negative, or -1) are refused, by both samplers, naming
// the first of them in the bulk's stacked order whatever the thread count.
TEST(BulkSampling, TheFirstVertexWithoutARowIsNamed) {
  const NeighbourhoodMatrix a = MatrixOf(RandomLists(300, 4, 2), true);
  const int threads = NumThreads();
  for (const SamplerOptions& o :
       {SamplerOptions{.fanouts = {2}, .seed = 1},
        SamplerOptions{.kind = SamplerKind::kLayerWise, .fanouts = {}, .layer_size = 8, .seed = 1}}) {
    for (int64_t bad : {int64_t{300}, int64_t{-3}, int64_t{-1}}) {
      // Batch 0 is whole; batch 1 holds `bad` after 200 good seeds, then two other bad ones.
      std::vector<int64_t> second(200);
      std::iota(second.begin(), second.end(), 0);
      second.insert(second.end(), {bad, 5, 301, -7});
      const std::vector<Tensor> seeds = {Tensor::FromVector(std::vector<int64_t>{0, 1, 2}),
                                         Tensor::FromVector(second)};
      for (int t : {1, 4}) {
        SetNumThreads(t);
        auto got = SampleBulk({&a}, o, 0, 0, seeds);
        ASSERT_FALSE(got.ok()) << "seed " << bad;
        EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
        EXPECT_NE(got.status().message().find(absl::StrCat("vertex ", bad, " has no neighbourhood")),
                  std::string::npos)
            << got.status();
      }
    }
  }
  SetNumThreads(threads);
}

}  // namespace
}  // namespace fg::sampling
