// Particle-tracking events as graphs (Exa.TrkX): the detector hits of an event are the vertices,
// candidate edges join hits on adjacent barrel layers within geometric cuts, and an edge is true
// when both hits belong to one particle. Shared by the TrackML-like generator (gen/trackml.h) and
// the reader of TrackML event CSVs (io/trackml_csv.h). Thread-safe: no shared state.
//
// The Dataset built here is a graph set (graph_set.h), one graph per event:
//   vertices     an event's hits sorted by (layer, phi); features["node"] float [N, 3]:
//                (r / 1000, phi / pi, z / 1000), r and z in mm, phi in (-pi, pi]
//   edges        original edge k = (inner hit, outer hit) on layers (l, l + 1), both directions in
//                the union graph (entry_edges tells which); graphs->edge_feat float [M, 6]:
//                (dr / 1000, dphi / pi, dz / 1000, deta, phi_slope, r_phi_slope) with dphi wrapped
//                to (-pi, pi], phi_slope = dphi / dr in rad/m and r_phi_slope = phi_slope times the
//                pair's mean r in m
//   edge_labels  int64 [M]: 1 when both hits belong to one particle, else 0 (num_edge_classes 2)
//   node_info    "particle" (int64 row of graphs->particles, -1 = noise) and "layer" (int64 0..9)
//   particles    "particle_id" (int64, the source's id), "pt" (GeV), "eta", "phi" (float, at
//                production), "vz" (float, mm), "num_hits" (int64, hits in the graph)
//   split        events in order: the first train fraction, then valid, then the rest test
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"

namespace fg::graph {

// TrackML's barrel layers (mm): pixel 32, 72, 116, 172; short strips 260, 360, 500, 660; long
// strips 820, 1020; layer index 0..9 from the inside out.
inline constexpr int kBarrelLayers = 10;
inline constexpr double kBarrelRadius[kBarrelLayers] = {32,  72,  116, 172, 260,
                                                        360, 500, 660, 820, 1020};
// Barrel half-lengths in z (mm): pixel 491, strips 1083.
inline constexpr double kBarrelHalfLength[kBarrelLayers] = {491,  491,  491,  491,  1083,
                                                            1083, 1083, 1083, 1083, 1083};

struct TrackingHit {
  double x = 0, y = 0, z = 0;  // mm
  int layer = 0;               // 0 .. kBarrelLayers - 1
  int64_t particle = -1;       // index into the event's particles, -1 = noise
};

struct TrackingParticle {
  int64_t id = 0;  // the source's particle id
  double pt = 0;   // GeV
  double eta = 0, phi = 0;
  double vz = 0;  // mm
};

struct TrackingEvent {
  std::vector<TrackingHit> hits;
  std::vector<TrackingParticle> particles;
};

// Geometric cuts of graph construction, applied to every pair (a on layer l, b on layer l + 1):
// |dphi / dr| <= phi_slope_max (rad/mm), |z0| <= z0_max (z0: the pair's line in (r, z) at r = 0,
// mm) and |eta_b - eta_a| <= deta_max (eta of a hit seen from the origin). The defaults keep every
// segment of particles above ~0.55 GeV from vertices within ~3.5 sigma of the generator's 55 mm
// spread (a pT > 1 GeV particle bends by at most ~0.00038 rad/mm, including scattering); deta
// from the origin reaches ~1.2 between the two innermost layers for such vertices, so the eta
// window binds only when set below that (it is mostly implied by the z0 cut).
struct TrackingCuts {
  double phi_slope_max = 0.0006;
  double z0_max = 200;
  double deta_max = 1.5;
};

struct TrackingGraphOptions {
  TrackingCuts cuts;
  double train_fraction = 0.8;
  double valid_fraction = 0.1;
  std::string name = "trackml";
};

// Builds the dataset described above from events (hits with layer and particle set). Invalid
// input (a layer or particle index out of range) is an InvalidArgument error naming the event and
// hit. Parallel over events; the result does not depend on the thread count.
absl::StatusOr<Dataset> BuildTrackingDataset(const std::vector<TrackingEvent>& events,
                                             const TrackingGraphOptions& options);

// OK when `ds` is a tracking dataset: a graph set with edge labels (one task), node_info
// "particle" and "layer" (int64), particles "pt" (float) and particle offsets; else an error
// naming what is missing.
absl::Status CheckTrackingDataset(const Dataset& ds);

// The layout's feature columns that the detector's symmetries negate: z -> -z (the barrel is
// symmetric about z = 0) negates the hits' z and the edges' dz and deta; phi -> -phi (the mirror
// image, every charge swapped) negates the hits' phi and the edges' dphi, phi_slope and r_phi_slope.
inline constexpr int kNodeZColumn = 2;
inline constexpr int kNodePhiColumn = 1;
inline constexpr int kEdgeZColumns[] = {2, 3};
inline constexpr int kEdgePhiColumns[] = {1, 4, 5};
// Whether `ds` has the layout above: a graph set with node_info "layer", node features [N, 3] and
// edge features [M, 6].
bool HasTrackingLayout(const Dataset& ds);

// Graph construction's quality on a tracking dataset. True segments: pairs of hits of one
// particle on adjacent layers (l, l + 1), counted for particles with pt > pt_min; found: those
// among the candidate edges. Candidates and true candidates count every edge (all pT).
struct ConstructionQuality {
  double pt_min = 0;
  int64_t graphs = 0;
  int64_t true_segments = 0, found_segments = 0;
  int64_t candidates = 0, true_candidates = 0;
  double efficiency() const { return true_segments ? double(found_segments) / true_segments : 0; }
  double purity() const { return candidates ? double(true_candidates) / candidates : 0; }
};

// Measures the quality over the given graphs (all when empty). Fails, naming what is missing,
// when `ds` is not a tracking dataset (graph set with edge labels, node_info "particle" and
// "layer", particles "pt").
absl::StatusOr<ConstructionQuality> MeasureConstruction(const Dataset& ds, double pt_min = 1.0,
                                                        const std::vector<int64_t>& graphs = {});

}  // namespace fg::graph
