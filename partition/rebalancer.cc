#include "partition/rebalancer.h"

#include <algorithm>
#include <tuple>

#include "partition/partitioner.h"

namespace fg::partition {
namespace {

// The local cost model of one round: exact compute per part plus alpha[p] * cut weight of p,
// with alpha[p] fitted so that the model equals the exact estimate at the start of the round.
class LocalModel {
 public:
  LocalModel(const CostModel& cost, const std::vector<int32_t>& edge_weights,
             const std::vector<int32_t>& owners, const PartitionStats& stats)
      : g_(cost.union_graph()), compute_v_(cost.vertex_compute()), ew_(edge_weights),
        owners_(owners), P_(stats.num_parts), compute_(P_, 0.0), cut_(P_, 0.0), alpha_(P_, 0.0),
        weight_to_(P_, 0.0), touched_stamp_(P_, -1) {
    for (int p = 0; p < P_; ++p) compute_[p] = stats.parts[p].compute_seconds;
    for (int64_t v = 0; v < g_.num_rows; ++v) {
      for (int64_t e = g_.row_ptr()[v]; e < g_.row_ptr()[v + 1]; ++e) {
        if (owners_[g_.col()[e]] != owners_[v]) cut_[owners_[v]] += ew_[e];
      }
    }
    double comm = 0, cut = 0;
    for (int p = 0; p < P_; ++p) {
      comm += stats.parts[p].comm_seconds;
      cut += cut_[p];
    }
    const double global = cut > 0 ? comm / cut : cost.SecondsPerExchangedFloat();
    for (int p = 0; p < P_; ++p) {
      alpha_[p] = cut_[p] > 0 ? stats.parts[p].comm_seconds / cut_[p] : global;
    }
  }

  const std::vector<int32_t>& owners() const { return owners_; }
  double Cost(int p) const { return compute_[p] + alpha_[p] * cut_[p]; }
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

  // Edge weight from v to each part (in weight_to_) and the parts touched, in first-seen order.
  const std::vector<int>& Scan(int64_t v) {
    ++stamp_;
    touched_.clear();
    for (int64_t e = g_.row_ptr()[v]; e < g_.row_ptr()[v + 1]; ++e) {
      const int q = owners_[g_.col()[e]];
      if (touched_stamp_[q] != stamp_) {
        touched_stamp_[q] = stamp_;
        weight_to_[q] = 0;
        touched_.push_back(q);
      }
      weight_to_[q] += ew_[e];
    }
    total_ = 0;
    for (int q : touched_) total_ += weight_to_[q];
    return touched_;
  }
  // After Scan(v): whether v has a neighbour in part q.
  bool Touches(int q) const { return touched_stamp_[q] == stamp_; }
  // After Scan(v): the model's costs of p (v's part) and q if v moved from p to q.
  std::pair<double, double> CostsAfterMove(int64_t v, int p, int q) const {
    const double dp = Touches(p) ? weight_to_[p] : 0;
    const double dq = Touches(q) ? weight_to_[q] : 0;
    const double w = compute_v_[v];
    const double new_p = compute_[p] - w + alpha_[p] * (cut_[p] + dp - (total_ - dp));
    const double new_q = compute_[q] + w + alpha_[q] * (cut_[q] + total_ - 2 * dq);
    return {new_p, new_q};
  }

  void Move(int64_t v, int q) {
    const int p = owners_[v];
    compute_[p] -= compute_v_[v];
    compute_[q] += compute_v_[v];
    for (int64_t e = g_.row_ptr()[v]; e < g_.row_ptr()[v + 1]; ++e) {
      const int o = owners_[g_.col()[e]];
      if (o != p) {
        cut_[p] -= ew_[e];
        cut_[o] -= ew_[e];
      }
      if (o != q) {
        cut_[q] += ew_[e];
        cut_[o] += ew_[e];
      }
    }
    owners_[v] = q;
  }

 private:
  const Csr& g_;
  const std::vector<double>& compute_v_;
  const std::vector<int32_t>& ew_;
  std::vector<int32_t> owners_;
  int P_;
  std::vector<double> compute_, cut_, alpha_, weight_to_;
  std::vector<int64_t> touched_stamp_;
  std::vector<int> touched_;
  int64_t stamp_ = 0;
  double total_ = 0;
};

// One round: up to `budget` moves, each off the part that is currently the most expensive.
// Candidate lists are built once per part and round (a scan of its vertices) and consumed in
// order of modelled gain, each move re-evaluated against the current state, so a round costs
// O(edges) scans however often the most expensive part changes. Returns the new owners and the
// number of moves.
std::pair<std::vector<int32_t>, int64_t> RunRound(const CostModel& cost,
                                                  const std::vector<int32_t>& edge_weights,
                                                  const std::vector<int32_t>& owners,
                                                  const PartitionStats& stats, int64_t budget) {
  LocalModel model(cost, edge_weights, owners, stats);
  const Csr& g = cost.union_graph();
  const int64_t n = g.num_rows;
  const int P = stats.num_parts;
  std::vector<std::vector<int32_t>> members(P);
  for (int64_t v = 0; v < n; ++v) members[owners[v]].push_back(static_cast<int32_t>(v));
  using Candidate = std::tuple<double, int32_t, int>;  // (-gain, v, q)
  std::vector<std::vector<Candidate>> lists(P);
  std::vector<size_t> next(P, 0);
  std::vector<char> built(P, 0), moved(n, 0);
  int64_t moves = 0;
  while (moves < budget) {
    const int p = model.ArgMax();
    bool fresh = false;
    if (!built[p]) {
      // Vertices of p with each neighbouring part, and with the cheapest part (which may have
      // no edges to p, e.g. a part of isolated vertices), by modelled gain.
      const int cheapest = model.ArgMin();
      const double current = model.Cost(p);
      std::vector<Candidate>& cands = lists[p];
      cands.clear();
      auto consider = [&](int32_t v, int q) {
        const auto [new_p, new_q] = model.CostsAfterMove(v, p, q);
        const double after = std::max(new_p, new_q);
        if (after < current) cands.emplace_back(after - current, v, q);
      };
      for (int32_t v : members[p]) {
        if (moved[v] || model.owners()[v] != p) continue;
        for (int q : model.Scan(v)) {
          if (q != p) consider(v, q);
        }
        if (cheapest != p && !model.Touches(cheapest)) consider(v, cheapest);
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
      const auto& [neg_gain, v, q] = cands[next[p]];
      if (moved[v] || model.owners()[v] != p) continue;
      // Re-evaluate against the current state; stop when p is no longer the most expensive.
      const double now = model.Cost(p);
      if (model.MaxOthers(p) >= now) {
        still_max = false;
        break;
      }
      model.Scan(v);
      const auto [new_p, new_q] = model.CostsAfterMove(v, p, q);
      if (std::max(new_p, new_q) >= now) continue;
      model.Move(v, q);
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
  const int64_t max_moves = options.max_moves > 0 ? options.max_moves : std::max<int64_t>(1, n / 4);
  const std::vector<int32_t> edge_weights = MetisEdgeWeights(cost);
  int64_t budget = std::max<int64_t>(32, n / (4 * num_parts));
  while (r.rounds < options.max_rounds && r.moves < max_moves && budget >= 1 &&
         r.stats.imbalance > options.target_imbalance) {
    auto [next, moves] =
        RunRound(cost, edge_weights, r.owners, r.stats, std::min(budget, max_moves - r.moves));
    if (moves == 0) break;
    ++r.rounds;
    PartitionStats s = ComputeStats(dataset, next, num_parts, cost);
    if (s.max_cost < r.stats.max_cost) {
      r.owners = std::move(next);
      r.stats = std::move(s);
      r.moves += moves;
      ++r.accepted_rounds;
    } else {
      budget = std::min(budget, moves) / 4;
    }
  }
  return r;
}

}  // namespace fg::partition
