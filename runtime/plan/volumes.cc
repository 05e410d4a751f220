// Per-scheme communication volumes of the performance model (runtime/plan/volumes.h).
#include "runtime/plan/volumes.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace fg::plan {
namespace {

constexpr double kWord = 4.0, kSparseEntry = 8.0;

double Log2Ceil(int n) { return n <= 1 ? 0.0 : std::ceil(std::log2(static_cast<double>(n))); }

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}
double Max(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

}  // namespace

std::string StrategySpec::Name() const {
  switch (scheme) {
    case Scheme::kOneD: {
      const char* m = mode == OneDMode::kRows ? "rows" : mode == OneDMode::kPartial ? "partial" : "oblivious";
      return partition.empty() ? absl::StrCat("1d-", m) : absl::StrCat("1d-", m, "/", partition);
    }
    case Scheme::kOnePointFiveD:
      return absl::StrCat("1.5d c=", c, aware ? " aware" : " oblivious");
    case Scheme::kTwoD:
      return absl::StrCat("2d ", grid[0], "x", grid[1], aware ? " aware" : " oblivious");
    case Scheme::kThreeD:
      return absl::StrCat("3d ", grid[0], "x", grid[1], "x", grid[2], aware ? " aware" : " oblivious");
  }
  return "?";
}

Cut CountCut(const Csr& g, const std::vector<int32_t>& owners, int parts, bool self_loops) {
  Cut cut;
  cut.parts = parts;
  cut.exact = true;
  const size_t P = static_cast<size_t>(parts);
  cut.rows.assign(P * P, 0.0);
  cut.targets.assign(P * P, 0.0);
  cut.owned.assign(P, 0.0);
  cut.entries.assign(P, 0.0);
  std::vector<int64_t> stamp(P, -1);
  // Targets: per root v, the distinct owners of its in-neighbours.
  for (int64_t v = 0; v < g.num_rows; ++v) {
    const int p = owners[v];
    cut.owned[p] += 1;
    cut.entries[p] += self_loops ? 1 : 0;
    for (int64_t e = g.row_ptr()[v]; e < g.row_ptr()[v + 1]; ++e) {
      const int64_t u = g.col()[e];
      if (u == v) continue;
      cut.entries[p] += 1;
      const int q = owners[u];
      if (q == p || stamp[q] == v) continue;
      stamp[q] = v;
      cut.targets[q * P + p] += 1;
    }
  }
  // Rows: per source u, the distinct owners of the roots that read it.
  const Csr out = g.Transpose();
  std::fill(stamp.begin(), stamp.end(), -1);
  for (int64_t u = 0; u < out.num_rows; ++u) {
    const int q = owners[u];
    for (int64_t e = out.row_ptr()[u]; e < out.row_ptr()[u + 1]; ++e) {
      const int64_t v = out.col()[e];
      const int p = owners[v];
      if (v == u || p == q || stamp[p] == u) continue;
      stamp[p] = u;
      cut.rows[q * P + p] += 1;
    }
  }
  return cut;
}

Cut ExpectedCut(const GraphCounts& g, int parts, bool self_loops) {
  Cut cut;
  cut.parts = parts;
  const size_t P = static_cast<size_t>(parts);
  const double q = 1.0 / parts;
  const double rows = g.out_degrees.ExpectedTouched(q) * q, targets = g.in_degrees.ExpectedTouched(q) * q;
  cut.rows.assign(P * P, rows);
  cut.targets.assign(P * P, targets);
  for (size_t p = 0; p < P; ++p) cut.rows[p * P + p] = cut.targets[p * P + p] = 0;
  const double n = static_cast<double>(g.vertices);
  cut.owned.assign(P, n * q);
  cut.entries.assign(P, (static_cast<double>(g.entries) + (self_loops ? n : 0.0)) * q);
  return cut;
}

OneDVectors CountVectors(const Cut& cut, OneDMode mode) {
  const int P = cut.parts;
  OneDVectors v;
  v.rows_sent.assign(P, 0);
  v.partials_sent.assign(P, 0);
  v.received.assign(P, 0);
  v.peers.assign(P, 0);
  for (int q = 0; q < P; ++q) {
    for (int p = 0; p < P; ++p) {
      if (p == q) continue;
      const double r = cut.rows[q * P + p], t = cut.targets[q * P + p];
      double n = r;
      bool partial = false;
      if (mode == OneDMode::kOblivious) n = cut.owned[q];
      if (mode == OneDMode::kPartial && r > 0 && t < r) n = t, partial = true;
      (partial ? v.partials_sent : v.rows_sent)[q] += n;
      v.received[p] += n;
      if (n > 0) v.peers[q] += 1;
    }
  }
  return v;
}

Volume SpmmVolume(const StrategySpec& spec, const GraphCounts& g, bool self_loops, const Cut* cut,
                  int parts, int64_t width, int64_t gemm_width, bool backward) {
  Volume vol;
  const double P = parts, n = static_cast<double>(g.vertices), w = static_cast<double>(width);
  const double E = static_cast<double>(g.entries) + (self_loops ? n : 0.0);
  switch (spec.scheme) {
    case Scheme::kOneD: {
      if (cut == nullptr) return vol;
      const OneDVectors v = CountVectors(*cut, spec.mode);
      std::vector<double> sent(parts);
      for (int q = 0; q < parts; ++q) sent[q] = v.rows_sent[q] + v.partials_sent[q];
      // Backward: every worker returns the gradients of what it received.
      const std::vector<double>& out = backward ? v.received : sent;
      const std::vector<double>& in = backward ? sent : v.received;
      vol.bytes_sent = Mean(out) * w * kWord;
      vol.bytes_received = Mean(in) * w * kWord;
      vol.bytes_received_max = Max(in) * w * kWord;
      vol.messages = Mean(v.peers);
      return vol;
    }
    case Scheme::kOnePointFiveD: {
      const double teams = P / spec.c;
      BlockCounts b{n, E, spec.aware ? (teams - 1.0) * g.out_degrees.ExpectedTouched(spec.c / P) : 0.0};
      return OnePointFiveDVolume(spec, b, parts, width);
    }
    case Scheme::kTwoD: {
      const double pr = spec.grid[0];
      BlockCounts b{n, E, spec.aware ? (pr - 1.0) * g.out_degrees.ExpectedTouched(1.0 / pr) : 0.0};
      return TwoDVolume(spec, b, parts, width, gemm_width);
    }
    case Scheme::kThreeD: {
      const double pr = spec.grid[0];
      BlockCounts b{n, E, spec.aware ? (pr - 1.0) * g.out_degrees.ExpectedTouched(1.0 / pr) : 0.0};
      return ThreeDVolume(spec, b, parts, width, gemm_width);
    }
  }
  return vol;
}

BlockCounts CountBlocks(const Csr& a, const std::vector<int32_t>& block_of, int blocks) {
  BlockCounts b;
  b.vertices = static_cast<double>(a.num_rows);
  b.entries = static_cast<double>(a.nnz());
  // Per column u and row block i: whether some row of block i (other than u's) has an entry at u.
  std::vector<int64_t> stamp(static_cast<size_t>(a.num_cols), -1);
  std::vector<std::vector<int64_t>> rows_of(blocks);
  for (int64_t v = 0; v < a.num_rows; ++v) rows_of[block_of[v]].push_back(v);
  a.VisitIndices([&](const auto* col) {
    for (int i = 0; i < blocks; ++i) {
      for (int64_t v : rows_of[i]) {
        for (int64_t e = a.row_ptr()[v]; e < a.row_ptr()[v + 1]; ++e) {
          const int64_t u = col[e];
          if (block_of[u] == i || stamp[u] == i) continue;
          stamp[u] = i;
          b.touched += 1;
        }
      }
    }
  });
  return b;
}

Volume OnePointFiveDVolume(const StrategySpec& spec, const BlockCounts& b, int parts, int64_t width) {
  Volume vol;
  const double P = parts, n = b.vertices, w = static_cast<double>(width), c = spec.c, teams = P / c;
  // Over all workers: each of the P/c blocks gets every other block's rows once (aware: the touched
  // ones), from one of its c replicas; then the replicas' ring all-reduce sends 2 (c - 1) n w.
  const double rows = spec.aware ? b.touched : (teams - 1.0) * n;
  vol.bytes_received = (rows * w / P + 2.0 * (c - 1.0) * n * w / P) * kWord;
  vol.bytes_sent = vol.bytes_received_max = vol.bytes_received;
  vol.messages = (teams - 1.0) / c * Log2Ceil(static_cast<int>(teams)) + 2.0 * (c - 1.0);
  return vol;
}

Volume ThreeDVolume(const StrategySpec& spec, const BlockCounts& b, int parts, int64_t width, int64_t gemm_width) {
  Volume vol;
  const double P = parts, n = b.vertices, E = b.entries, w = static_cast<double>(width);
  const double gw = static_cast<double>(gemm_width);
  const double pr = spec.grid[0], pc = spec.grid[1], pf = spec.grid[2];
  // Each fibre layer runs 2D on its slice of the inner dimension: over all workers the dense rows
  // are the 2D ones, cut pf ways; then the fibre's reduce-scatter of the pr x pc partial blocks.
  const double rows = spec.aware ? b.touched : (pr - 1.0) * n;
  const double scatter = (1.0 - 1.0 / pf) * n * w / (pr * pc);
  const double gather = (1.0 - 1.0 / pc) * n * gw / (pr * pf);
  const double words = rows * w / P + scatter + gather + (n - n / pc);
  const double entries = E / (pr * pf) - E / P;
  vol.sparse_bytes = entries * kSparseEntry + (n - n / pc) * kWord;
  vol.bytes_received = words * kWord + entries * kSparseEntry;
  vol.bytes_sent = vol.bytes_received_max = vol.bytes_received;
  vol.messages = pc * Log2Ceil(spec.grid[1]) + pr * Log2Ceil(spec.grid[0]) + (pf - 1.0) + (pc - 1.0);
  return vol;
}

Volume TwoDVolume(const StrategySpec& spec, const BlockCounts& b, int parts, int64_t width, int64_t gemm_width) {
  Volume vol;
  const double P = parts, n = b.vertices, E = b.entries, w = static_cast<double>(width);
  const double gw = static_cast<double>(gemm_width);
  const double pr = spec.grid[0], pc = spec.grid[1];
  // Dense rows received over all workers: each of the pr row blocks gets the other blocks' rows
  // (aware: only the touched ones), a width-w/pc slice at each of its pc workers.
  const double rows = spec.aware ? b.touched : (pr - 1.0) * n;
  const double words = rows * w / P + (n - n / pc) + (n / pr) * (1.0 - 1.0 / pc) * gw;
  const double entries = E / pr - E / P;
  vol.sparse_bytes = entries * kSparseEntry + (n - n / pc) * kWord;
  vol.bytes_received = words * kWord + entries * kSparseEntry;
  vol.bytes_sent = vol.bytes_received_max = vol.bytes_received;
  vol.messages = pc * Log2Ceil(spec.grid[1]) + pr * Log2Ceil(spec.grid[0]) + (pc - 1.0);
  return vol;
}

int64_t RingAllReduceBytesSent(int64_t params, int parts, int rank) {
  const int64_t p = parts, n = params;
  if (p == 1 || n == 0) return 0;
  auto len = [&](int64_t c) { return n * (c + 1) / p - n * c / p; };
  int64_t floats = len(rank);  // round 0 sends this worker's own chunk
  for (int64_t round = 0; round + 1 < 2 * (p - 1); ++round) {
    const int64_t c = ((round < p - 1 ? rank - round - 1 : rank - (round - p + 1)) % p + p) % p;
    floats += len(c);
  }
  return floats * static_cast<int64_t>(sizeof(float));
}

std::vector<int> NearCubicGrid(int parts, int k) {
  std::vector<int> best;
  double best_ratio = 1e300;
  if (k == 2) {
    for (int a = 1; a * a <= parts; ++a) {
      if (parts % a == 0) best = {a, parts / a};
    }
    return best;
  }
  for (int a = 1; a * a * a <= parts; ++a) {
    if (parts % a != 0) continue;
    for (int b = a; a * b * b <= parts; ++b) {
      if ((parts / a) % b != 0) continue;
      const int c = parts / a / b;
      const double ratio = static_cast<double>(c) / a;
      if (ratio < best_ratio) best_ratio = ratio, best = {a, b, c};
    }
  }
  return best;
}

}  // namespace fg::plan
