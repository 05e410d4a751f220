// Track reconstruction from scored candidate edges of a tracking dataset (tracking.h), and the
// standard tracking metrics, as the Exa.TrkX pipeline measures them. Thread-safe: functions of
// their arguments.
//
// Building (per graph): an edge is kept when its score > cut. A hit may keep several edges on one
// side (a fork); each hit keeps only its best-scoring kept edge outward (to the next layer) and
// its best inward, and an edge survives when it is the best of both its hits. The connected
// components of the surviving edges with at least `min_hits` hits are the track candidates.
// Extension (extend_cut < cut): a second pass over the edges with score > extend_cut whose inner
// hit has no surviving outward edge and whose outer hit no surviving inward one joins such free
// ends by the same mutual-best rule, so that one true edge scored below the cut does not split a
// track in two. It joins only where one of the two pieces (as the first pass left them) holds
// min_hits hits already: two pieces too short to be candidates do not become one (a fake).
//
// Metrics (over the chosen graphs):
//   edge efficiency / purity   kept true edges over true edges / over kept edges (all pT); the
//                              true edges include those an earlier filter stage dropped
//                              (edge_filter.h: node_info kHitDroppedTrueEdges), counted as lost
//   reconstructable particle   pT > pt_min and at least particle_min_hits hits in its graph
//   matched particle           one candidate holds more than half of the particle's hits and more
//                              than half of that candidate's hits are the particle's
//   track efficiency           matched reconstructable particles / reconstructable particles
//   fake rate                  candidates in which no particle holds more than half of the hits
//                              (noise hits belong to none) / candidates
//   duplicate rate             candidates whose majority particle is also the majority of an
//                              earlier candidate / candidates
//   efficiency vs pT and eta   per bin of the particle's pT (particles with enough hits, any pT)
//                              and of its eta (reconstructable particles): particles and matched
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"

namespace fg::graph {

struct TrackBuildingOptions {
  double cut = 0.5;
  double extend_cut = 0.1;  // >= cut: no extension
  int64_t min_hits = 3;     // of a candidate
};

// The candidates of graph `graph`: each a list of union vertex ids (hits), innermost first.
// `scores` has one entry per original edge of the dataset (NaN: not scored = not kept).
std::vector<std::vector<int64_t>> BuildTrackCandidates(const GraphSet& gs, int64_t graph,
                                                       const std::vector<float>& scores,
                                                       const TrackBuildingOptions& options);

struct TrackMetricsOptions {
  double pt_min = 1.0;            // GeV
  int64_t particle_min_hits = 5;  // of a reconstructable particle
  // Bin edges (ascending); empty: defaults (pT 0.5 to 100 GeV, eta 10 bins over the particles').
  std::vector<double> pt_bins, eta_bins;
};

struct EfficiencyBins {
  std::vector<double> edges;  // bins [edges[i], edges[i + 1])
  std::vector<int64_t> particles, matched;
};

struct TrackMetrics {
  int64_t graphs = 0;
  int64_t true_edges = 0, kept_edges = 0, kept_true_edges = 0;
  int64_t dropped_true_edges = 0;  // of true_edges: dropped by filter stages before scoring
  int64_t candidates = 0, fakes = 0, duplicates = 0;
  int64_t reconstructable = 0, matched = 0;
  EfficiencyBins by_pt, by_eta;
  double edge_efficiency() const;
  double edge_purity() const;
  double track_efficiency() const;
  double fake_rate() const;
  double duplicate_rate() const;
};

// Builds the candidates of every graph in `graphs` and measures them; with `candidates`, also
// returns them (one list per graph of `graphs`, as BuildTrackCandidates gives them). Errors: `ds`
// is not a tracking dataset with particles' "eta" and "num_hits" (naming what is missing), a graph
// id out of range, or `scores` not one per edge.
absl::StatusOr<TrackMetrics> MeasureTracks(
    const Dataset& ds, const std::vector<int64_t>& graphs, const std::vector<float>& scores,
    const TrackBuildingOptions& building, const TrackMetricsOptions& metrics,
    std::vector<std::vector<std::vector<int64_t>>>* candidates = nullptr);

}  // namespace fg::graph
