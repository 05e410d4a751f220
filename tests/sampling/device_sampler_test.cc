// Device sampling (sampling/device_sampler.h): the kernels' per-row steps (sampling/pick.h), run
// here on the CPU, give the host sampler's rows; on a CUDA device the sampler's batches are the
// host's, entry for entry (those tests skip where no device is usable).
#include "sampling/device_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "flexgraph/tensor/device_alloc.h"
#include "tests/sampling/sampling_graphs.h"

namespace fg::sampling {
namespace {

// Vertex 0 has 4500 neighbours (more than the host's bit mask holds), its own entry among them;
// vertex 1 has 100 and its own; the others 1..30, every seventh its own as well.
Lists HubLists(int64_t n) {
  Lists nbrs = RandomLists(n, 30, 5);
  nbrs[0].clear();
  for (int32_t u = 1; u <= 4500; ++u) nbrs[0].push_back({u == 2000 ? 0 : u, 0.5f + 0.001f * u});
  nbrs[1].clear();
  for (int32_t u = 0; u < 100; ++u) nbrs[1].push_back({u + 3, 1.0f + u});
  nbrs[1][40].first = 1;
  for (int64_t v = 7; v < n; v += 7) {
    bool own = false;
    for (auto [u, w] : nbrs[v]) own |= u == v;
    if (!own) nbrs[v].push_back({static_cast<int32_t>(v), 2.0f});
  }
  return nbrs;
}

// The device kernels' steps (pick.h: RowOf, KeptEntries, DrawRow), run here one row at a time over
// the host arrays, give SampleRows' rows: offsets, columns and weights, for rows longer than the
// host's bit mask (vertex 0), fanouts over 64, rows holding their root, and rows found through a map.
TEST(DeviceSampler, TheKernelsStepsGiveTheHostSamplersRows) {
  const Lists nbrs = HubLists(5000);
  const NeighbourhoodMatrix weighted = MatrixOf(nbrs, true), plain = MatrixOf(nbrs, false),
                            spread = SpreadMatrix(nbrs);
  for (const NeighbourhoodMatrix* a : {&weighted, &plain, &spread}) {
    const MatrixView view = ViewOf(*a);
    const bool spread_out = a == &spread;
    // Three batches' frontiers: 0 and 1 in each, then others.
    std::vector<std::vector<int64_t>> vertices(3), rows(3);
    const std::vector<int64_t> batch = {6, 7, 8};
    for (int64_t k = 0; k < 3; ++k) {
      for (int64_t j = 0; j < 150; ++j) {
        const int64_t v = j < 2 ? j : (j * 13 + k * 101) % 5000;
        vertices[k].push_back(spread_out ? Spread(v) : v);
        rows[k].push_back(a->RowOf(vertices[k].back()));
      }
    }
    for (int fanout : {3, 25, 70, 0}) {
      SCOPED_TRACE(::testing::Message() << "fanout " << fanout << (a == &plain ? ", unweighted" : "")
                                        << (spread_out ? ", spread" : ""));
      std::vector<SampledRows> expected(3);
      SampleRows(*a, {.fanouts = {fanout}, .seed = 21}, fanout, /*epoch=*/4, /*layer=*/1, batch, vertices, rows,
                 &expected);
      for (int64_t k = 0; k < 3; ++k) {
        for (size_t j = 0; j < vertices[k].size(); ++j) {
          const int64_t row = RowOf(view, vertices[k][j]);
          ASSERT_EQ(row, rows[k][j]);
          const int64_t keep = KeptEntries(view, row, fanout);
          const int64_t first = expected[k].offsets[j];
          ASSERT_EQ(keep, expected[k].offsets[j + 1] - first) << "row " << j;
          std::vector<int32_t> cols(keep);
          std::vector<float> w(keep);
          DrawRow(view, 21, NodeWiseStreamPrefix(4, batch[k], 1), vertices[k][j], row, keep, cols.data(), w.data());
          const auto kept_cols = expected[k].cols.begin() + first;
          ASSERT_EQ(cols, std::vector<int32_t>(kept_cols, kept_cols + keep)) << "batch " << batch[k] << " row " << j;
          if (view.weights != nullptr) {
            ASSERT_EQ(w, std::vector<float>(expected[k].weights.begin() + first,
                                            expected[k].weights.begin() + first + keep))
                << "batch " << batch[k] << " row " << j;
          }
        }
      }
    }
  }
}

TEST(DeviceSampler, CreateNamesWhatItCannotDo) {
  const NeighbourhoodMatrix a = MatrixOf(RandomLists(20, 4, 1), true);
  auto ladies = DeviceSampler::Create({&a}, {.kind = SamplerKind::kLayerWise, .fanouts = {}, .layer_size = 4});
  ASSERT_FALSE(ladies.ok());
  EXPECT_NE(ladies.status().message().find("ladies sampler runs on the host only"), std::string::npos)
      << ladies.status();
  auto fanouts = DeviceSampler::Create({&a, &a}, {.fanouts = {3}});
  ASSERT_FALSE(fanouts.ok());
  EXPECT_NE(fanouts.status().message().find("fanouts: 1 given for a model of 2 layers"), std::string::npos)
      << fanouts.status();
  if (CudaAvailable()) return;
  auto none = DeviceSampler::Create({&a}, {.fanouts = {3}});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(none.status().message().find(CudaUnavailableReason()), std::string::npos) << none.status();
}

TEST(DeviceSampler, SameBatchesAsTheHost) {
  if (!CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason();
  constexpr int64_t kN = 5000;
  const Lists nbrs = HubLists(kN);
  const NeighbourhoodMatrix large = SpreadMatrix(nbrs);
  const NeighbourhoodMatrix weighted = MatrixOf(nbrs, true), plain = MatrixOf(nbrs, false);
  std::vector<int64_t> all(kN);
  for (int64_t v = 0; v < kN; ++v) all[v] = v;
  const std::vector<Tensor> batches = EpochBatches(Tensor::FromVector(all), 64, 5, 1);
  struct Case {
    const NeighbourhoodMatrix* a;
    std::vector<int> fanouts;
    bool spread;
  };
  for (const Case& c : {Case{&weighted, {25, 10}, false}, Case{&plain, {70, 0}, false},
                        Case{&large, {5, 3}, true}}) {
    const SamplerOptions o{.fanouts = c.fanouts, .seed = 17};
    SCOPED_TRACE(::testing::Message() << "fanouts " << c.fanouts[0] << "," << c.fanouts[1]
                                      << (c.spread ? ", spread" : ""));
    auto device = DeviceSampler::Create({c.a, c.a}, o);
    ASSERT_TRUE(device.ok()) << device.status();
    EXPECT_GT((*device)->device_bytes(), 0);
    for (size_t k : {size_t{1}, size_t{8}, batches.size()}) {
      std::vector<Tensor> bulk(batches.begin() + 2, batches.begin() + 2 + std::min(k, batches.size() - 2));
      if (c.spread) {
        for (Tensor& b : bulk) {
          std::vector<int64_t> ids = b.ToVector<int64_t>();
          for (int64_t& v : ids) v = Spread(v);
          b = Tensor::FromVector(ids);
        }
      }
      auto on_device = (*device)->SampleBulk(3, 2, bulk);
      auto on_host = SampleBulk({c.a, c.a}, o, 3, 2, bulk);
      ASSERT_TRUE(on_device.ok()) << on_device.status();
      ASSERT_TRUE(on_host.ok()) << on_host.status();
      ExpectSameBatches(*on_device, *on_host);
    }
  }
}

TEST(DeviceSampler, ErrorsNameTheVertexAsTheHostDoes) {
  if (!CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason();
  const NeighbourhoodMatrix a = MatrixOf(RandomLists(50, 4, 1), true);
  const SamplerOptions o{.fanouts = {3, 2}, .seed = 1};
  auto device = DeviceSampler::Create({&a, &a}, o);
  ASSERT_TRUE(device.ok()) << device.status();
  for (int64_t bad : {int64_t{77}, int64_t{-3}}) {  // past the vertices, and negative
    const std::vector<Tensor> seeds = {Tensor::FromVector(std::vector<int64_t>{0, bad, 5})};
    auto on_device = (*device)->SampleBulk(0, 0, seeds);
    auto on_host = SampleBulk({&a, &a}, o, 0, 0, seeds);
    ASSERT_FALSE(on_device.ok());
    ASSERT_FALSE(on_host.ok());
    EXPECT_EQ(on_device.status(), on_host.status());
    EXPECT_NE(on_device.status().message().find(absl::StrCat("vertex ", bad, " ")), std::string::npos)
        << on_device.status();
  }
}

}  // namespace
}  // namespace fg::sampling
