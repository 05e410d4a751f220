// Tests of partition/: union graph, partitioners (known optimal cuts), statistics (hand-computed
// ghosts, row-fetch and partial-aggregation vectors), calibration fit, rebalancer properties, plan
// round trips and clear errors for invalid requests.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "flexgraph/base/status.h"
#include "flexgraph/graph/builder.h"
#include "flexgraph/graph/gen/rmat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "flexgraph/graph/io/file.h"
#include "runtime/train/config.h"
#include "tests/partition/resolved.h"
#include "partition/plan.h"
#include "partition/union_graph.h"
#include "proto/partition.pb.h"

namespace fg::partition {
namespace {

using ::testing::HasSubstr;

// Fixed coefficients: tests never depend on this machine's speed.
CostCoefficients TestCoefficients() {
  CostCoefficients k;
  k.entry_float_seconds = 1e-9;
  k.row_float_seconds = 1e-9;
  k.gemm_flop_seconds = 1e-11;
  k.gather_float_seconds = 1e-9;
  k.network_bytes_per_second = 1e9;
  return k;
}

// A homogeneous dataset from undirected edges (listed once), with features and 2 classes.
graph::Dataset Homogeneous(int64_t n, const std::vector<std::pair<int64_t, int64_t>>& edges,
                           int64_t features = 8) {
  graph::Dataset ds;
  ds.name = "test";
  ds.graph.node_types = {"node"};
  ds.graph.num_nodes = {n};
  std::vector<int64_t> src, dst;
  for (auto [u, v] : edges) {
    src.push_back(u);
    dst.push_back(v);
  }
  graph::CsrBuildOptions o{.deduplicate = true, .remove_self_loops = true, .add_reverse_edges = true};
  auto rel = graph::BuildRelation("node", "edge", "node", n, n, src.data(), dst.data(),
                                  static_cast<int64_t>(src.size()), nullptr, Tensor(), o);
  EXPECT_TRUE(rel.ok()) << rel.status();
  ds.graph.relations.push_back(*rel);
  ds.features["node"] = Tensor::Full({n, features}, 1.0f);
  ds.labels["node"] = Tensor::Zeros({n}, DType::kInt64);
  ds.num_classes["node"] = 2;
  return ds;
}

// Two cliques of `k` vertices joined by one edge: the optimal 2-way cut is 1.
graph::Dataset TwoCliques(int64_t k) {
  std::vector<std::pair<int64_t, int64_t>> e;
  for (int64_t c = 0; c < 2; ++c) {
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t j = i + 1; j < k; ++j) e.push_back({c * k + i, c * k + j});
    }
  }
  e.push_back({k - 1, k});
  return Homogeneous(2 * k, e);
}

// A ring of four cliques of 6, consecutive cliques joined by one edge: optimal 4-way cut is 4.
graph::Dataset RingOfCliques() {
  std::vector<std::pair<int64_t, int64_t>> e;
  for (int64_t c = 0; c < 4; ++c) {
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = i + 1; j < 6; ++j) e.push_back({c * 6 + i, c * 6 + j});
    }
    e.push_back({c * 6, ((c + 1) % 4) * 6 + 5});
  }
  return Homogeneous(24, e);
}

// Movies 0..3, directors 0..1, actors 0..2:
//   m0 -d0, m1 -d0, m2 -d1, m3 -d1;  m0 -a0, m1 -a0, m1 -a1, m2 -a2
graph::Dataset TinyImdb() {
  graph::Dataset ds;
  ds.name = "tiny-imdb";
  ds.graph.node_types = {"movie", "director", "actor"};
  ds.graph.num_nodes = {4, 2, 3};
  graph::CsrBuildOptions o{.deduplicate = true};
  auto add = [&](const std::string& name, const std::string& dst, int64_t nd,
                 std::vector<int64_t> s, std::vector<int64_t> d) {
    auto rel = graph::BuildRelation("movie", name, dst, 4, nd, s.data(), d.data(),
                                    static_cast<int64_t>(s.size()), nullptr, Tensor(), o);
    ASSERT_TRUE(rel.ok()) << rel.status();
    ds.graph.relations.push_back(*rel);
  };
  add("directed_by", "director", 2, {0, 1, 2, 3}, {0, 0, 1, 1});
  add("starring", "actor", 3, {0, 1, 1, 2}, {0, 0, 1, 2});
  for (const auto& t : ds.graph.node_types) {
    ds.features[t] = Tensor::Full({ds.graph.NumNodes(t), 4}, 1.0f);
  }
  ds.labels["movie"] = Tensor::Zeros({4}, DType::kInt64);
  ds.num_classes["movie"] = 3;
  return ds;
}

PartitionRequest Req(int parts, Method method, uint64_t seed = 0, int64_t metis_memory = 0) {
  PartitionRequest r;
  r.num_parts = parts;
  r.method = method;
  r.seed = seed;
  r.metis_memory_limit_bytes = metis_memory;
  return r;
}

CostModel MakeCost(const graph::Dataset& ds, const std::string& model,
                   std::map<std::string, std::string> options = {}) {
  const WorkloadOptions o = Resolved(model, options);
  auto cost = CostModel::Create(ds, o, TestCoefficients());
  EXPECT_TRUE(cost.ok()) << cost.status();
  return *std::move(cost);
}

TEST(UnionGraphTest, HeterogeneousRelationsBecomeOneSymmetricGraph) {
  graph::Dataset ds = TinyImdb();
  auto g = BuildUnionGraph(ds.graph);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_rows, 9);
  EXPECT_EQ(g->nnz(), 2 * 8);  // 8 edges, both directions
  // m1 (global 1): director d0 (global 4), actors a0, a1 (globals 6, 7).
  std::vector<int32_t> row(g->col() + g->row_ptr()[1], g->col() + g->row_ptr()[2]);
  EXPECT_EQ(row, (std::vector<int32_t>{4, 6, 7}));
  // Director d0 (global 4): movies 0 and 1.
  row.assign(g->col() + g->row_ptr()[4], g->col() + g->row_ptr()[5]);
  EXPECT_EQ(row, (std::vector<int32_t>{0, 1}));
  // Relations that keep only their by-destination Csr (a batch of graphs) give the same graph.
  for (graph::Relation& rel : ds.graph.relations) rel.by_src = Csr();
  auto from_dst = BuildUnionGraph(ds.graph);
  ASSERT_TRUE(from_dst.ok()) << from_dst.status();
  ASSERT_EQ(from_dst->nnz(), g->nnz());
  EXPECT_TRUE(std::equal(g->row_ptr(), g->row_ptr() + g->num_rows + 1, from_dst->row_ptr()));
  EXPECT_TRUE(std::equal(g->col(), g->col() + g->nnz(), from_dst->col()));
}

TEST(PartitionerTest, MetisFindsTheOptimalCutOfTwoCliques) {
  graph::Dataset ds = TwoCliques(8);
  CostModel cost = MakeCost(ds, "gcn");
  auto plan = Partition(ds, cost, Req(2, Method::kMetis));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->stats.edge_cut, 1);
  for (int v = 1; v < 8; ++v) EXPECT_EQ(plan->owners[v], plan->owners[0]);
  for (int v = 9; v < 16; ++v) EXPECT_EQ(plan->owners[v], plan->owners[8]);
  EXPECT_NE(plan->owners[0], plan->owners[8]);
  // Each side needs exactly the other end of the bridge: one ghost per part.
  EXPECT_EQ(plan->stats.ghosts_total, 2);
}

TEST(PartitionerTest, MetisFindsTheOptimalCutOfARingOfCliques) {
  graph::Dataset ds = RingOfCliques();
  CostModel cost = MakeCost(ds, "gcn");
  auto plan = Partition(ds, cost, Req(4, Method::kMetis));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->stats.edge_cut, 4);
  for (int p = 0; p < 4; ++p) EXPECT_EQ(plan->stats.parts[p].owned_vertices, 6);
}

TEST(PartitionerTest, HashAndRangeAreDeterministicAndCoverEveryVertex) {
  graph::Dataset ds = RingOfCliques();
  CostModel cost = MakeCost(ds, "gcn");
  auto range = Partition(ds, cost, Req(3, Method::kRange));
  ASSERT_TRUE(range.ok());
  for (int v = 0; v < 24; ++v) EXPECT_EQ(range->owners[v], v / 8);
  auto h1 = Partition(ds, cost, Req(3, Method::kHash, 5));
  auto h2 = Partition(ds, cost, Req(3, Method::kHash, 5));
  ASSERT_TRUE(h1.ok() && h2.ok());
  EXPECT_EQ(h1->owners, h2->owners);
  int64_t owned = 0;
  for (const PartStats& ps : h1->stats.parts) owned += ps.owned_vertices;
  EXPECT_EQ(owned, 24);
}

TEST(PartitionerTest, InvalidRequestsGiveClearErrors) {
  graph::Dataset ds = TwoCliques(3);
  CostModel cost = MakeCost(ds, "gcn");
  auto zero = Partition(ds, cost, Req(0, Method::kHash));
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(zero.status().message()), HasSubstr("parts must be at least 1, got 0"));
  auto many = Partition(ds, cost, Req(7, Method::kMetis));
  EXPECT_EQ(many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(many.status().message()), HasSubstr("cannot split 6 vertices"));
  auto method = ParseMethod("spectral");
  EXPECT_EQ(method.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(method.status().message()),
              HasSubstr("unknown partition method 'spectral' (expected hash, range, metis or balanced)"));
  WorkloadOptions unknown;
  unknown.model = "no-such-model";
  auto c = CostModel::Create(ds, unknown, TestCoefficients());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("unknown model 'no-such-model'"));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("registered: "));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("gcn"));
}

// A path of 400 vertices whose first 40 cost 40 times the rest. Balancing compute alone puts the
// heavy ones with a few light ones and leaves the other part most of the vertices (and of the
// memory); with the memory weights as a second constraint both parts hold about 200 vertices
// and about half the compute (vertices 20..219 | the rest would do).
TEST(PartitionerTest, MetisBalancesMemoryAsASecondConstraint) {
  const int n = 400;
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> cols;
  for (int v = 0; v < n; ++v) {
    if (v > 0) cols.push_back(v - 1);
    if (v + 1 < n) cols.push_back(v + 1);
    offsets.push_back(static_cast<int64_t>(cols.size()));
  }
  const Csr path = Csr::FromVectors(n, n, offsets, cols);
  PartitionInput in;
  in.graph = &path;
  in.vertex_weights.assign(n, 1);
  for (int v = 0; v < 40; ++v) in.vertex_weights[v] = 40;
  auto parts_of = [&](const PartitionInput& input) {
    auto owners = MakePartitioner(Method::kMetis)->Assign(input, 2);
    EXPECT_TRUE(owners.ok()) << owners.status();
    std::vector<int> vertices(2, 0), compute(2, 0);
    for (int v = 0; v < n; ++v) {
      ++vertices[(*owners)[v]];
      compute[(*owners)[v]] += input.vertex_weights[v];
    }
    return std::make_pair(vertices, compute);
  };
  const auto [alone_vertices, alone_compute] = parts_of(in);
  EXPECT_GT(std::max(alone_vertices[0], alone_vertices[1]), 280) << "compute alone: the light part is large";
  in.memory_weights.assign(n, 1);
  const auto [vertices, compute] = parts_of(in);
  for (int p = 0; p < 2; ++p) {
    EXPECT_NEAR(vertices[p], 200, 20) << "part " << p;
    EXPECT_NEAR(compute[p], 980, 98) << "part " << p;
  }
  in.memory_weights.pop_back();
  EXPECT_THAT(std::string(MakePartitioner(Method::kMetis)->Assign(in, 2).status().message()),
              HasSubstr("memory weights do not match the graph"));
}

TEST(PartitionerTest, MetisRefusesWhenItWillNotFitInMemory) {
  graph::Dataset ds = TwoCliques(8);
  CostModel cost = MakeCost(ds, "gcn");
  auto plan = Partition(ds, cost, Req(2, Method::kMetis, 0, 1024));
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("METIS needs about"));
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("16 vertices"));
  EXPECT_GT(EstimateMetisBytes(1 << 20, 32 << 20, 8), EstimateMetisBytes(1 << 10, 32 << 10, 8));
}

//   0 - 1 - 2 - 3      parts {0, 1} | {2, 3}
TEST(StatsTest, GcnOnAPathHandComputed) {
  graph::Dataset ds = Homogeneous(4, {{0, 1}, {1, 2}, {2, 3}});
  CostModel cost = MakeCost(ds, "gcn");
  const Workload& w = cost.workload();
  ASSERT_EQ(w.layers.size(), 2u);
  // GCN: leaves are the vertex and its neighbours; widths min(8, 16) = 8, then min(16, 2) = 2.
  EXPECT_EQ(w.layers[0].message_width, 8);
  EXPECT_EQ(w.layers[1].message_width, 2);
  EXPECT_EQ(w.layers[0].entries_per_level, (std::vector<int64_t>{10}));
  PartitionStats s = ComputeStats(ds, {0, 0, 1, 1}, 2, cost);
  EXPECT_EQ(s.edge_cut, 1);
  EXPECT_EQ(s.parts[0].owned_vertices, 2);
  EXPECT_EQ(s.parts[0].edges, 3);  // degrees 1 + 2
  EXPECT_EQ(s.parts[0].ghosts, (std::vector<int64_t>{0, 1}));  // vertex 2
  EXPECT_EQ(s.parts[1].ghosts, (std::vector<int64_t>{1, 0}));  // vertex 1
  // One vector per layer either way (one remote leaf, one target that needs it).
  EXPECT_EQ(s.parts[0].row_fetch_vectors, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(s.parts[0].partial_vectors, (std::vector<int64_t>{0, 2}));
  EXPECT_DOUBLE_EQ(s.parts[0].recv_floats, 8 + 2);
  EXPECT_DOUBLE_EQ(s.parts[0].send_floats, 8 + 2);
  // Compute of part 0, by hand: layer 0 roots 0, 1 have 2 and 3 entries at width 8 (one node
  // each); layer 1 the same at width 2. GEMMs: 2*8*16 per root in layer 0; in layer 1 only the
  // projection 16 -> 2 before aggregation, on each input row (vertices 0, 1).
  const double entry = (2 + 3) * 8.0 + (2 + 3) * 2.0;
  // Rows: one HDG node per root and layer, plus the rows the dense transforms stream:
  // layer 0 (8 + 16) per root, layer 1 (16 + 2) per root and (16 + 2) per projected input row.
  const double row = 2 * 8.0 + 2 * 2.0 + 2 * (8.0 + 16) + 2 * (16.0 + 2) + 2 * (16.0 + 2);
  const double gemm = 2 * (2.0 * 8 * 16) + 2 * (2.0 * 16 * 2);
  const double expect = CostModel::kEpochFactor * (1e-9 * entry + 1e-9 * row + 1e-11 * gemm);
  EXPECT_NEAR(s.parts[0].compute_seconds, expect, 1e-15);
  // Comm: 2 exchanges * max(10, 10) floats * 4 bytes / 1e9 + 1e-9 * 20 floats packed.
  EXPECT_NEAR(s.parts[0].comm_seconds, 2 * 10 * 4 / 1e9 + 20e-9, 1e-15);
  EXPECT_NEAR(s.imbalance, 1.0, 1e-12);
}

// Root 0 (part 0) has two bottom nodes: A with leaves {1, 2}, B with leaves {1, 3}; 1, 2, 3 are
// owned by part 1. Row fetch sends 3 distinct rows; partial aggregation one vector per node: 2.
TEST(StatsTest, PartialAggregationCountsTargetsAndRowFetchCountsDistinctRows) {
  graph::Dataset ds = Homogeneous(4, {{0, 1}, {0, 2}, {0, 3}});
  auto g = BuildUnionGraph(ds.graph);
  ASSERT_TRUE(g.ok());
  for (bool decomposable : {true, false}) {
    auto w = std::make_shared<Workload>();
    w->model = "hand";
    w->num_vertices = 4;
    w->entry_floats.assign(4, 0);
    w->row_floats.assign(4, 0);
    w->gemm_flops.assign(4, 0);
    LayerWorkload lw;
    lw.roots = {0};
    lw.root_nodes = {0, 2};
    lw.bottom = Csr::FromVectors(2, 4, {0, 2, 4}, {1, 2, 1, 3});
    lw.message_width = 1;
    lw.decomposable = decomposable;
    w->layers.push_back(lw);
    CostModel cost(*g, w, TestCoefficients());
    PartitionStats s = ComputeStats(ds, {0, 1, 1, 1}, 2, cost);
    EXPECT_EQ(s.parts[0].ghosts[1], 3);
    EXPECT_EQ(s.parts[0].row_fetch_vectors[1], 3);
    EXPECT_EQ(s.parts[0].partial_vectors[1], decomposable ? 2 : 3);
    EXPECT_DOUBLE_EQ(s.parts[0].recv_floats, decomposable ? 2 : 3);
    EXPECT_DOUBLE_EQ(s.parts[1].send_floats, decomposable ? 2 : 3);
  }
}

TEST(WorkloadTest, MagnnEnumeratesMetapathInstances) {
  graph::Dataset ds = TinyImdb();
  const WorkloadOptions o = Resolved("magnn", {}, /*layers=*/1);
  auto w = BuildWorkload(ds, o);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->layers.size(), 1u);
  const LayerWorkload& lw = w->layers[0];
  EXPECT_EQ(lw.roots, (std::vector<int32_t>{0, 1, 2, 3}));
  // M-D-M: every movie shares its director with one other movie and itself: 2 instances each (8).
  // M-A-M: m0 via a0 {m0, m1}: 2; m1 via a0 {m0, m1} and a1 {m1}: 3; m2 via a2 {m2}: 1; m3: 0.
  EXPECT_EQ(lw.nodes_per_level[0], 8 + 6);
  EXPECT_EQ(lw.entries_per_level[0], 3 * (8 + 6));
  EXPECT_FALSE(lw.decomposable);
  // MAGNN's Layer::Cost: instances encode hidden (64) wide rows, attention runs 8 heads wide.
  EXPECT_EQ(lw.message_width, 64);
  EXPECT_EQ(lw.in_width, 64);
  EXPECT_EQ(lw.out_width, 3);
  // Root m1's instances reach m0, d0, a0, a1: in part {m1} alone it needs all other ends.
  auto g = BuildUnionGraph(ds.graph);
  ASSERT_TRUE(g.ok());
  PartitionStats s = ComputeStats(ds, {0, 1, 0, 0, 0, 0, 0, 0, 0}, 2,
                                  CostModel(*g, std::make_shared<Workload>(*w), TestCoefficients()));
  EXPECT_EQ(s.parts[1].ghosts[0], 4);
}

TEST(WorkloadTest, PinSageIsDeterministicAndKeepsTopK) {
  graph::Dataset ds = RingOfCliques();
  WorkloadOptions o = Resolved("pinsage", {{"top_k", "3"}});
  auto a = BuildWorkload(ds, o), b = BuildWorkload(ds, o);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  ASSERT_EQ(a->layers.size(), 2u);
  for (size_t l = 0; l < a->layers.size(); ++l) {
    const Csr& x = a->layers[l].bottom;
    const Csr& y = b->layers[l].bottom;
    ASSERT_EQ(x.nnz(), y.nnz());
    EXPECT_TRUE(std::equal(x.col(), x.col() + x.nnz(), y.col()));
    for (int64_t r = 0; r < x.num_rows; ++r) EXPECT_LE(x.degree(r), 3);
  }
  // Deterministic walks over the same roots: both layers share one HDG, as in training.
  EXPECT_EQ(a->layers[0].hdg, a->layers[1].hdg);
  // PinSage's Layer::Cost: pooled messages are hidden (64) wide.
  EXPECT_EQ(a->layers[0].message_width, 64);
  auto bad = BuildWorkload(ds, Resolved("pinsage", {{"top_k", "-1"}}));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("model pinsage"));
}

TEST(CalibrationTest, FitRecoversKnownCoefficients) {
  const std::vector<double> truth = {2e-10, 0, 1e-11};
  std::vector<std::vector<double>> f = {{1e6, 1e5, 0}, {4e6, 1e5, 0}, {1e7, 6e5, 0},
                                        {0, 1e5, 1e8}, {0, 4e5, 1e9}, {0, 1e4, 5e7}};
  std::vector<double> t;
  for (const auto& row : f) t.push_back(row[0] * truth[0] + row[1] * truth[1] + row[2] * truth[2]);
  double rms = 1;
  std::vector<double> fit = FitNonNegative(f, t, &rms);
  EXPECT_NEAR(fit[0], truth[0], 1e-15);
  EXPECT_NEAR(fit[1], 0, 1e-15);
  EXPECT_NEAR(fit[2], truth[2], 1e-17);
  EXPECT_LT(rms, 1e-9);
}

TEST(CalibrationTest, CalibratesQuicklyAndRoundTripsThroughAFile) {
  CalibrationOptions co;
  co.size_scale = 0.05;
  co.repeats = 1;
  auto k = Calibrate(co);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_GT(k->entry_float_seconds + k->row_float_seconds, 0);
  EXPECT_GT(k->gemm_flop_seconds, 0);
  EXPECT_GT(k->gather_float_seconds, 0);
  const std::string path = ::testing::TempDir() + "/fg_calibration_" + std::to_string(getpid());
  ASSERT_TRUE(SaveCalibration(*k, path).ok());
  auto back = LoadCalibration(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_DOUBLE_EQ(back->entry_float_seconds, k->entry_float_seconds);
  EXPECT_DOUBLE_EQ(back->gemm_flop_seconds, k->gemm_flop_seconds);
  EXPECT_EQ(back->host, k->host);
  // A second LoadOrCalibrate on the same file reuses it (same host and threads).
  auto reused = LoadOrCalibrate(path, false, 0);
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(reused->created_unix_seconds, k->created_unix_seconds);
  ASSERT_TRUE(graph::io::WriteFileAtomically(path, "entry_float_seconds: -1\nnetwork_bytes_per_second: 1\n").ok());
  EXPECT_THAT(std::string(LoadCalibration(path).status().message()), HasSubstr(path));
  std::filesystem::remove(path);
}

graph::Dataset SmallRmat(int scale) {
  graph::RmatOptions o{.scale = scale, .edge_factor = 8, .seed = 3};
  const std::vector<graph::Edge> edges = graph::GenerateRmatEdges(o);
  std::vector<std::pair<int64_t, int64_t>> e(edges.begin(), edges.end());
  return Homogeneous(int64_t{1} << scale, e);
}

TEST(RebalancerTest, LowersTheMaximumCostDeterministically) {
  graph::Dataset ds = SmallRmat(11);
  CostModel cost = MakeCost(ds, "gcn");
  auto metis = Partition(ds, cost, Req(8, Method::kMetis));
  ASSERT_TRUE(metis.ok()) << metis.status();
  auto a = Partition(ds, cost, Req(8, Method::kBalanced));
  auto b = Partition(ds, cost, Req(8, Method::kBalanced));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->owners, b->owners);
  EXPECT_LE(a->stats.max_cost, metis->stats.max_cost);
  EXPECT_LE(a->stats.imbalance, metis->stats.imbalance);
  // The stats a plan carries are the exact estimate of its owners.
  PartitionStats again = ComputeStats(ds, a->owners, 8, cost);
  EXPECT_DOUBLE_EQ(again.max_cost, a->stats.max_cost);
  EXPECT_EQ(again.ghosts_total, a->stats.ghosts_total);
  // Zero rounds leaves METIS's partition unchanged.
  RebalanceOptions zero_rounds;
  zero_rounds.max_rounds = 0;
  RebalanceResult none = Rebalance(ds, cost, metis->owners, 8, zero_rounds);
  EXPECT_EQ(none.owners, metis->owners);
}

TEST(PlanTest, APlanForAnotherDatasetIsRejected) {
  graph::Dataset ds = TwoCliques(4);
  CostModel cost = MakeCost(ds, "gcn");
  auto plan = Partition(ds, cost, Req(2, Method::kHash));
  ASSERT_TRUE(plan.ok());
  graph::Dataset other = TwoCliques(5);
  absl::Status s = CheckPlanMatches(*plan, other);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("node:8"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("node:10"));
}

}  // namespace
}  // namespace fg::partition
