// Device sampling (sampling/device_sampler.h): the kernels' per-row steps (sampling/pick.h), run
// here on the CPU, give the host sampler's rows; on a CUDA device the sampler's batches are the
// host's, entry for entry (those tests skip where no device is usable).
#include "sampling/device_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"

#include "flexgraph/tensor/device_alloc.h"
#include "sampling/cuda/layer_pipeline.h"
#include "sampling/layer_pick.h"
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

// layer_pipeline.h's backend on the host, one step at a time: std::vector memory, a stable sort and
// sequential scans.
struct SequentialBackend {
  template <typename T>
  struct Array {
    std::vector<T> v;
    T* get() { return v.data(); }
  };
  template <typename T>
  Array<T> Make(int64_t n) {
    return Array<T>{std::vector<T>(std::max<int64_t>(n, 1))};
  }
  template <typename F>
  void ForEach(int64_t n, const F& f) {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
  template <typename K, typename V>
  void SortPairs(const K* keys_in, K* keys_out, const V* values_in, V* values_out, int64_t n, int end_bit) {
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return keys_in[x] < keys_in[y]; });
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_LT(static_cast<uint64_t>(keys_in[i]) >> (end_bit - 1) >> 1, 1u) << "key above 2^" << end_bit;
      keys_out[i] = keys_in[order[i]];
      values_out[i] = values_in[order[i]];
    }
  }
  void InclusiveSum(const int64_t* in, int64_t* out, int64_t n) { std::partial_sum(in, in + n, out); }
  void ExclusiveSum(const int64_t* in, int64_t* out, int64_t n) {
    int64_t sum = 0;
    for (int64_t i = 0; i < n; ++i) out[i] = std::exchange(sum, sum + in[i]);
  }
  template <typename T>
  void Zero(T* p, int64_t n) {
    std::fill(p, p + n, T{0});
  }
  template <typename T>
  std::vector<T> ToHost(const T* p, int64_t n) {
    return std::vector<T>(p, p + n);
  }
  template <typename T>
  void ToDevice(T* p, const std::vector<T>& host) {
    std::copy(host.begin(), host.end(), p);
  }
};

// DeviceSampler's layer step with the pipeline on the host: the stacked rows, RunLayerWise, then
// each batch's rows.
absl::Status PipelineLayerWise(const NeighbourhoodMatrix& a, const SamplerOptions& o, int epoch, int64_t first_index,
                               int layer, const std::vector<std::vector<int64_t>>& frontier,
                               std::vector<SampledRows>* out) {
  MatrixView v = ViewOf(a);
  const std::vector<double> row_sums = RowWeightSums(a);
  v.row_sums = row_sums.empty() ? nullptr : row_sums.data();
  const int64_t K = static_cast<int64_t>(frontier.size());
  std::vector<int64_t> row, entry_offsets = {0}, base = {0};
  std::vector<int32_t> group;
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t vertex : frontier[k]) {
      const int64_t r = RowOf(v, vertex);
      if (r < 0) return absl::InvalidArgumentError(absl::StrCat("vertex ", vertex));
      row.push_back(r);
      group.push_back(static_cast<int32_t>(k));
      entry_offsets.push_back(entry_offsets.back() + v.row_ptr[r + 1] - v.row_ptr[r]);
    }
    base.push_back(static_cast<int64_t>(row.size()));
  }
  std::vector<uint64_t> streams(K);
  for (int64_t k = 0; k < K; ++k) streams[k] = LayerWiseStream(epoch, first_index + k, layer);
  SequentialBackend backend;
  std::vector<int64_t> offsets;
  std::vector<int32_t> cols;
  std::vector<float> weights;
  RunLayerWise(backend, v, o.seed, o.layer_size, row.data(), group.data(), entry_offsets, streams, &offsets, &cols,
               &weights);
  for (int64_t k = 0; k < K; ++k) {
    SampledRows& s = (*out)[k];
    const int64_t first = offsets[base[k]], last = offsets[base[k + 1]];
    for (int64_t j = base[k]; j <= base[k + 1]; ++j) s.offsets.push_back(offsets[j] - first);
    s.cols.assign(cols.begin() + first, cols.begin() + last);
    if (!weights.empty()) s.weights.assign(weights.begin() + first, weights.begin() + last);
  }
  return absl::OkStatus();
}

// The device's layer-wise pipeline (cuda/layer_pipeline.h: its steps and its driver, the kernels'
// own code) run here one step at a time gives SampleBulk's batches, weights bit for bit: the
// device's order of work reaches the host's columns, draws and sums.
TEST(DeviceSampler, TheLayerWiseStepsInTheDevicesOrderGiveTheHostSamplersBatches) {
  const Lists nbrs = HubLists(5000);
  const NeighbourhoodMatrix weighted = MatrixOf(nbrs, true), plain = MatrixOf(nbrs, false),
                            spread = SpreadMatrix(nbrs);
  std::vector<int64_t> all(5000);
  std::iota(all.begin(), all.end(), 0);
  const std::vector<Tensor> batches = EpochBatches(Tensor::FromVector(all), 64, 5, 1);
  for (const NeighbourhoodMatrix* a : {&weighted, &plain, &spread}) {
    // Layer sizes below and above the columns of a batch; blocks of kMassBlock columns and more.
    for (int64_t layer_size : {int64_t{3}, int64_t{300}, int64_t{5000}}) {
      SCOPED_TRACE(::testing::Message() << "layer size " << layer_size << (a == &plain ? ", unweighted" : "")
                                        << (a == &spread ? ", spread" : ""));
      const SamplerOptions o{.kind = SamplerKind::kLayerWise, .fanouts = {}, .layer_size = layer_size, .seed = 23};
      for (size_t k : {size_t{1}, size_t{5}}) {
        std::vector<Tensor> bulk(batches.begin() + 2, batches.begin() + 2 + k);
        if (a == &spread) {
          for (Tensor& b : bulk) {
            std::vector<int64_t> ids = b.ToVector<int64_t>();
            for (int64_t& x : ids) x = Spread(x);
            b = Tensor::FromVector(ids);
          }
        }
        auto in_order = SampleBlocks({a, a}, 2, bulk,
                                     [&](int l, const std::vector<std::vector<int64_t>>& frontier,
                                         std::vector<SampledRows>* out, const RowsReady&) {
                                       return PipelineLayerWise(*a, o, 3, 2, l, frontier, out);
                                     });
        auto on_host = SampleBulk({a, a}, o, 3, 2, bulk);
        ASSERT_TRUE(in_order.ok()) << in_order.status();
        ASSERT_TRUE(on_host.ok()) << on_host.status();
        ExpectSameBatches(*in_order, *on_host);
        EXPECT_GT((*on_host)[0].sampled_edges, 0);
      }
    }
  }
}

// DrawPoint reads a batch's stream as RandomStream::NextU64 does, draw after draw.
TEST(DeviceSampler, LayerWiseDrawsReadTheBatchsStreamInOrder) {
  const uint64_t stream = LayerWiseStream(2, 9, 1);
  RandomStream rng(31, stream);
  for (int64_t s = 0; s < 9; ++s) {
    const double expected = (static_cast<double>(rng.NextU64() >> 11) * 0x1.0p-53) * 7.5;
    EXPECT_EQ(DrawPoint(31, stream, s, 7.5), expected) << "draw " << s;
  }
  const double cumulative[] = {1.0, 1.0, 2.5, 4.0};
  EXPECT_EQ(DrawnColumn(cumulative, 4, 0.0), 0);
  EXPECT_EQ(DrawnColumn(cumulative, 4, 1.0), 2);  // past the empty column
  EXPECT_EQ(DrawnColumn(cumulative, 4, 3.9), 3);
  EXPECT_EQ(DrawnColumn(cumulative, 4, 4.0), 3);  // rounded up to the total: the last
}

TEST(DeviceSampler, CreateNamesWhatItCannotDo) {
  const NeighbourhoodMatrix a = MatrixOf(RandomLists(20, 4, 1), true);
  auto ladies = DeviceSampler::Create({&a}, {.kind = SamplerKind::kLayerWise, .fanouts = {}, .layer_size = 0});
  ASSERT_FALSE(ladies.ok());
  EXPECT_NE(ladies.status().message().find("layer_size: must be positive"), std::string::npos) << ladies.status();
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
    std::vector<int> fanouts;  // empty: layer-wise
    bool spread;
    int64_t layer_size = 0;
  };
  for (const Case& c : {Case{&weighted, {25, 10}, false}, Case{&plain, {70, 0}, false},
                        Case{&large, {5, 3}, true}, Case{&weighted, {}, false, 300},
                        Case{&plain, {}, false, 5000}, Case{&large, {}, true, 40}}) {
    const SamplerOptions o = c.fanouts.empty()
                                 ? SamplerOptions{.kind = SamplerKind::kLayerWise, .fanouts = {},
                                                  .layer_size = c.layer_size, .seed = 17}
                                 : SamplerOptions{.fanouts = c.fanouts, .seed = 17};
    SCOPED_TRACE(::testing::Message() << (c.fanouts.empty() ? "layer size " : "fanouts ")
                                      << (c.fanouts.empty() ? c.layer_size : c.fanouts[0])
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
