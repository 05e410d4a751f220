#include "flexgraph/graph/gen/trackml.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/status.h"

namespace fg::graph {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kPionMass = 0.13957;  // GeV
// R[mm] = pT[GeV] / (kCurvature * B[T]).
constexpr double kCurvature = 0.299792458e-3;
// Streams under the seed: per event (count, noise) and per particle.
constexpr uint64_t kEventStream = 1, kParticleStream = 2, kNoiseStream = 3;

// Resolutions (r-phi, z) in mm by layer: pixel, short strips, long strips (pitch / sqrt(12)).
void Resolution(int layer, double* rphi, double* z) {
  if (layer < 4) {
    *rphi = 0.015;
    *z = 0.015;
  } else if (layer < 8) {
    *rphi = 0.023;
    *z = 0.35;
  } else {
    *rphi = 0.035;
    *z = 3.1;
  }
}

double Normal(RandomStream& rng) {
  // Box-Muller in double precision from two 32-bit uniforms (never 0 for the logarithm).
  const double u1 = (rng.NextU32() + 0.5) / 4294967296.0;
  const double u2 = rng.NextU32() / 4294967296.0;
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * kPi * u2);
}

double Uniform(RandomStream& rng) { return (rng.NextU32() + 0.5) / 4294967296.0; }

int64_t Poisson(RandomStream& rng, double mean) {
  if (mean <= 0) return 0;
  if (mean > 50) return std::max<int64_t>(0, std::llround(mean + std::sqrt(mean) * Normal(rng)));
  const double limit = std::exp(-mean);
  int64_t k = 0;
  for (double prod = Uniform(rng); prod > limit; prod *= Uniform(rng)) ++k;
  return k;
}

// Moves a particle at (x, y) with direction phi along its helix to radius r: returns the turning
// angle psi > 0 of the first crossing, or a negative value when the helix never reaches r.
double TurnToRadius(double x, double y, double phi, int q, double radius_of_curvature, double r) {
  const double rc = radius_of_curvature;
  const double cx = x + q * rc * std::sin(phi), cy = y - q * rc * std::cos(phi);
  const double a = std::hypot(cx, cy);
  if (a < 1e-12) return -1;
  const double k = (r * r - a * a - rc * rc) / (2 * q * rc * a);
  if (std::abs(k) > 1) return -1;
  const double gamma = std::atan2(-cx, cy), ac = std::acos(k);
  double best = std::numeric_limits<double>::infinity();
  for (double target : {gamma + ac, gamma - ac}) {
    double psi = q * (phi - target);
    psi -= 2 * kPi * std::floor(psi / (2 * kPi));
    if (psi < 1e-12) psi += 2 * kPi;
    best = std::min(best, psi);
  }
  return best;
}

void SimulateParticle(const TrackmlOptions& o, int64_t event, int64_t index, TrackingEvent* out) {
  RandomStream rng(o.seed, MixKey(event, index, kParticleStream));
  const int q = (rng.NextU32() & 1) ? 1 : -1;
  const double e = 1 - o.pt_slope;
  const double lo = std::pow(o.pt_min, e), hi = std::pow(o.pt_max, e);
  const double pt0 = std::pow(lo + Uniform(rng) * (hi - lo), 1 / e);
  const double eta0 = (2 * Uniform(rng) - 1) * o.eta_max;
  const double phi0 = (2 * Uniform(rng) - 1) * kPi;
  double x = o.vertex_xy * Normal(rng), y = o.vertex_xy * Normal(rng), z = o.vertex_z * Normal(rng);
  const int64_t particle = static_cast<int64_t>(out->particles.size());
  out->particles.push_back({index + 1, pt0, eta0, phi0, z});
  double theta = 2 * std::atan(std::exp(-eta0)), phi = phi0;
  const double p = pt0 * std::cosh(eta0);
  const double beta = p / std::sqrt(p * p + kPionMass * kPionMass);
  for (int l = 0; l < kBarrelLayers; ++l) {
    const double r = kBarrelRadius[l];
    const double rc = p * std::sin(theta) / (kCurvature * o.bfield);
    const double psi = TurnToRadius(x, y, phi, q, rc, r);
    if (psi < 0) break;  // curls up inside this layer
    const double cx = x + q * rc * std::sin(phi), cy = y - q * rc * std::cos(phi);
    phi -= q * psi;
    x = cx - q * rc * std::sin(phi);
    y = cy + q * rc * std::cos(phi);
    z += rc * psi * std::cos(theta) / std::sin(theta);
    if (std::abs(z) > kBarrelHalfLength[kBarrelLayers - 1]) break;  // left the barrel
    if (std::abs(z) > kBarrelHalfLength[l]) continue;               // beyond this layer's end
    // The hit (unless lost), smeared in r-phi and z on the cylinder.
    if (Uniform(rng) >= o.ineff) {
      double s_rphi, s_z;
      Resolution(l, &s_rphi, &s_z);
      const double hphi = std::atan2(y, x) + o.smear * s_rphi * Normal(rng) / r;
      const double hz = z + o.smear * s_z * Normal(rng);
      out->hits.push_back({r * std::cos(hphi), r * std::sin(hphi), hz, l, particle});
    }
    // Multiple scattering in the layer (Highland).
    if (o.material > 0) {
      const double t = o.material / std::sin(theta);
      const double theta0 = 0.0136 / (beta * p) * std::sqrt(t) * (1 + 0.038 * std::log(t));
      theta = std::clamp(theta + theta0 * Normal(rng), 0.01, kPi - 0.01);
      phi += theta0 * Normal(rng) / std::sin(theta);
    }
  }
}

}  // namespace

absl::Status ValidateTrackmlOptions(const TrackmlOptions& o) {
  auto bad = [](const std::string& field, const std::string& need) {
    return absl::InvalidArgumentError(absl::StrCat("trackml: '", field, "' must be ", need));
  };
  if (o.events < 1 || o.events > (int64_t{1} << 24)) return bad("events", "in [1, 2^24]");
  if (!(o.particles >= 0 && o.particles <= 1e6)) return bad("particles", "in [0, 1e6]");
  if (!(o.noise >= 0 && o.noise <= 100)) return bad("noise", "in [0, 100]");
  if (!(o.pt_min > 0 && o.pt_max > o.pt_min && o.pt_max <= 1e5)) {
    return bad("pt_min", "positive and below pt_max (at most 1e5 GeV)");
  }
  if (!(o.pt_slope > 1 && o.pt_slope <= 20)) return bad("pt_slope", "in (1, 20]");
  if (!(o.eta_max >= 0 && o.eta_max <= 5)) return bad("eta_max", "in [0, 5]");
  if (!(o.vertex_xy >= 0 && o.vertex_xy <= 10)) return bad("vertex_xy", "in [0, 10] mm");
  if (!(o.vertex_z >= 0 && o.vertex_z <= 500)) return bad("vertex_z", "in [0, 500] mm");
  if (!(o.bfield > 0 && o.bfield <= 10)) return bad("bfield", "in (0, 10] T");
  if (!(o.material >= 0 && o.material <= 1)) return bad("material", "in [0, 1]");
  if (!(o.ineff >= 0 && o.ineff <= 1)) return bad("ineff", "in [0, 1]");
  if (!(o.smear >= 0 && o.smear <= 100)) return bad("smear", "in [0, 100]");
  if (!(o.cuts.phi_slope_max > 0 && o.cuts.phi_slope_max <= 1))
    return bad("phi_slope", "in (0, 1] rad/mm");
  if (!(o.cuts.z0_max > 0)) return bad("z0_max", "positive");
  if (!(o.cuts.deta_max > 0)) return bad("deta_max", "positive");
  if (!(o.train >= 0 && o.valid >= 0 && o.train + o.valid <= 1)) {
    return bad("train", "and 'valid' non-negative with a sum of at most 1");
  }
  return absl::OkStatus();
}

TrackingEvent SimulateTrackmlEvent(const TrackmlOptions& o, int64_t index) {
  TrackingEvent ev;
  RandomStream erng(o.seed, MixKey(index, ~uint64_t{0}, kEventStream));
  const int64_t count = Poisson(erng, o.particles);
  ev.particles.reserve(count);
  for (int64_t i = 0; i < count; ++i) SimulateParticle(o, index, i, &ev);
  // Noise on the layers' surfaces, a layer chosen by area (r x length).
  RandomStream nrng(o.seed, MixKey(index, ~uint64_t{0}, kNoiseStream));
  const int64_t noise = std::llround(o.noise * static_cast<double>(ev.hits.size()));
  double area[kBarrelLayers], total = 0;
  for (int l = 0; l < kBarrelLayers; ++l)
    total += area[l] = kBarrelRadius[l] * kBarrelHalfLength[l];
  for (int64_t i = 0; i < noise; ++i) {
    double u = Uniform(nrng) * total;
    int l = 0;
    while (l + 1 < kBarrelLayers && u >= area[l]) u -= area[l++];
    const double phi = (2 * Uniform(nrng) - 1) * kPi;
    const double z = (2 * Uniform(nrng) - 1) * kBarrelHalfLength[l];
    ev.hits.push_back(
        {kBarrelRadius[l] * std::cos(phi), kBarrelRadius[l] * std::sin(phi), z, l, -1});
  }
  return ev;
}

absl::StatusOr<Dataset> GenerateTrackml(const TrackmlOptions& o) {
  FG_RETURN_IF_ERROR(ValidateTrackmlOptions(o));
  std::vector<TrackingEvent> events(o.events);
  ParallelForDynamic(0, o.events, 1, [&](int64_t i) { events[i] = SimulateTrackmlEvent(o, i); });
  TrackingGraphOptions go;
  go.cuts = o.cuts;
  go.train_fraction = o.train;
  go.valid_fraction = o.valid;
  go.name = "trackml";
  return BuildTrackingDataset(events, go);
}

}  // namespace fg::graph
