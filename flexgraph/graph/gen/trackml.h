// A TrackML-like barrel detector simulation: events of charged particles leaving hits on the ten
// barrel layers of TrackML (tracking.h: pixel 32-172 mm, short strips 260-660 mm, long strips
// 820-1020 mm), turned into graphs by BuildTrackingDataset. The spec (gen/spec.h) is
//   trackml:events=N,particles=M,noise=F,seed=S[,field=value...]
// with every field of TrackmlOptions under the name given there. Deterministic by seed: each
// particle and each event's noise draw from their own counter-based stream (seed, event,
// particle), so the events do not depend on the thread count. Thread-safe: no shared state.
//
// The physics, each step a field:
// - particles per event: Poisson with mean `particles`; charge +1 or -1 with equal odds; pion mass
// - transverse momentum: a power law dN/dpT ~ pT^-pt_slope on [pt_min, pt_max] GeV
// - pseudorapidity uniform in [-eta_max, eta_max], azimuth uniform
// - vertex: Gaussian, sigma vertex_xy (mm) in x and y, vertex_z (mm) in z
// - helices in a uniform solenoid field of `bfield` tesla along z (radius R = pT / (0.3 B)),
//   intersected with each layer in turn; a particle that curls up before a layer, or leaves the
//   longest barrel in z, leaves no further hits; no energy loss
// - multiple scattering at every layer crossed: Highland's angle for `material` radiation lengths
//   (scaled by the path length through the cylinder, 1 / sin(theta)), applied to both angles
// - inefficiency: each hit is lost with probability `ineff` (the particle goes on)
// - position smearing, Gaussian, `smear` times the layer type's resolution (r-phi, z in mm):
//   pixel (0.015, 0.015), short strips (0.023, 0.35), long strips (0.035, 3.1)
// - noise: round(noise x real hits) hits per event, uniform in phi and z over the layers'
//   surfaces (a layer chosen in proportion to its area)
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/tracking.h"

namespace fg::graph {

struct TrackmlOptions {
  int64_t events = 100;      // "events"
  double particles = 500;    // "particles": mean per event
  double noise = 0.1;        // "noise": noise hits as a fraction of real hits
  uint64_t seed = 1;         // "seed"
  double pt_min = 0.5;       // "pt_min", GeV
  double pt_max = 100;       // "pt_max", GeV
  double pt_slope = 3;       // "pt_slope": power-law exponent (> 1)
  double eta_max = 1.0;      // "eta_max"
  double vertex_xy = 0.015;  // "vertex_xy", mm
  double vertex_z = 55;      // "vertex_z", mm
  double bfield = 2;         // "bfield", tesla
  double material = 0.02;    // "material": radiation lengths per layer at normal incidence
  double ineff = 0.01;       // "ineff": probability that a hit is lost
  double smear = 1;          // "smear": factor on the layer resolutions
  TrackingCuts cuts;         // "phi_slope" (rad/mm), "z0_max" (mm), "deta_max"
  double train = 0.8;        // "train": fraction of events
  double valid = 0.1;        // "valid"
};

// Checks the options (ranges), naming the field in errors.
absl::Status ValidateTrackmlOptions(const TrackmlOptions& o);

// Simulates event `index` (0-based) of the options' run.
TrackingEvent SimulateTrackmlEvent(const TrackmlOptions& o, int64_t index);

// Simulates o.events events and builds the dataset (tracking.h), named "trackml".
absl::StatusOr<Dataset> GenerateTrackml(const TrackmlOptions& o);

}  // namespace fg::graph
