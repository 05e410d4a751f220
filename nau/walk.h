// Random-walk selections (INFA models such as PinSage) in a form the framework can run across
// workers: walkers advance step by step, each step reading only the adjacency row of the vertex
// the walker stands on. In one process a root's walks run to the end at once (WalkLocally); on a
// partitioned dataset the runtime advances every walker while its vertex is held locally and ships
// it to the owner of the next one, one batched message per peer and step, bulk-synchronously
// (CAGNET's selection as a sparse-matrix product over the row-partitioned adjacency). A walker
// carries its position in the root's random stream, so the walks — and the HDG — are the same on
// any number of workers. Thread-safety: implementations are immutable; calls may run concurrently.
#pragma once

#include <cstdint>
#include <vector>

#include "flexgraph/base/rng.h"
#include "hdg/builder.h"
#include "nau/context.h"

namespace fg::nau {

// A walker: plain data, shipped between workers as it is.
struct Walker {
  int64_t root = 0;      // global id of the root whose walks it makes
  int64_t root_key = 0;  // the root's source-dataset id, which keys its random stream
  int64_t cur = 0;       // global id of the vertex it stands on
  int32_t trace = 0, hop = 0, step = 0;
  uint32_t flags = 0;  // implementation-defined state of the current step
  uint64_t draws = 0;  // random numbers drawn so far from the root's stream (ctx.Rng(root))
};
static_assert(sizeof(Walker) == 48, "walkers travel as raw bytes");

// A visited vertex and its source-dataset id (which orders ties, so that a selection does not
// depend on how a partitioned dataset numbers its vertices).
struct Visit {
  int32_t vertex;
  int64_t key;
};

class WalkSelection {
 public:
  virtual ~WalkSelection() = default;
  // The walker of `root` before its first step (root and root_key are set by the caller); false
  // when the root walks nowhere.
  virtual bool Start(Walker* w) const = 0;
  // Advances `w` with `rng` (ctx.StreamOf(w->root_key), positioned at w->draws) while the topology of its
  // current vertex is held here, appending the vertices it visits to `visits`. Returns true when it
  // stopped at a vertex held elsewhere (w->cur), false when the root's walks are over.
  virtual bool Advance(const SelectContext& ctx, Walker* w, RandomStream& rng,
                       std::vector<int32_t>* visits) const = 0;
  // Writes the root's neighbours from all its visits, given in any order.
  virtual void Finish(int64_t root, std::vector<Visit>& visits, hdg::NeighborWriter& out) const = 0;
};

// A root's whole selection in one process: Start, Advance to the end, Finish. A layer whose
// SelectNeighbors is exactly this returns the WalkSelection from Layer::Walks().
void WalkLocally(const WalkSelection& walks, const SelectContext& ctx, int64_t root,
                 hdg::NeighborWriter& out);

}  // namespace fg::nau
