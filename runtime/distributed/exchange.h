// ExchangePlan: how one worker's HDG leaves for one layer map onto its vertex table
// [owned | ghosts] and onto its peers, plus the differentiable exchange operations the distributed
// forward and backward use.
//
// Per peer pair the receiver chooses, from the HDG, partial aggregation (the owner aggregates its
// leaves for each of my roots and sends one vector per root; decomposable flat reductions only) or
// row fetch (the owner sends each needed row once), whichever sends fewer vectors. Index lists are
// exchanged once, when the HDG is built. Every exchange is one batched message per peer, layer and
// direction. Thread-compatible; all workers must build and run exchanges in the same order.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/autograd/var.h"
#include "hdg/hdg.h"
#include "nau/aggregator.h"
#include "nau/context.h"
#include "runtime/comm/communicator.h"
#include "runtime/grid/grid_spec.h"

namespace fg::runtime {

// Which worker owns each global vertex: a table (a plan applied to a dataset every worker loaded
// whole) or, for a partitioned dataset, every node type's id bounds (a search over the P
// boundaries, no per-vertex array). Immutable; thread-safe.
class Ownership {
 public:
  Ownership() = default;
  explicit Ownership(std::vector<int32_t> owners);
  // bounds[t]: num_parts + 1 ascending type-local ids of node type t (graph::PartInfo).
  Ownership(const nau::VertexSpace& space, const std::vector<std::vector<int64_t>>& bounds);
  int64_t num_vertices() const { return num_vertices_; }
  // The rank owning global vertex v, 0 <= v < num_vertices().
  int Of(int64_t v) const;

 private:
  int64_t num_vertices_ = 0;
  std::vector<int32_t> table_;
  std::vector<int64_t> block_start_;  // ranges: first global id of each non-empty block, ascending
  std::vector<int32_t> block_owner_;
};

// The positions of the ids of an ascending list of distinct non-negative ids. A list of few runs
// of consecutive ids (a part's own vertices: one run per node type) is searched by run, any other
// hashed (open addressing, at least twice the cells of the ids). Immutable; thread-safe.
class IdPositions {
 public:
  IdPositions(const int64_t* ids, int64_t n);
  // The position of `id` in the list, -1 where it is not listed.
  int64_t Of(int64_t id) const;

 private:
  static constexpr size_t kMaxRuns = 64;
  struct Cell {
    int64_t id, pos;
  };
  uint64_t Hash(int64_t id) const { return (static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ull) >> shift_; }
  std::vector<int64_t> run_start_, run_first_;  // runs: first id, its position; then the list's end
  std::vector<Cell> cells_;                     // the hash table (empty: searched by run)
  int shift_ = 60;
  uint64_t mask_ = 0;
};

enum class ExchangeMode { kAuto, kRowFetch, kPartial };
// Per-entry weights of level `l` under a decomposable reduction: the entry's weight under a
// weighted sum (scaled to sum to one where the aggregator normalises), 1 under a sum, 1/degree
// under a mean.
std::vector<float> EntryWeights(const hdg::HdgLevel& l, const nau::Aggregator& agg);

// Parses "auto" or "1d" (both kAuto: the command line's auto may also choose a grid, its 1d not),
// "rows" or "partial".
bool ParseExchangeMode(const std::string& s, ExchangeMode* out);
// A run's --exchange: a per-peer mode (auto, rows, partial; *grid left inactive) or a process grid
// (grid_spec.h; *mode left as it is). The error names the flag and what it accepts.
absl::Status ParseExchange(const std::string& s, ExchangeMode* mode, grid::GridSpec* grid);

struct PeerExchange {
  int peer = -1;
  bool partial = false;           // this worker receives partials (not rows) from `peer`
  Tensor send_rows;               // int32: my owned rows `peer` fetches, in its slot order
  Tensor recv_slots;              // int32: my ghost slots filled by `peer`'s rows, in order
  SparseMatrixPtr send_partial;   // `peer`'s targets x my owned rows (null: none)
  Tensor recv_targets;            // int32: my roots receiving `peer`'s partial rows, in order
};

struct LayerExchange {
  int layer = 0;
  int step = 0;  // the tags' step field: a second exchange of one layer and pass (edge_return.h) uses 1
  int64_t num_owned = 0;
  int64_t num_roots = 0;
  Tensor ghost_ids;  // int64 global ids of ghost rows
  // Flat decomposable layers: level-1 weights already folded in (mean as 1/degree).
  bool partial_path = false;
  SparseMatrixPtr local_owned;  // roots x owned rows
  SparseMatrixPtr local_ghost;  // roots x ghost rows
  // Other layers: the HDG with level-1 children relabelled into [owned | ghosts].
  std::shared_ptr<const hdg::Hdg> local_hdg;
  std::vector<PeerExchange> peers;  // every other rank, in rank order
  // Every peer's list concatenated in rank order, on the run's device (PlaceExchange): the owned
  // rows the peers fetch (send_rows), my roots receiving partial rows (recv_targets), and the
  // peers' targets x my owned rows (send_partial, stacked).
  Tensor send_index, recv_target_index;
  SparseMatrixPtr send_partials;
  // The scatter-adds of those lists (ops::GroupByIndex), built once: my owned rows x the rows
  // sent, and my roots x the partial rows received.
  SparseMatrixPtr send_grouping, recv_grouping;
  Device device = Device::kCpu;  // where the layer runs: received rows are placed there
  // Vectors this worker sends per forward pass, by kind.
  int64_t rows_sent = 0, partials_sent = 0;
  // Vectors this worker receives per forward pass: as chosen, and under the alternatives (every
  // peer by row fetch, every peer by partial aggregation where decomposable, every neighbour row
  // without deduplication).
  int64_t recv_chosen = 0, recv_rows_only = 0, recv_partial_only = 0, recv_naive = 0;
};

// Builds the exchange for an HDG whose level-1 children are global vertex ids. `table_ids` are
// the (sorted) global ids of this worker's input rows for the layer; `owners` gives every global
// vertex's rank. `every_entry`: the layer reads each entry (edge states), so it runs on local_hdg
// over the fetched rows, never on partial sums. Collective: every worker calls it for the same
// layer at the same time.
absl::StatusOr<LayerExchange> BuildLayerExchange(Communicator& comm, const hdg::Hdg& hdg,
                                                 const nau::Aggregator& level1,
                                                 const Ownership& owners,
                                                 const Tensor& table_ids, int layer, int epoch,
                                                 ExchangeMode mode, bool every_entry = false);

// Places the concatenated lists and groupings above and the local matrices on `device`; also
// local_hdg (its level k normalised where normalized[k - 1]) when `place_hdg`. Once per exchange.
void PlaceExchange(LayerExchange* ex, Device device, bool place_hdg, const std::vector<bool>& normalized);

// The exchange that gives every worker every other worker's rows (`my_ids`: this worker's sorted
// global ids, `my_keys` their keys, as DistributedExecutor::Rows): each peer sends all its rows,
// ghosts hold them in rank order. `order` receives, for the union of all ids in ascending order,
// each one's row in the [mine | ghosts] table, and `all_keys` their keys in that order. `layer`
// must be one no model layer uses (its tags). Collective.
absl::StatusOr<LayerExchange> BuildAllRows(Communicator& comm, const Tensor& my_ids,
                                           const Tensor& my_keys, int layer, int epoch,
                                           Tensor* order, Tensor* all_keys);

struct StagedSend;  // exchange.cc
class PinnedPool;

// Where the exchange ops of one pass record the first communication error (checked by the caller
// after forward and backward, since autograd closures cannot return a Status).
struct ExchangeContext {
  Communicator* comm = nullptr;
  int epoch = 0;
  int phase = 0;  // 0: training pass, 1: evaluation pass (distinct tags)
  std::shared_ptr<absl::Status> error = std::make_shared<absl::Status>();
  double compute_in_flight = 0;  // seconds of local work between posting sends and receiving
  bool pipeline = true;          // false: receive before the local aggregation (for benchmarks)
  int reductions = 0;            // AllReduceSum calls in the current pass (tags)
  // The all-to-alls started and not yet finished, by tag: a Post op (forward) or a Receive op's
  // backward starts one, the matching Receive op or Post op's backward finishes it.
  std::map<uint64_t, std::unique_ptr<Communicator::PendingAllToAllV>> pending;
  // Device runs: all-to-alls whose bytes are still being copied to the host (on the copy stream),
  // started in order by FlushSends or the next Receive; pinned host buffers reused across passes.
  std::vector<std::shared_ptr<StagedSend>> staged;
  std::shared_ptr<PinnedPool> pinned;
};

// Starts the all-to-alls of ctx.staged (waiting for their copies). Device runs call it once the
// work that should overlap the transfers is enqueued; a Receive op calls it first in any case.
void FlushSends(ExchangeContext& ctx);

// Starts sending rows / partials of `m` (my owned messages [num_owned, d]) to the peers, one
// planned all-to-all (Communicator::StartAllToAllV) that the matching Receive op finishes. Returns
// a token that the Receive op takes, so the backward exchange runs in the mirrored order.
ag::Var PostRows(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& m);
ag::Var PostPartials(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& m);
// Ghost rows [ghosts, d] / partial sums scattered onto my roots [num_roots, d].
ag::Var ReceiveRows(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& token,
                    int64_t width);
ag::Var ReceivePartials(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& token,
                        int64_t width);
// ReceivePartials for a sum nothing differentiates: adds the peers' partial sums onto the rows of
// `sum` [num_roots, d] in place.
void AddReceivedPartials(ExchangeContext& ctx, const LayerExchange& ex, Tensor* sum);
// Sum of a small Var over all workers (every worker gets the same value); backward sums the
// gradients the same way. Every worker must make the same calls in the same order.
ag::Var AllReduceSum(ExchangeContext& ctx, const ag::Var& x);
// Rows of a then rows of b.
ag::Var ConcatRows(const ag::Var& a, const ag::Var& b);

}  // namespace fg::runtime
