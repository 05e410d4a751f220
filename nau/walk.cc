#include "nau/walk.h"

#include "flexgraph/base/logging.h"

namespace fg::nau {

void WalkLocally(const WalkSelection& walks, const SelectContext& ctx, int64_t root,
                 hdg::NeighborWriter& out) {
  thread_local std::vector<int32_t> visited;
  thread_local std::vector<Visit> visits;
  visited.clear();
  visits.clear();
  Walker w;
  w.root = root;
  w.root_key = ctx.SourceId(root);
  if (walks.Start(&w)) {
    RandomStream rng = ctx.StreamOf(w.root_key);
    rng.Seek(w.draws);
    const bool away = walks.Advance(ctx, &w, rng, &visited);
    FG_CHECK(!away) << "a walk left the vertices held in this process (vertex " << w.cur << ")";
  }
  for (int32_t v : visited) visits.push_back({v, ctx.SourceId(v)});
  walks.Finish(root, visits, out);
}

}  // namespace fg::nau
