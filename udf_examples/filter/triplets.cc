#include "udf_examples/filter/triplets.h"

#include <algorithm>
#include <cmath>

#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"

namespace fg::udf {

Tensor TripletFeatures(const graph::GraphSet& gs, const Csr& a) {
  const int64_t m = gs.num_edges();
  FG_CHECK(gs.edge_feat.defined() && gs.edge_feat.row_width() == 6)
      << "triplet features need the 6 tracking edge features";
  const float* f = gs.edge_feat.f32();
  const int64_t* ids = gs.entry_edges.i64();
  const int64_t* edges = gs.edges.i64();
  const int64_t* ptr = a.row_ptr();
  auto slope = [&](int64_t k) { return f[6 * k + 4]; };
  auto dzdr = [&](int64_t k) { return f[6 * k + 0] != 0 ? f[6 * k + 2] / f[6 * k + 0] : 0.0f; };
  auto clip = [](float x) { return std::clamp(x, -kNoContinuation, kNoContinuation); };
  Tensor out = Tensor::Empty({m, kTripletFeatures});
  float* o = out.f32();
  ParallelForDynamic(0, m, 1024, [&](int64_t k) {
    const float s = slope(k), t = dzdr(k);
    // Side 0: stored edges into the inner hit (entries of its row with ids < m); side 1: stored
    // edges out of the outer hit (entries of its row that are reversed edges, ids >= m).
    for (int side = 0; side < 2; ++side) {
      const int64_t hit = edges[2 * k + side];
      float best = INFINITY, bs = kNoContinuation, bt = kNoContinuation;
      for (int64_t x = ptr[hit]; x < ptr[hit + 1]; ++x) {
        const int64_t id = ids[x];
        if (id < 0 || (side == 0) != (id < m)) continue;
        const int64_t p = id % m;
        const float ds = (slope(p) - s) / kSlopeScale, dt = (dzdr(p) - t) / kDzdrScale;
        const float d = ds * ds + dt * dt;
        if (d < best) best = d, bs = ds, bt = dt;
      }
      float* row = o + kTripletFeatures * k + 3 * side;
      row[0] = clip(bs);
      row[1] = clip(bt);
      row[2] = std::isinf(best) ? 0.0f : 1.0f;
    }
  });
  return out;
}

}  // namespace fg::udf
