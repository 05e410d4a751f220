#include "flexgraph/graph/track_building.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/edge_filter.h"
#include "flexgraph/graph/tracking.h"

namespace fg::graph {
namespace {

double Ratio(int64_t a, int64_t b) { return b > 0 ? static_cast<double>(a) / b : std::nan(""); }

int64_t Find(std::vector<int64_t>& parent, int64_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

// The bin of `x` in ascending `edges`, or -1 outside them.
int Bin(const std::vector<double>& edges, double x) {
  if (edges.size() < 2 || !(x >= edges.front()) || !(x < edges.back())) return -1;
  return static_cast<int>(std::upper_bound(edges.begin(), edges.end(), x) - edges.begin()) - 1;
}

void InitBins(EfficiencyBins* b, std::vector<double> edges) {
  b->edges = std::move(edges);
  const size_t n = b->edges.size() > 1 ? b->edges.size() - 1 : 0;
  b->particles.assign(n, 0);
  b->matched.assign(n, 0);
}

}  // namespace

double TrackMetrics::edge_efficiency() const { return Ratio(kept_true_edges, true_edges); }
double TrackMetrics::edge_purity() const { return Ratio(kept_true_edges, kept_edges); }
double TrackMetrics::track_efficiency() const { return Ratio(matched, reconstructable); }
double TrackMetrics::fake_rate() const { return Ratio(fakes, candidates); }
double TrackMetrics::duplicate_rate() const { return Ratio(duplicates, candidates); }

std::vector<std::vector<int64_t>> BuildTrackCandidates(const GraphSet& gs, int64_t graph,
                                                       const std::vector<float>& scores,
                                                       const TrackBuildingOptions& options) {
  const int64_t v0 = gs.NodeBegin(graph), n = gs.NodeEnd(graph) - v0;
  const int64_t* edges = gs.edges.i64();
  std::vector<int64_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<char> joined_out(n, 0), joined_in(n, 0);  // a hit's surviving edge outward / inward
  std::vector<int64_t> best_out(n), best_in(n);
  auto better = [&](int64_t e, int64_t current) { return current < 0 || scores[e] > scores[current]; };
  // Joins every edge with score > cut between free ends that is the best of both its hits; with
  // `pieces` (hits per component), only edges where one end's piece holds min_hits hits.
  auto join_mutual_best = [&](double cut, const std::vector<int64_t>* pieces) {
    std::fill(best_out.begin(), best_out.end(), -1);
    std::fill(best_in.begin(), best_in.end(), -1);
    for (int64_t e = gs.EdgeBegin(graph); e < gs.EdgeEnd(graph); ++e) {
      if (!(scores[e] > cut)) continue;  // NaN: not kept
      const int64_t a = edges[2 * e] - v0, b = edges[2 * e + 1] - v0;
      if (joined_out[a] || joined_in[b]) continue;
      if (pieces != nullptr &&
          std::max((*pieces)[Find(parent, a)], (*pieces)[Find(parent, b)]) < options.min_hits) {
        continue;
      }
      if (better(e, best_out[a])) best_out[a] = e;
      if (better(e, best_in[b])) best_in[b] = e;
    }
    for (int64_t a = 0; a < n; ++a) {
      const int64_t e = best_out[a];
      if (e < 0) continue;
      const int64_t b = edges[2 * e + 1] - v0;
      if (best_in[b] != e) continue;
      parent[Find(parent, a)] = Find(parent, b);
      joined_out[a] = joined_in[b] = 1;
    }
  };
  join_mutual_best(options.cut, nullptr);
  if (options.extend_cut < options.cut) {
    std::vector<int64_t> pieces(n, 0);  // as the first pass left them
    for (int64_t v = 0; v < n; ++v) ++pieces[Find(parent, v)];
    join_mutual_best(options.extend_cut, &pieces);
  }
  std::vector<std::vector<int64_t>> by_root(n);
  for (int64_t v = 0; v < n; ++v) by_root[Find(parent, v)].push_back(v0 + v);
  std::vector<std::vector<int64_t>> out;  // in order of each candidate's first hit
  for (int64_t v = 0; v < n; ++v) {
    std::vector<int64_t>& c = by_root[Find(parent, v)];
    if (!c.empty() && c.front() == v0 + v && static_cast<int64_t>(c.size()) >= options.min_hits) {
      out.push_back(std::move(c));
    }
  }
  return out;
}

absl::StatusOr<TrackMetrics> MeasureTracks(
    const Dataset& ds, const std::vector<int64_t>& graphs, const std::vector<float>& scores,
    const TrackBuildingOptions& building, const TrackMetricsOptions& options,
    std::vector<std::vector<std::vector<int64_t>>>* candidates) {
  FG_RETURN_IF_ERROR(CheckTrackingDataset(ds));
  const GraphSet& gs = *ds.graphs;
  auto eta_col = gs.particles.find(kParticleEta);
  auto hits_col = gs.particles.find(kParticleHits);
  if (eta_col == gs.particles.end() || eta_col->second.dtype() != DType::kFloat32 ||
      hits_col == gs.particles.end() || hits_col->second.dtype() != DType::kInt64) {
    return absl::InvalidArgumentError(absl::StrCat(ds.name, ": tracking metrics need particles '",
                                                   kParticleEta, "' (float) and '", kParticleHits,
                                                   "' (int64)"));
  }
  if (static_cast<int64_t>(scores.size()) != gs.num_edges()) {
    return absl::InvalidArgumentError(absl::StrCat("edge scores: ", scores.size(), " for ",
                                                   gs.num_edges(), " edges of ", ds.name));
  }
  const int64_t* particle = gs.node_info.at(kHitParticle).i64();
  const float* pt = gs.particles.at(kParticlePt).f32();
  const float* eta = eta_col->second.f32();
  const int64_t* num_hits = hits_col->second.i64();
  const int64_t* label = gs.edge_labels.i64();
  TrackMetrics m;
  if (candidates != nullptr) candidates->clear();
  // Bins: pT as given or defaults; eta over the reconstructable particles' range.
  InitBins(&m.by_pt, options.pt_bins.empty()
                         ? std::vector<double>{0, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 10000}
                         : options.pt_bins);
  auto reconstructable = [&](int64_t p) {
    return pt[p] > options.pt_min && num_hits[p] >= options.particle_min_hits;
  };
  std::vector<double> eta_bins = options.eta_bins;
  if (eta_bins.empty()) {
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t g : graphs) {
      if (g < 0 || g >= gs.num_graphs()) {
        return absl::InvalidArgumentError(absl::StrCat("graph ", g, " outside [0, ", gs.num_graphs(), ")"));
      }
      for (int64_t p = gs.particle_offsets.i64()[g]; p < gs.particle_offsets.i64()[g + 1]; ++p) {
        if (reconstructable(p)) lo = std::min<double>(lo, eta[p]), hi = std::max<double>(hi, eta[p]);
      }
    }
    if (lo < hi) {
      for (int i = 0; i <= 10; ++i) eta_bins.push_back(lo + (hi - lo) * i / 10.0);
      eta_bins.back() = std::nextafter(hi, INFINITY);  // the largest eta falls in the last bin
    }
  }
  InitBins(&m.by_eta, eta_bins);
  const std::vector<int64_t> dropped = DroppedTrueEdgesPerGraph(gs);  // by earlier filter stages
  for (int64_t g : graphs) {
    if (g < 0 || g >= gs.num_graphs()) {
      return absl::InvalidArgumentError(absl::StrCat("graph ", g, " outside [0, ", gs.num_graphs(), ")"));
    }
    ++m.graphs;
    m.true_edges += dropped[g];
    m.dropped_true_edges += dropped[g];
    for (int64_t e = gs.EdgeBegin(g); e < gs.EdgeEnd(g); ++e) {
      const bool kept = scores[e] > building.cut, truth = label[e] == 1;
      m.true_edges += truth;
      m.kept_edges += kept;
      m.kept_true_edges += kept && truth;
    }
    const int64_t p0 = gs.particle_offsets.i64()[g], p1 = gs.particle_offsets.i64()[g + 1];
    std::vector<char> matched(p1 - p0, 0), majority_taken(p1 - p0, 0);
    std::vector<std::vector<int64_t>> built = BuildTrackCandidates(gs, g, scores, building);
    for (const std::vector<int64_t>& c : built) {
      ++m.candidates;
      // The candidate's majority particle (noise hits belong to none).
      std::vector<int64_t> ps;
      for (int64_t v : c) ps.push_back(particle[v]);
      std::sort(ps.begin(), ps.end());
      int64_t best = -1, best_count = 0;
      for (size_t i = 0; i < ps.size();) {
        size_t j = i;
        while (j < ps.size() && ps[j] == ps[i]) ++j;
        if (ps[i] >= 0 && static_cast<int64_t>(j - i) > best_count) best = ps[i], best_count = j - i;
        i = j;
      }
      if (best < 0 || 2 * best_count <= static_cast<int64_t>(c.size())) {
        ++m.fakes;
        continue;
      }
      if (best < p0 || best >= p1) continue;  // a particle of another graph: not expected
      if (majority_taken[best - p0]) ++m.duplicates;
      majority_taken[best - p0] = 1;
      if (2 * best_count > num_hits[best]) matched[best - p0] = 1;
    }
    if (candidates != nullptr) candidates->push_back(std::move(built));
    for (int64_t p = p0; p < p1; ++p) {
      if (num_hits[p] < options.particle_min_hits) continue;
      if (const int b = Bin(m.by_pt.edges, pt[p]); b >= 0) {
        ++m.by_pt.particles[b];
        m.by_pt.matched[b] += matched[p - p0];
      }
      if (!reconstructable(p)) continue;
      ++m.reconstructable;
      m.matched += matched[p - p0];
      if (const int b = Bin(m.by_eta.edges, eta[p]); b >= 0) {
        ++m.by_eta.particles[b];
        m.by_eta.matched[b] += matched[p - p0];
      }
    }
  }
  return m;
}

}  // namespace fg::graph
