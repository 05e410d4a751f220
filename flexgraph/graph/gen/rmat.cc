#include "flexgraph/graph/gen/rmat.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"

namespace fg::graph {
namespace {

// Stream tags separating the generator's random streams from every other user of the seed.
constexpr uint64_t kEdgeStream = 0x524D41545F454447ull;  // "RMAT_EDG"
constexpr uint64_t kPermStream = 0x524D41545F504552ull;  // "RMAT_PER"
constexpr int64_t kGrain = 1 << 14;

// Calls body(begin, end) over [0, n) in chunks of kGrain, in parallel.
template <typename F>
void ForChunks(int64_t n, F&& body) {
  ParallelFor(0, (n + kGrain - 1) / kGrain,
              [&](int64_t c) { body(c * kGrain, std::min(n, (c + 1) * kGrain)); });
}

// A probability as a threshold on uniform 32-bit draws.
uint32_t Threshold(double p) {
  return static_cast<uint32_t>(std::clamp(p, 0.0, 1.0) * 4294967295.0);
}

}  // namespace

std::vector<int32_t> RmatVertexPermutation(int64_t num_nodes, uint64_t seed) {
  std::vector<int32_t> perm(num_nodes);
  for (int64_t i = 0; i < num_nodes; ++i) perm[i] = static_cast<int32_t>(i);
  // Fisher-Yates from one stream: serial, so independent of the thread count.
  RandomStream rng(seed, kPermStream);
  for (int64_t i = num_nodes - 1; i > 0; --i) {
    std::swap(perm[i], perm[rng.Below(static_cast<uint64_t>(i) + 1)]);
  }
  return perm;
}

std::vector<Edge> GenerateRmatEdges(const RmatOptions& options) {
  FG_CHECK(options.scale >= 1 && options.scale <= 31)
      << "GenerateRmatEdges: scale " << options.scale << " outside [1, 31]";
  FG_CHECK(options.edge_factor >= 1) << "GenerateRmatEdges: edge factor " << options.edge_factor;
  const double d = 1.0 - options.a - options.b - options.c;
  FG_CHECK(options.a >= 0 && options.b >= 0 && options.c >= 0 && d >= -1e-9)
      << "GenerateRmatEdges: probabilities a=" << options.a << " b=" << options.b
      << " c=" << options.c << " must be non-negative and sum to at most 1";
  const int64_t num_nodes = int64_t{1} << options.scale;
  const int64_t num_edges = num_nodes * options.edge_factor;
  // One uniform draw per level picks the quadrant: [0, a) top-left, [a, a+b) top-right (column
  // bit set), [a+b, a+b+c) bottom-left (row bit set), the rest bottom-right (both bits set).
  const uint32_t t_a = Threshold(options.a);
  const uint32_t t_ab = Threshold(options.a + options.b);
  const uint32_t t_abc = Threshold(options.a + options.b + options.c);
  const int levels = options.scale;
  std::vector<Edge> edges(num_edges);
  ForChunks(num_edges, [&](int64_t lo, int64_t hi) {
    for (int64_t e = lo; e < hi; ++e) {
      RandomStream rng(options.seed, MixKey(kEdgeStream, static_cast<uint64_t>(e)));
      uint32_t u = 0, v = 0;
      for (int level = 0; level < levels; ++level) {
        const uint32_t r = rng.NextU32();
        const uint32_t row_bit = r >= t_ab ? 1u : 0u;
        const uint32_t col_bit = (r >= t_a && r < t_ab) || r >= t_abc ? 1u : 0u;
        u = (u << 1) | row_bit;
        v = (v << 1) | col_bit;
      }
      edges[e] = {static_cast<int32_t>(u), static_cast<int32_t>(v)};
    }
  });
  if (options.permute) {
    const std::vector<int32_t> perm = RmatVertexPermutation(num_nodes, options.seed);
    ForChunks(num_edges, [&](int64_t lo, int64_t hi) {
      for (int64_t e = lo; e < hi; ++e) edges[e] = {perm[edges[e].first], perm[edges[e].second]};
    });
  }
  return edges;
}

Csr BuildSymmetricCsr(int64_t num_nodes, const std::vector<Edge>& edges) {
  FG_CHECK(num_nodes >= 0 && num_nodes <= (int64_t{1} << 31))
      << "BuildSymmetricCsr: " << num_nodes << " nodes do not fit int32 ids";
  const int64_t m = static_cast<int64_t>(edges.size());
  // Count both directions of every non-loop edge, then scatter through per-row atomic cursors. The
  // scattered order within a row depends on timing, but sorting each row makes the result unique.
  std::vector<int64_t> count(num_nodes + 1, 0);
  ForChunks(m, [&](int64_t lo, int64_t hi) {
    for (int64_t e = lo; e < hi; ++e) {
      const auto [u, v] = edges[e];
      FG_CHECK(u >= 0 && u < num_nodes && v >= 0 && v < num_nodes)
          << "BuildSymmetricCsr: edge " << e << " (" << u << ", " << v << ") outside [0, "
          << num_nodes << ")";
      if (u == v) continue;
      std::atomic_ref<int64_t>(count[u]).fetch_add(1, std::memory_order_relaxed);
      std::atomic_ref<int64_t>(count[v]).fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::vector<int64_t> start(num_nodes + 1, 0);
  for (int64_t i = 0; i < num_nodes; ++i) start[i + 1] = start[i] + count[i];
  std::vector<int32_t> scratch(start[num_nodes]);
  std::vector<int64_t>& cursor = count;
  std::copy(start.begin(), start.end() - 1, cursor.begin());
  ForChunks(m, [&](int64_t lo, int64_t hi) {
    for (int64_t e = lo; e < hi; ++e) {
      const auto [u, v] = edges[e];
      if (u == v) continue;
      scratch[std::atomic_ref<int64_t>(cursor[u]).fetch_add(1, std::memory_order_relaxed)] = v;
      scratch[std::atomic_ref<int64_t>(cursor[v]).fetch_add(1, std::memory_order_relaxed)] = u;
    }
  });
  // Sort and deduplicate each row in place; `count` receives the final degrees.
  ForChunks(num_nodes, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int32_t* b = scratch.data() + start[r];
      int32_t* e = scratch.data() + start[r + 1];
      std::sort(b, e);
      count[r] = std::unique(b, e) - b;
    }
  });
  Csr csr;
  csr.num_rows = csr.num_cols = num_nodes;
  csr.offsets = Tensor::Empty({num_nodes + 1}, DType::kInt64);
  int64_t* off = csr.offsets.i64();
  off[0] = 0;
  for (int64_t i = 0; i < num_nodes; ++i) off[i + 1] = off[i] + count[i];
  csr.indices = Tensor::Empty({off[num_nodes]}, DType::kInt32);
  int32_t* idx = csr.indices.i32();
  ForChunks(num_nodes, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      std::copy_n(scratch.data() + start[r], off[r + 1] - off[r], idx + off[r]);
    }
  });
  return csr;
}

}  // namespace fg::graph
