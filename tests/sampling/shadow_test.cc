// ShaDow sampling: each batch equals a direct construction (per root a breadth-first search with
// the same per-row draws, then the induced edges found by brute force), whatever the bulk size and
// thread count; subgraphs are block-diagonal; pooling reads out root + mean; bad options are named.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "sampling/device_sampler.h"
#include "sampling/pick.h"
#include "sampling/sampler.h"
#include "tests/sampling/sampling_graphs.h"

namespace fg::sampling {
namespace {

// One layer of a batch as plain arrays.
struct RefLayer {
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> children;
  std::vector<float> weights;
};
struct RefBatch {
  std::vector<int64_t> table;
  std::vector<RefLayer> layers;
  std::vector<std::vector<std::pair<int32_t, float>>> readout;  // per seed: (row, value)
};

// Root `root`'s vertex set in batch `batch`: a BFS drawing each row with DrawRow (pick.h), as
// node-wise sampling draws one row, under batch ShadowDrawBatch(batch, root).
std::vector<int64_t> Bfs(const NeighbourhoodMatrix& a, const SamplerOptions& o, int epoch, int64_t batch,
                         int64_t root) {
  const MatrixView view = ViewOf(a);
  std::vector<int64_t> set{root}, frontier{root};
  for (int h = 0; h < static_cast<int>(o.fanouts.size()); ++h) {
    std::vector<int64_t> next;
    for (int64_t v : frontier) {
      const int64_t row = a.RowOf(v);
      const int64_t keep = KeptEntries(view, row, o.fanouts[h]);
      std::vector<int32_t> cols(keep);
      std::vector<float> w(keep);
      DrawRow(view, o.seed, NodeWiseStreamPrefix(epoch, ShadowDrawBatch(batch, root), h), v, row, keep, cols.data(),
              w.data());
      for (int32_t c : cols) {
        if (std::find(set.begin(), set.end(), c) == set.end()) {
          set.push_back(c);
          next.push_back(c);
        }
      }
    }
    frontier = next;
  }
  return set;
}

// Batch `batch` of seeds `seeds`, built directly from its roots' sets over `layers`.
RefBatch Direct(const std::vector<const NeighbourhoodMatrix*>& layers, const SamplerOptions& o, int epoch,
                int64_t batch, const std::vector<int64_t>& seeds) {
  const int64_t B = static_cast<int64_t>(seeds.size());
  std::vector<std::vector<int64_t>> sets;
  for (int64_t r : seeds) sets.push_back(Bfs(*layers.back(), o, epoch, batch, r));
  RefBatch out;
  out.table = seeds;
  std::vector<std::vector<int64_t>> row_of(B);  // table row of set g's vertex i
  for (int64_t g = 0; g < B; ++g) {
    row_of[g].push_back(g);
    for (size_t i = 1; i < sets[g].size(); ++i) {
      row_of[g].push_back(static_cast<int64_t>(out.table.size()));
      out.table.push_back(sets[g][i]);
    }
  }
  const int L = static_cast<int>(layers.size());
  for (int l = 0; l < L; ++l) {
    const NeighbourhoodMatrix& a = *layers[l];
    const bool all = l < L - 1 || o.pool == SamplerOptions::Pool::kMean;
    // Rows in table order: (set, index) of each table row.
    std::vector<std::pair<int64_t, int64_t>> owner(out.table.size());
    for (int64_t g = 0; g < B; ++g) {
      for (size_t i = 0; i < sets[g].size(); ++i) owner[row_of[g][i]] = {g, static_cast<int64_t>(i)};
    }
    RefLayer ref;
    for (int64_t t = 0; t < (all ? static_cast<int64_t>(out.table.size()) : B); ++t) {
      const auto [g, i] = owner[t];
      const int64_t row = a.RowOf(sets[g][i]);
      const int64_t b = a.csr().row_ptr()[row], e = a.csr().row_ptr()[row + 1];
      double full = 0, kept = 0;
      std::vector<float> w;
      for (int64_t x = b; x < e; ++x) {
        const float wx = a.weights() != nullptr ? a.weights()[x] : 1.0f;
        full += wx;
        const auto at = std::find(sets[g].begin(), sets[g].end(), a.csr().col()[x]);
        if (at == sets[g].end()) continue;
        ref.children.push_back(static_cast<int32_t>(row_of[g][at - sets[g].begin()]));
        kept += wx;
        w.push_back(wx);
      }
      if (static_cast<int64_t>(w.size()) < e - b && kept != 0) {
        for (float& x : w) x *= static_cast<float>(full / kept);
      }
      if (a.weights() != nullptr) ref.weights.insert(ref.weights.end(), w.begin(), w.end());
      ref.offsets.push_back(static_cast<int64_t>(ref.children.size()));
    }
    out.layers.push_back(ref);
  }
  if (o.pool == SamplerOptions::Pool::kMean) {
    for (int64_t g = 0; g < B; ++g) {
      std::map<int32_t, float> r;
      for (size_t i = 0; i < sets[g].size(); ++i) r[static_cast<int32_t>(row_of[g][i])] += 1.0f / sets[g].size();
      r[static_cast<int32_t>(g)] += 1.0f;
      out.readout.emplace_back(r.begin(), r.end());
    }
  }
  return out;
}

void ExpectBatch(const MiniBatch& got, const RefBatch& want) {
  ASSERT_EQ(got.blocks.size(), want.layers.size());
  for (size_t l = 0; l < want.layers.size(); ++l) {
    SCOPED_TRACE(absl::StrCat("layer ", l));
    const Block& b = got.blocks[l];
    EXPECT_EQ(b.table.ToVector<int64_t>(), want.table);
    const hdg::HdgLevel& level = b.hdg->level(1);
    EXPECT_EQ(level.csr().offsets.ToVector<int64_t>(), want.layers[l].offsets);
    EXPECT_EQ(level.csr().indices.ToVector<int32_t>(), want.layers[l].children);
    ASSERT_EQ(level.weights.defined(), !want.layers[l].weights.empty() || want.layers[l].children.empty());
    if (level.weights.defined()) {
      const std::vector<float> w = level.weights.ToVector<float>();
      ASSERT_EQ(w.size(), want.layers[l].weights.size());
      for (size_t x = 0; x < w.size(); ++x) EXPECT_NEAR(w[x], want.layers[l].weights[x], 1e-5f * w[x]);
    }
  }
  if (want.readout.empty()) {
    EXPECT_EQ(got.readout.num_rows, 0);
    return;
  }
  ASSERT_EQ(got.readout.num_rows, static_cast<int64_t>(want.readout.size()));
  EXPECT_EQ(got.readout.num_cols, static_cast<int64_t>(want.table.size()));
  for (int64_t g = 0; g < got.readout.num_rows; ++g) {
    std::map<int32_t, float> r;
    for (int64_t x = got.readout.row_ptr()[g]; x < got.readout.row_ptr()[g + 1]; ++x) {
      r[got.readout.col()[x]] += got.readout.val()[x];
    }
    ASSERT_EQ(r.size(), want.readout[g].size()) << "seed " << g;
    for (const auto& [c, v] : want.readout[g]) EXPECT_NEAR(r[c], v, 1e-6f) << "seed " << g << " row " << c;
  }
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(ShadowSampler, BatchesEqualADirectConstructionForAnyBulkAndThreads) {
  const int threads = NumThreads();
  for (bool weighted : {true, false}) {
    const NeighbourhoodMatrix a = MatrixOf(RandomLists(300, 9, weighted ? 3 : 4), weighted);
    const std::vector<Tensor> batches = EpochBatches(Tensor::FromVector(Iota(300)), 23, 7, 1);
    for (const SamplerOptions& o :
         {SamplerOptions{.kind = SamplerKind::kShadow, .fanouts = {3, 2}, .seed = 5},
          SamplerOptions{.kind = SamplerKind::kShadow, .fanouts = {0, 2}, .seed = 6},
          SamplerOptions{.kind = SamplerKind::kShadow, .fanouts = {4, 3, 2}, .seed = 7,
                         .pool = SamplerOptions::Pool::kMean}}) {
      for (int layers : {1, 3}) {
        SCOPED_TRACE(absl::StrCat("weighted ", weighted, ", hops ", o.fanouts.size(), ", layers ", layers));
        const std::vector<const NeighbourhoodMatrix*> m(layers, &a);
        for (int t : {1, 2, 4}) {
          SetNumThreads(t);
          auto bulk = SampleBulk(m, o, 1, 0, batches);
          ASSERT_TRUE(bulk.ok()) << bulk.status();
          for (size_t k = 0; k < batches.size(); ++k) {
            SCOPED_TRACE(absl::StrCat("threads ", t, ", batch ", k));
            ExpectBatch((*bulk)[k], Direct(m, o, 1, static_cast<int64_t>(k), batches[k].ToVector<int64_t>()));
            auto alone = SampleBulk(m, o, 1, static_cast<int64_t>(k), {batches[k]});
            ASSERT_TRUE(alone.ok()) << alone.status();
            ExpectBatch((*alone)[0], Direct(m, o, 1, static_cast<int64_t>(k), batches[k].ToVector<int64_t>()));
          }
        }
        SetNumThreads(threads);
      }
    }
  }
}

// Layers with their own matrices: the sets are drawn on the last layer's, each layer induces its
// own; a vertex set is the same subgraph in every layer only where the matrices are equal.
TEST(ShadowSampler, EachLayerInducesItsOwnMatrixOverTheSameVertices) {
  const NeighbourhoodMatrix a = MatrixOf(RandomLists(200, 8, 11), true);
  const NeighbourhoodMatrix b = MatrixOf(RandomLists(200, 8, 12), false);
  const SamplerOptions o{.kind = SamplerKind::kShadow, .fanouts = {5, 3}, .seed = 2};
  const std::vector<Tensor> seeds = EpochBatches(Tensor::FromVector(Iota(200)), 31, 1, 0);
  for (const std::vector<const NeighbourhoodMatrix*>& m :
       {std::vector<const NeighbourhoodMatrix*>{&a, &b}, std::vector<const NeighbourhoodMatrix*>{&b, &a, &b}}) {
    auto bulk = SampleBulk(m, o, 0, 4, seeds);
    ASSERT_TRUE(bulk.ok()) << bulk.status();
    for (size_t k = 0; k < seeds.size(); ++k) {
      ExpectBatch((*bulk)[k], Direct(m, o, 0, 4 + static_cast<int64_t>(k), seeds[k].ToVector<int64_t>()));
    }
  }
}

//   0 - 1 - 2 - 3       roots 1 and 2 both reach every vertex with all neighbours over two hops:
//                       each subgraph holds its own copy of the other root (block-diagonal).
TEST(ShadowSampler, SharedVerticesAreRowsOfEachSubgraphAndNoEdgeCrossesThem) {
  Lists nbrs(4);
  nbrs[0] = {{1, 1.0f}};
  nbrs[1] = {{0, 1.0f}, {2, 1.0f}};
  nbrs[2] = {{1, 1.0f}, {3, 1.0f}};
  nbrs[3] = {{2, 1.0f}};
  const NeighbourhoodMatrix a = MatrixOf(nbrs, false);
  const SamplerOptions o{.kind = SamplerKind::kShadow, .fanouts = {0, 0}, .seed = 1};
  auto bulk = SampleBulk({&a, &a}, o, 0, 0, Repeat({1, 2}, 1));
  ASSERT_TRUE(bulk.ok()) << bulk.status();
  const MiniBatch& b = (*bulk)[0];
  // Roots first, then root 1's others in BFS order (0, 2, then 3), then root 2's (1, 3, then 0).
  EXPECT_EQ(b.blocks[0].table.ToVector<int64_t>(), (std::vector<int64_t>{1, 2, 0, 2, 3, 1, 3, 0}));
  // Layer 0: every row; path edges within each copy. Row 0 (vertex 1, set 0) -> rows 2 (0), 3 (2).
  EXPECT_EQ(Kept(b.blocks[0], 0), (std::vector<std::pair<int64_t, float>>{{0, 1.0f}, {2, 1.0f}}));
  const hdg::HdgLevel& l0 = b.blocks[0].hdg->level(1);
  EXPECT_EQ(l0.csr().offsets.ToVector<int64_t>(), (std::vector<int64_t>{0, 2, 4, 5, 7, 8, 10, 11, 12}));
  EXPECT_EQ(l0.csr().indices.ToVector<int32_t>(), (std::vector<int32_t>{2, 3, 5, 6, 0, 0, 4, 3, 7, 1, 1, 5}));
  // The last layer: the seeds' rows only.
  EXPECT_EQ(b.blocks[1].hdg->num_roots(), 2);
  EXPECT_EQ(b.blocks[1].hdg->level(1).csr().indices.ToVector<int32_t>(), (std::vector<int32_t>{2, 3, 5, 6}));
  EXPECT_EQ(b.sampled_edges, 12 + 4);
}

TEST(ShadowSampler, OptionsAndVerticesWithoutRowsAreNamed) {
  SamplerOptions o{.kind = SamplerKind::kShadow, .fanouts = {}};
  EXPECT_TRUE(ParseSamplerOptions("pool=mean", &o).ok());
  EXPECT_EQ(o.pool, SamplerOptions::Pool::kMean);
  EXPECT_TRUE(ParseSamplerOptions("pool=none", &o).ok());
  EXPECT_EQ(o.pool, SamplerOptions::Pool::kNone);
  for (const auto& [text, error] : std::vector<std::pair<std::string, std::string>>{
           {"pool=max", "--sampler_opt pool: expected none or mean, got 'max'"},
           {"depth=3", "--sampler_opt: unknown key 'depth'"},
           {"pool", "--sampler_opt: expected key=value, got 'pool'"}}) {
    const absl::Status s = ParseSamplerOptions(text, &o);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.message().find(error), std::string::npos) << s;
  }
  SamplerOptions node{};
  const absl::Status s = ParseSamplerOptions("pool=mean", &node);
  EXPECT_NE(s.message().find("applies to the shadow sampler, not neighbor"), std::string::npos) << s;

  Lists nbrs(4);
  nbrs[0] = {{1, 1.0f}, {3, 1.0f}};
  nbrs[1] = {{0, 1.0f}};
  const NeighbourhoodMatrix a = MatrixOf(nbrs, false);
  // A matrix whose roots are 0 and 1 only: vertex 3 is reached but has no row.
  auto two = hdg::HdgBuilder(hdg::SchemaTree::Flat("neighbor", false), 4)
                 .Build({0, 1}, [&](int32_t v, hdg::NeighborWriter& out) {
                   for (auto [u, w] : nbrs[v]) out.Add(u, w);
                 });
  ASSERT_TRUE(two.ok());
  auto partial = NeighbourhoodMatrix::Create(std::make_shared<const hdg::Hdg>(std::move(*two)), 4);
  ASSERT_TRUE(partial.ok());
  const SamplerOptions shadow{.kind = SamplerKind::kShadow, .fanouts = {0, 0}};
  auto reached = SampleBulk({&*partial}, shadow, 0, 0, Repeat({0}, 1));
  ASSERT_FALSE(reached.ok());
  EXPECT_NE(reached.status().message().find("vertex 3 has no neighbourhood"), std::string::npos) << reached.status();
  auto seed = SampleBulk({&a}, shadow, 0, 0, Repeat({9}, 1));
  ASSERT_FALSE(seed.ok());
  EXPECT_NE(seed.status().message().find("vertex 9"), std::string::npos) << seed.status();
  auto no_hops = SampleBulk({&a}, {.kind = SamplerKind::kShadow, .fanouts = {}}, 0, 0, Repeat({0}, 1));
  ASSERT_FALSE(no_hops.ok());
  EXPECT_NE(no_hops.status().message().find("fanouts: the shadow sampler needs at least one hop"), std::string::npos);
}

}  // namespace
}  // namespace fg::sampling
