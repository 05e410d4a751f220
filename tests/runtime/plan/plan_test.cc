// The performance model's formulas on cases small enough to count by hand.
#include <gtest/gtest.h>

#include <numeric>

#include "runtime/plan/planner.h"

namespace fg::plan {
namespace {

// Symmetric in-edge Csr from undirected edges.
Csr Undirected(int64_t n, const std::vector<std::pair<int, int>>& edges) {
  std::vector<std::vector<int32_t>> nbr(n);
  for (auto [a, b] : edges) nbr[a].push_back(b), nbr[b].push_back(a);
  std::vector<int64_t> off = {0};
  std::vector<int32_t> idx;
  for (auto& l : nbr) {
    std::sort(l.begin(), l.end());
    idx.insert(idx.end(), l.begin(), l.end());
    off.push_back(static_cast<int64_t>(idx.size()));
  }
  return Csr::FromVectors(n, n, off, idx, {});
}

// A star: centre 0 on worker 0, leaves 1..4 on worker 1. Worker 1's roots read the centre once
// (1 row, but 4 roots would take partial sums); worker 0's centre reads 4 leaves (4 rows, 1 partial).
TEST(Cut, StarCountsRowsAndTargetsPerPeer) {
  const Csr g = Undirected(5, {{0, 1}, {0, 2}, {0, 3}, {0, 4}});
  const Cut cut = CountCut(g, {0, 1, 1, 1, 1}, 2, true);
  EXPECT_EQ(cut.rows[0 * 2 + 1], 1);     // worker 0 sends the centre's row to 1
  EXPECT_EQ(cut.targets[0 * 2 + 1], 4);  // ... or 4 partial sums
  EXPECT_EQ(cut.rows[1 * 2 + 0], 4);
  EXPECT_EQ(cut.targets[1 * 2 + 0], 1);
  EXPECT_EQ(cut.entries[0], 5);  // 4 neighbours + the self loop
  EXPECT_EQ(cut.entries[1], 8);
  const OneDVectors rows = CountVectors(cut, OneDMode::kRows);
  EXPECT_EQ(rows.received[0], 4);
  EXPECT_EQ(rows.received[1], 1);
  const OneDVectors auto_choice = CountVectors(cut, OneDMode::kPartial);
  EXPECT_EQ(auto_choice.received[0], 1);       // worker 1 sends one partial sum for the centre
  EXPECT_EQ(auto_choice.partials_sent[1], 1);
  EXPECT_EQ(auto_choice.rows_sent[0], 1);      // and worker 0 the centre's row
  const OneDVectors whole = CountVectors(cut, OneDMode::kOblivious);
  EXPECT_EQ(whole.received[0], 4);
  EXPECT_EQ(whole.received[1], 1);
}

TEST(DegreeHistogram, ExpectedTouchedIsOneMinusMissProbability) {
  DegreeHistogram h;
  h.bins = {{0, 5}, {2, 10}, {3, 2}};
  EXPECT_EQ(h.Vertices(), 17);
  EXPECT_EQ(h.Entries(), 26);
  EXPECT_NEAR(h.ExpectedTouched(0.5), 10 * 0.75 + 2 * 0.875, 1e-12);
  EXPECT_NEAR(h.ExpectedTouched(1.0), 12, 1e-12);
}

TEST(DegreeHistogram, LawsKeepTheirCounts) {
  const DegreeHistogram p = PoissonDegrees(100000, 8.0);
  EXPECT_EQ(p.Vertices(), 100000);
  EXPECT_NEAR(static_cast<double>(p.Entries()) / 100000, 8.0, 0.05);
  const DegreeHistogram l = PowerLawDegrees(1000000, 20000000, 2.2);
  EXPECT_EQ(l.Vertices(), 1000000);
  EXPECT_NEAR(static_cast<double>(l.Entries()) / 2e7, 1.0, 0.01);
  EXPECT_GT(l.bins.back().first, 1000);  // a heavy tail
}

// K8, every vertex adjacent to every other, as a dense block matrix on a 2 x 2 grid: each worker
// holds 4 x 4 blocks of A (16 entries, self loops on the diagonal blocks) and 4 rows x 2 columns of
// H (w = 4). SUMMA brings it the other A block of its row (E/pr - E/P = 32 - 16 entries, with its
// 4 row lengths) and the other 4 rows of its H column block (4 x 2 words); the dense product gathers
// its row block's other half (4 rows x 2 of min(in, out) = 4).
TEST(Volumes, TwoDOnADenseBlockMatrix) {
  std::vector<std::pair<int, int>> edges;
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) edges.push_back({a, b});
  const GraphCounts g = CountsOf(Undirected(8, edges));
  EXPECT_EQ(g.entries, 56);
  StrategySpec s;
  s.scheme = Scheme::kTwoD;
  s.grid[0] = s.grid[1] = 2;
  s.aware = false;
  const Volume v = SpmmVolume(s, g, true, nullptr, 4, 4, 4, false);
  EXPECT_DOUBLE_EQ(v.sparse_bytes, (64.0 / 2 - 64.0 / 4) * 8 + 4 * 4);
  EXPECT_DOUBLE_EQ(v.bytes_received, (4 * 2 + 4 * 2 + 4) * 4.0 + 16 * 8);
  // Aware: a column is sent when one of the receiver's 4 rows holds it; with degree 7 and q = 1/2
  // that is 1 - 2^-7 of them.
  s.aware = true;
  const Volume a = SpmmVolume(s, g, true, nullptr, 4, 4, 4, false);
  EXPECT_DOUBLE_EQ(a.bytes_received, (4 * (1 - 1.0 / 128) * 2 + 4 * 2 + 4) * 4.0 + 16 * 8);
  // 3D on 2 x 2 x 2 (P = 8): A (E/(pr pf) - E/P = 16 - 8, with n - n/pc = 4 row lengths), the other
  // row of H's slice (2 x 2 words), the reduce-scatter over the fibre (1/2 x 8 x 4 / 4 = 4 words)
  // and the gather (1/2 x 8 x 4 / 4).
  StrategySpec t;
  t.scheme = Scheme::kThreeD;
  t.grid[0] = t.grid[1] = t.grid[2] = 2;
  t.aware = false;
  const Volume c = SpmmVolume(t, g, true, nullptr, 8, 4, 4, false);
  EXPECT_DOUBLE_EQ(c.bytes_received, (2 * 2 + 4 + 4 + 4) * 4.0 + 8 * 8);
}

// 1.5D: n = 64, P = 16, c = 2: 8 teams; each replica receives (8 - 1) / 2 blocks of 8 rows and
// all-reduces its 8-row partial output with the other replica (2 x 8 rows sent and received).
TEST(Volumes, OnePointFiveDBlocksAndReplicaReduction) {
  GraphCounts g;
  g.vertices = 64;
  g.entries = 256;
  g.in_degrees.bins = g.out_degrees.bins = {{4, 64}};
  StrategySpec s;
  s.scheme = Scheme::kOnePointFiveD;
  s.c = 2;
  s.aware = false;
  const Volume v = SpmmVolume(s, g, false, nullptr, 16, 8, 8, false);
  EXPECT_DOUBLE_EQ(v.bytes_received, (28 + 8) * 8 * 4.0);
  s.aware = true;
  const double touched = 64 * (1 - std::pow(1 - 2.0 / 16, 4));
  EXPECT_DOUBLE_EQ(SpmmVolume(s, g, false, nullptr, 16, 8, 8, false).bytes_received, (28 * touched / 64 + 8) * 8 * 4.0);
}

TEST(Volumes, RingAllReduceSendsTwoChunksPerStep) {
  // n = 10 over 3: chunks 3, 3, 4. Rank 0 sends its chunk, then chunks 2, 1, 0.
  EXPECT_EQ(RingAllReduceBytesSent(10, 3, 0), (3 + 4 + 3 + 3) * 4);
  int64_t total = 0;
  for (int r = 0; r < 3; ++r) total += RingAllReduceBytesSent(10, 3, r);
  EXPECT_EQ(total, 2 * 2 * 10 * 4);
  EXPECT_EQ(RingAllReduceBytesSent(10, 1, 0), 0);
}

TEST(Volumes, GridsAreNearlySquareOrCubic) {
  EXPECT_EQ(NearCubicGrid(64, 2), (std::vector<int>{8, 8}));
  EXPECT_EQ(NearCubicGrid(128, 2), (std::vector<int>{8, 16}));
  EXPECT_EQ(NearCubicGrid(64, 3), (std::vector<int>{4, 4, 4}));
  EXPECT_EQ(NearCubicGrid(1024, 3), (std::vector<int>{8, 8, 16}));
  EXPECT_EQ(NearCubicGrid(7, 2), (std::vector<int>{1, 7}));
}

// GCN 128 -> 256 -> 256 -> 172: layer 0 aggregates the 128-wide input (not trained: no backward
// exchange); layers 1 and 2 aggregate 256 and 172 (projected first) and send gradients back.
TEST(Workload, GcnSpmmsFollowTheModel) {
  const ModelShape m{ModelKind::kGcn, 128, 256, 172, 3};
  std::vector<std::pair<int64_t, bool>> got;
  for (const Spmm& s : TrainingSpmms(m)) got.push_back({s.width, s.backward});
  EXPECT_EQ(got, (std::vector<std::pair<int64_t, bool>>{{128, false}, {256, false}, {172, false}, {172, true}, {256, true}}));
  EXPECT_EQ(Parameters(m), 128 * 256 + 256 + 256 * 256 + 256 + 256 * 172 + 172);
  const ModelShape sgc{ModelKind::kSgc, 64, 1, 7, 3};
  EXPECT_EQ(EvaluationSpmms(sgc).size(), 2u);  // layer 0's input is received once per run
  EXPECT_TRUE(TrainingSpmms(sgc).size() == 2u);
}

// The expected cut of a random partition against the counted cut of a hash partition: a power-law
// graph of 20000 vertices over 8 workers, rows within 3%.
TEST(Cut, ExpectedRandomCutMatchesAHashPartition) {
  std::vector<std::pair<int, int>> edges;
  uint64_t x = 12345;
  auto next = [&] { x = x * 6364136223846793005ull + 1442695040888963407ull; return x >> 33; };
  const int n = 20000;
  for (int k = 0; k < 100000; ++k) {
    const int a = static_cast<int>(next() % n);
    const int b = static_cast<int>((next() % n) * (next() % n) / n);  // skewed towards low ids
    if (a != b) edges.push_back({std::min(a, b), std::max(a, b)});
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  const Csr g = Undirected(n, edges);
  std::vector<int32_t> owners(n);
  for (int v = 0; v < n; ++v) owners[v] = static_cast<int32_t>((static_cast<uint64_t>(v) * 0x9E3779B97F4A7C15ull >> 40) % 8);
  const Cut counted = CountCut(g, owners, 8, true);
  const Cut expected = ExpectedCut(CountsOf(g), 8, true);
  const double c = std::accumulate(counted.rows.begin(), counted.rows.end(), 0.0);
  const double e = std::accumulate(expected.rows.begin(), expected.rows.end(), 0.0);
  EXPECT_NEAR(c / e, 1.0, 0.03) << c << " counted, " << e << " expected";
}

// One worker's compute with an unbounded GEMM peak and 1 byte/s of memory is the bytes its kernels
// move. GCN 8 -> 4 -> 2 on a path of 10 vertices (18 entries, 28 with the self loops); both
// messages are projected first, so trained: SpMMs at widths 4 and 2, forward and backward.
TEST(Plan, ComputeCountsSpmmsGemmsAndElementwisePasses) {
  std::vector<std::pair<int, int>> path;
  for (int v = 0; v + 1 < 10; ++v) path.push_back({v, v + 1});
  PlanInput in;
  in.graph = CountsOf(Undirected(10, path));
  in.model = {ModelKind::kGcn, 8, 4, 2, 2};
  in.device = {"test", 1e30, 1.0, 1e30, "by hand"};
  auto plan = MakePlan(in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const double spmms = 2 * ((28 * (8 + 4 * 4) + 10 * 4 * 4) + (28 * (8 + 4 * 2) + 10 * 2 * 4));
  const double gemms = 2 * (4 * 10 * (8 + 4) + 4 * 36) + 3 * (4 * 10 * (4 + 2) + 4 * 10);  // forward, dW (, dX)
  const double elementwise = 6 * 4 * 10 * ((8 + 4) + (4 + 2));
  EXPECT_DOUBLE_EQ(plan->predictions[0].compute_s, spmms + gemms + elementwise);
}

TEST(Plan, RefusesBadInputNamingTheFlag) {
  PlanInput in;
  in.graph.vertices = 10;
  in.model = {ModelKind::kGcn, 8, 8, 2, 2};
  in.device = *DeviceByName("cpu");
  in.workers = 20;
  EXPECT_NE(std::string(MakePlan(in).status().message()).find("--workers"), std::string::npos);
  EXPECT_NE(std::string(DeviceByName("tpu").status().message()).find("--device"), std::string::npos);
  EXPECT_NE(std::string(ParseModelKind("gat").status().message()).find("--model"), std::string::npos);
}

// A papers100M-sized GCN on 1024 H100s: the grids move fewer bytes than the oblivious 1D all-gather,
// and the pick fits in memory.
TEST(Plan, PicksAFittingSchemeAtScale) {
  PlanInput in;
  in.graph.vertices = 111000000;
  in.graph.entries = 3200000000;
  in.graph.in_degrees = in.graph.out_degrees = PowerLawDegrees(in.graph.vertices, in.graph.entries, 2.5);
  in.model = {ModelKind::kGcn, 128, 256, 172, 3};
  in.workers = 1024;
  in.device = *DeviceByName("h100");
  in.link = {200e9 / 8, 5e-6};
  auto plan = MakePlan(in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_GE(plan->best, 0);
  EXPECT_TRUE(plan->predictions[plan->best].fits);
  double oblivious = 0, grid = 1e300;
  for (const Prediction& p : plan->predictions) {
    if (p.name == "1d-oblivious") oblivious = p.bytes_received;
    if (p.spec.scheme == Scheme::kTwoD || p.spec.scheme == Scheme::kThreeD) grid = std::min(grid, p.bytes_received);
  }
  EXPECT_LT(grid, oblivious / 4);
}

}  // namespace
}  // namespace fg::plan
