#include "partition/rebalancer.h"

#include <algorithm>
#include <tuple>


namespace fg::partition {
namespace {

// The local cost model of one round, updated move by move: exact compute per part, and the
// row-fetch exchange — for every layer, part x and vertex u, need(x, u) = how many leaf entries of
// x's roots reference u; x receives one vector per remote u with need > 0, and u's owner sends it.
// Where ComputeStats chose partial aggregation for a pair of parts (fewer vectors), the pair's
// row-fetch vectors are scaled by the ratio it measured at the start of the round; a per-part
// offset then makes the model equal ComputeStats there.
class LocalModel {
 public:
  LocalModel(const CostModel& cost, const std::vector<int32_t>& owners, const PartitionStats& stats)
      : cost_(cost), w_(cost.workload()), n_(cost.num_vertices()), P_(stats.num_parts),
        owners_(owners), compute_(P_, 0.0), send_(P_, 0.0), recv_(P_, 0.0), offset_(P_, 0.0),
        ratio_(static_cast<size_t>(P_) * P_, 1.0), dsend_(P_, 0.0), drecv_(P_, 0.0),
        stamp_(P_, -1) {
    for (int x = 0; x < P_; ++x) {
      const PartStats& ps = stats.parts[x];
      for (int y = 0; y < P_; ++y) {
        const int64_t rf = ps.row_fetch_vectors[y], pa = ps.partial_vectors[y];
        if (rf > 0) ratio_[x * P_ + y] = static_cast<double>(std::min(rf, pa)) / rf;
      }
    }
    const int L = static_cast<int>(w_.layers.size());
    need_.assign(L, std::vector<int32_t>(static_cast<size_t>(P_) * n_, 0));
    root_of_.assign(L, std::vector<int32_t>(n_, -1));
    for (int64_t v = 0; v < n_; ++v) compute_[owners_[v]] += cost.VertexCompute(v);
    for (int l = 0; l < L; ++l) {
      const LayerWorkload& lw = w_.layers[l];
      for (size_t k = 0; k < lw.roots.size(); ++k) {
        root_of_[l][lw.roots[k]] = static_cast<int32_t>(k);
        const int p = owners_[lw.roots[k]];
        ForLeaves(l, static_cast<int32_t>(k), [&](int32_t u) { ++Need(l, p, u); });
      }
      const double width = static_cast<double>(lw.message_width);
      for (int x = 0; x < P_; ++x) {
        const int32_t* need = &need_[l][static_cast<size_t>(x) * n_];
        for (int64_t u = 0; u < n_; ++u) {
          if (need[u] > 0 && owners_[u] != x) {
            const double floats = width * ratio_[x * P_ + owners_[u]];
            recv_[x] += floats;
            send_[owners_[u]] += floats;
          }
        }
      }
    }
    for (int p = 0; p < P_; ++p) offset_[p] = stats.parts[p].cost() - Cost(p);
  }

  const std::vector<int32_t>& owners() const { return owners_; }
  double Cost(int p) const {
    return compute_[p] + cost_.CommSeconds(send_[p], recv_[p]) + offset_[p];
  }
  int ArgMax() const {
    int best = 0;
    for (int p = 1; p < P_; ++p) {
      if (Cost(p) > Cost(best)) best = p;
    }
    return best;
  }
  int ArgMin() const {
    int best = 0;
    for (int p = 1; p < P_; ++p) {
      if (Cost(p) < Cost(best)) best = p;
    }
    return best;
  }
  double MaxOthers(int p) const {
    double m = 0;
    for (int q = 0; q < P_; ++q) {
      if (q != p) m = std::max(m, Cost(q));
    }
    return m;
  }

  // The part other than v's own that v exchanges most with (its leaves' owners, the parts that
  // need v, counted by references), or -1 when v exchanges with no other part.
  int BestNeighbourPart(int32_t v) {
    const int p = owners_[v];
    ++tag_;
    touched_.clear();
    auto add = [&](int x, double refs) {
      if (x == p) return;
      if (stamp_[x] != tag_) {
        stamp_[x] = tag_;
        dsend_[x] = 0;
        touched_.push_back(x);
      }
      dsend_[x] += refs;
    };
    for (int l = 0; l < static_cast<int>(w_.layers.size()); ++l) {
      for (int x = 0; x < P_; ++x) add(x, Need(l, x, v));
      if (root_of_[l][v] >= 0) ForLeaves(l, root_of_[l][v], [&](int32_t u) { add(owners_[u], 1); });
    }
    int best = -1;
    for (int x : touched_) {
      if (dsend_[x] > 0 && (best < 0 || dsend_[x] > dsend_[best] || (dsend_[x] == dsend_[best] && x < best))) best = x;
    }
    return best;
  }

  // The largest cost among the parts a move of v to q changes, after the move; applies it when
  // `apply`.
  double MaxAfterMove(int32_t v, int q, bool apply) {
    const int p = owners_[v];
    ++tag_;
    touched_.clear();
    const double wv = cost_.VertexCompute(v);
    Touch(p);
    Touch(q);
    for (int l = 0; l < static_cast<int>(w_.layers.size()); ++l) {
      const double width = static_cast<double>(w_.layers[l].message_width);
      // v's own leaves with multiplicity (sorted runs), cached while the same v is evaluated.
      std::vector<int32_t>& leaves = SortedLeaves(l, v);
      int32_t self_refs = 0;
      // 1. v's roots leave p (v still owned by p).
      ForRuns(leaves, [&](int32_t u, int32_t c) {
        if (u == v) self_refs = c;
        if (Need(l, p, u) == c && owners_[u] != p) Exchange(owners_[u], p, -width);
      });
      // 2. v changes owner: every part needing v fetches it from q instead of p.
      for (int x = 0; x < P_; ++x) {
        const int32_t need = Need(l, x, v) - (x == p ? self_refs : 0);
        if (need <= 0) continue;
        if (x != p) Exchange(p, x, -width);
        if (x != q) Exchange(q, x, width);
      }
      // 3. v's roots arrive at q (v owned by q).
      ForRuns(leaves, [&](int32_t u, int32_t c) {
        const int owner = u == v ? q : owners_[u];
        if (Need(l, q, u) == 0 && owner != q) Exchange(owner, q, width);
      });
      if (apply) {
        ForRuns(leaves, [&](int32_t u, int32_t c) {
          Need(l, p, u) -= c;
          Need(l, q, u) += c;
        });
      }
    }
    double worst = 0;
    for (int x : touched_) {
      const double dc = x == p ? -wv : x == q ? wv : 0.0;
      const double after = compute_[x] + dc +
                           cost_.CommSeconds(send_[x] + dsend_[x], recv_[x] + drecv_[x]) +
                           offset_[x];
      worst = std::max(worst, after);
      if (apply) {
        compute_[x] += dc;
        send_[x] += dsend_[x];
        recv_[x] += drecv_[x];
      }
    }
    if (apply) owners_[v] = q;
    return worst;
  }

 private:
  int32_t& Need(int l, int x, int64_t u) { return need_[l][static_cast<size_t>(x) * n_ + u]; }
  template <typename F>
  void ForLeaves(int l, int32_t k, F&& f) const {
    const LayerWorkload& lw = w_.layers[l];
    const int64_t* rp = lw.bottom.row_ptr();
    const int32_t* col = lw.bottom.col();
    for (int64_t e = rp[lw.root_nodes[k]]; e < rp[lw.root_nodes[k + 1]]; ++e) f(col[e]);
  }
  std::vector<int32_t>& SortedLeaves(int l, int32_t v) {
    if (leaves_v_ != v) {
      leaves_v_ = v;
      leaves_.resize(w_.layers.size());
      for (int k = 0; k < static_cast<int>(w_.layers.size()); ++k) {
        leaves_[k].clear();
        if (root_of_[k][v] >= 0) {
          ForLeaves(k, root_of_[k][v], [&](int32_t u) { leaves_[k].push_back(u); });
          std::sort(leaves_[k].begin(), leaves_[k].end());
        }
      }
    }
    return leaves_[l];
  }
  template <typename F>
  static void ForRuns(const std::vector<int32_t>& leaves, F&& f) {
    for (size_t i = 0; i < leaves.size();) {
      size_t j = i;
      while (j < leaves.size() && leaves[j] == leaves[i]) ++j;
      f(leaves[i], static_cast<int32_t>(j - i));
      i = j;
    }
  }
  void Touch(int x) {
    if (stamp_[x] != tag_) {
      stamp_[x] = tag_;
      dsend_[x] = drecv_[x] = 0;
      touched_.push_back(x);
    }
  }
  // `to` fetches one more (or one fewer) row of `floats` from `from`.
  void Exchange(int from, int to, double floats) {
    Touch(from);
    Touch(to);
    const double sent = floats * ratio_[to * P_ + from];
    dsend_[from] += sent;
    drecv_[to] += sent;
  }

  const CostModel& cost_;
  const Workload& w_;
  int64_t n_;
  int P_;
  std::vector<int32_t> owners_;
  std::vector<double> compute_, send_, recv_, offset_;
  std::vector<double> ratio_;  // [receiver * P + sender]: chosen / row-fetch vectors
  std::vector<std::vector<int32_t>> need_;     // [layer][part * n + vertex]
  std::vector<std::vector<int32_t>> root_of_;  // [layer][vertex] -> root index or -1
  // Scratch.
  std::vector<double> dsend_, drecv_;
  std::vector<int64_t> stamp_;
  int64_t tag_ = 0;
  std::vector<int> touched_;
  int64_t leaves_v_ = -1;
  std::vector<std::vector<int32_t>> leaves_;  // per layer, of vertex leaves_v_
};

// One round: up to `budget` moves, each off the part that is currently the most expensive.
// Candidate lists are built once per part and round (a scan of its vertices) and consumed in
// order of modelled gain, each move re-evaluated against the current state, so a round scans each
// part's vertices about once however often the most expensive part changes. Returns the new owners
// and the number of moves.
std::pair<std::vector<int32_t>, int64_t> RunRound(const CostModel& cost,
                                                  const std::vector<int32_t>& owners,
                                                  const PartitionStats& stats, int64_t budget) {
  LocalModel model(cost, owners, stats);
  const int64_t n = cost.num_vertices();
  const int P = stats.num_parts;
  std::vector<std::vector<int32_t>> members(P);
  for (int64_t v = 0; v < n; ++v) members[owners[v]].push_back(static_cast<int32_t>(v));
  using Candidate = std::tuple<double, int32_t, int>;  // (cost after, v, q)
  std::vector<std::vector<Candidate>> lists(P);
  std::vector<size_t> next(P, 0);
  std::vector<char> built(P, 0), moved(n, 0);
  int64_t moves = 0;
  int builds = 0;
  while (moves < budget) {
    const int p = model.ArgMax();
    bool fresh = false;
    if (!built[p]) {
      if (++builds > 2 * P) break;  // bounds a round's scans to about two passes over the graph
      // Vertices of p with the part they exchange most with, and with the cheapest part (which
      // may share nothing with p, e.g. a part of isolated vertices), by modelled cost after the
      // move.
      const int cheapest = model.ArgMin();
      const double current = model.Cost(p);
      std::vector<Candidate>& cands = lists[p];
      cands.clear();
      for (int32_t v : members[p]) {
        if (moved[v] || model.owners()[v] != p) continue;
        const int best = model.BestNeighbourPart(v);
        for (int q : {best, cheapest}) {
          if (q < 0 || q == p || (q == cheapest && best == cheapest)) continue;
          const double after = model.MaxAfterMove(v, q, false);
          if (after < current) cands.emplace_back(after, v, q);
        }
      }
      std::sort(cands.begin(), cands.end());
      next[p] = 0;
      built[p] = 1;
      fresh = true;
    }
    int64_t applied = 0;
    bool still_max = true;
    std::vector<Candidate>& cands = lists[p];
    for (; next[p] < cands.size() && moves < budget; ++next[p]) {
      const auto& [ignored, v, q] = cands[next[p]];
      if (moved[v] || model.owners()[v] != p) continue;
      // Re-evaluate against the current state; stop when p is no longer the most expensive.
      const double now = model.Cost(p);
      if (model.MaxOthers(p) >= now) {
        still_max = false;
        break;
      }
      if (model.MaxAfterMove(v, q, false) >= now) continue;
      model.MaxAfterMove(v, q, true);
      members[q].push_back(v);
      moved[v] = 1;
      ++moves;
      ++applied;
    }
    if (!still_max && applied == 0) break;  // tied for the maximum: moving off p cannot lower it
    if (still_max && moves < budget) {
      // p's list is used up while p is still the most expensive: rebuild it once; stop when a
      // fresh list brings nothing.
      if (fresh && applied == 0) break;
      built[p] = 0;
    }
  }
  return {model.owners(), moves};
}

}  // namespace

RebalanceResult Rebalance(const graph::Dataset& dataset, const CostModel& cost,
                          std::vector<int32_t> owners, int num_parts,
                          const RebalanceOptions& options) {
  RebalanceResult r;
  r.stats = ComputeStats(dataset, owners, num_parts, cost);
  r.initial_max_cost = r.stats.max_cost;
  r.initial_imbalance = r.stats.imbalance;
  r.owners = std::move(owners);
  if (num_parts <= 1) return r;
  const int64_t n = cost.num_vertices();
  const int64_t max_moves = options.max_moves > 0 ? options.max_moves : std::max<int64_t>(1, n);
  // Moves per round: grows while rounds succeed, shrinks when the exact estimate disagrees.
  const int64_t max_budget = std::max<int64_t>(32, n / num_parts);
  int64_t budget = std::max<int64_t>(32, n / (4 * num_parts));
  while (r.rounds < options.max_rounds && r.moves < max_moves && budget >= 1 &&
         r.stats.imbalance > options.target_imbalance) {
    auto [next, moves] = RunRound(cost, r.owners, r.stats, std::min(budget, max_moves - r.moves));
    if (moves == 0) break;
    ++r.rounds;
    PartitionStats s = ComputeStats(dataset, next, num_parts, cost);
    if (s.max_cost < r.stats.max_cost) {
      r.owners = std::move(next);
      r.stats = std::move(s);
      r.moves += moves;
      ++r.accepted_rounds;
      if (moves == budget) budget = std::min(2 * budget, max_budget);
    } else {
      budget = std::min(budget, moves) / 4;
    }
  }
  return r;
}

}  // namespace fg::partition
