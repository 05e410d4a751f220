#include "flexgraph/graph/tracking.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"

namespace fg::graph {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int kEdgeFeatures = 6;

double WrapPhi(double d) {
  while (d > kPi) d -= 2 * kPi;
  while (d <= -kPi) d += 2 * kPi;
  return d;
}

// One event's piece of the dataset, in local ids.
struct EventGraph {
  absl::Status status;
  std::vector<float> node_feat;          // [n, 3]
  std::vector<int64_t> layer, particle;  // [n], particle local (-1 noise)
  std::vector<int64_t> edges;            // [m, 2] local
  std::vector<float> edge_feat;          // [m, 6]
  std::vector<int64_t> labels;           // [m]
  std::vector<int64_t> num_hits;         // per particle
};

struct Hit {
  double r, phi, z, eta;
  int layer;
  int64_t particle;
};

EventGraph BuildEvent(const TrackingEvent& ev, int64_t index, const TrackingCuts& cuts) {
  EventGraph out;
  const int64_t n = static_cast<int64_t>(ev.hits.size());
  const int64_t p = static_cast<int64_t>(ev.particles.size());
  std::vector<Hit> hits(n);
  for (int64_t i = 0; i < n; ++i) {
    const TrackingHit& h = ev.hits[i];
    if (h.layer < 0 || h.layer >= kBarrelLayers || h.particle < -1 || h.particle >= p ||
        !std::isfinite(h.x) || !std::isfinite(h.y) || !std::isfinite(h.z)) {
      out.status = absl::InvalidArgumentError(
          absl::StrCat("event ", index, ", hit ", i, ": layer ", h.layer, " or particle ",
                       h.particle, " out of range (", kBarrelLayers, " layers, ", p,
                       " particles) or a non-finite position"));
      return out;
    }
    const double r = std::hypot(h.x, h.y);
    hits[i] = {r,         std::atan2(h.y, h.x), h.z, std::asinh(h.z / std::max(r, 1e-9)), h.layer,
               h.particle};
  }
  std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) {
    if (a.layer != b.layer) return a.layer < b.layer;
    if (a.phi != b.phi) return a.phi < b.phi;
    if (a.z != b.z) return a.z < b.z;
    return a.particle < b.particle;
  });
  std::vector<int64_t> first(kBarrelLayers + 1, 0);
  for (const Hit& h : hits) ++first[h.layer + 1];
  for (int l = 0; l < kBarrelLayers; ++l) first[l + 1] += first[l];
  out.node_feat.resize(3 * n);
  out.layer.resize(n);
  out.particle.resize(n);
  out.num_hits.assign(p, 0);
  for (int64_t i = 0; i < n; ++i) {
    out.node_feat[3 * i] = static_cast<float>(hits[i].r / 1000);
    out.node_feat[3 * i + 1] = static_cast<float>(hits[i].phi / kPi);
    out.node_feat[3 * i + 2] = static_cast<float>(hits[i].z / 1000);
    out.layer[i] = hits[i].layer;
    out.particle[i] = hits[i].particle;
    if (hits[i].particle >= 0) ++out.num_hits[hits[i].particle];
  }
  std::vector<double> phis(n);
  for (int64_t i = 0; i < n; ++i) phis[i] = hits[i].phi;
  std::vector<int64_t> cand;
  for (int l = 0; l + 1 < kBarrelLayers; ++l) {
    const int64_t a0 = first[l], a1 = first[l + 1], b0 = first[l + 1], b1 = first[l + 2];
    if (a0 == a1 || b0 == b1) continue;
    double r_in = hits[a0].r, r_out = hits[b0].r;
    for (int64_t a = a0; a < a1; ++a) r_in = std::min(r_in, hits[a].r);
    for (int64_t b = b0; b < b1; ++b) r_out = std::max(r_out, hits[b].r);
    const double w = cuts.phi_slope_max * std::max(r_out - r_in, 0.0);
    auto add_range = [&](double lo, double hi) {
      auto it = std::lower_bound(phis.begin() + b0, phis.begin() + b1, lo);
      for (; it != phis.begin() + b1 && *it <= hi; ++it) cand.push_back(it - phis.begin());
    };
    for (int64_t a = a0; a < a1; ++a) {
      const Hit& ha = hits[a];
      cand.clear();
      if (w >= kPi) {
        add_range(-kPi - 1, kPi + 1);
      } else {
        const double lo = ha.phi - w, hi = ha.phi + w;
        add_range(std::max(lo, -kPi - 1), std::min(hi, kPi + 1));
        if (lo < -kPi) add_range(lo + 2 * kPi, kPi + 1);
        if (hi > kPi) add_range(-kPi - 1, hi - 2 * kPi);
        std::sort(cand.begin(), cand.end());
        cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
      }
      for (int64_t b : cand) {
        const Hit& hb = hits[b];
        const double dr = hb.r - ha.r;
        if (dr <= 0) continue;
        const double dphi = WrapPhi(hb.phi - ha.phi);
        const double slope = dphi / dr;
        if (std::abs(slope) > cuts.phi_slope_max) continue;
        const double z0 = ha.z - ha.r * (hb.z - ha.z) / dr;
        if (std::abs(z0) > cuts.z0_max) continue;
        const double deta = hb.eta - ha.eta;
        if (std::abs(deta) > cuts.deta_max) continue;
        out.edges.push_back(a);
        out.edges.push_back(b);
        const double r_mid = 0.5 * (ha.r + hb.r) / 1000;
        const float f[kEdgeFeatures] = {static_cast<float>(dr / 1000),
                                        static_cast<float>(dphi / kPi),
                                        static_cast<float>((hb.z - ha.z) / 1000),
                                        static_cast<float>(deta),
                                        static_cast<float>(slope * 1000),
                                        static_cast<float>(slope * 1000 * r_mid)};
        out.edge_feat.insert(out.edge_feat.end(), f, f + kEdgeFeatures);
        out.labels.push_back(ha.particle >= 0 && ha.particle == hb.particle ? 1 : 0);
      }
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<Dataset> BuildTrackingDataset(const std::vector<TrackingEvent>& events,
                                             const TrackingGraphOptions& options) {
  const int64_t count = static_cast<int64_t>(events.size());
  std::vector<EventGraph> parts(count);
  ParallelForDynamic(0, count, 1,
                     [&](int64_t g) { parts[g] = BuildEvent(events[g], g, options.cuts); });
  std::vector<int64_t> node_off(count + 1, 0), edge_off(count + 1, 0), part_off(count + 1, 0);
  for (int64_t g = 0; g < count; ++g) {
    FG_RETURN_IF_ERROR(parts[g].status);
    node_off[g + 1] = node_off[g] + static_cast<int64_t>(parts[g].layer.size());
    edge_off[g + 1] = edge_off[g] + static_cast<int64_t>(parts[g].labels.size());
    part_off[g + 1] = part_off[g] + static_cast<int64_t>(events[g].particles.size());
  }
  const int64_t n = node_off[count], m = edge_off[count], p = part_off[count];
  Dataset ds;
  ds.name = options.name;
  GraphSet& gs = ds.graphs.emplace();
  Tensor feat = Tensor::Empty({n, 3});
  Tensor layer = Tensor::Empty({n}, DType::kInt64), particle = Tensor::Empty({n}, DType::kInt64);
  Tensor edges = Tensor::Empty({m, 2}, DType::kInt64), efeat = Tensor::Empty({m, kEdgeFeatures});
  Tensor labels = Tensor::Empty({m}, DType::kInt64);
  Tensor pid = Tensor::Empty({p}, DType::kInt64), nhits = Tensor::Empty({p}, DType::kInt64);
  Tensor pt = Tensor::Empty({p}), eta = Tensor::Empty({p}), phi = Tensor::Empty({p}),
         vz = Tensor::Empty({p});
  ParallelForDynamic(0, count, 1, [&](int64_t g) {
    const EventGraph& e = parts[g];
    const int64_t nb = node_off[g], eb = edge_off[g], pb = part_off[g];
    std::copy(e.node_feat.begin(), e.node_feat.end(), feat.f32() + 3 * nb);
    std::copy(e.layer.begin(), e.layer.end(), layer.i64() + nb);
    for (size_t i = 0; i < e.particle.size(); ++i) {
      particle.i64()[nb + i] = e.particle[i] < 0 ? -1 : pb + e.particle[i];
    }
    for (size_t k = 0; k < e.edges.size(); ++k) edges.i64()[2 * eb + k] = nb + e.edges[k];
    std::copy(e.edge_feat.begin(), e.edge_feat.end(), efeat.f32() + kEdgeFeatures * eb);
    std::copy(e.labels.begin(), e.labels.end(), labels.i64() + eb);
    const std::vector<TrackingParticle>& ps = events[g].particles;
    for (size_t i = 0; i < ps.size(); ++i) {
      pid.i64()[pb + i] = ps[i].id;
      nhits.i64()[pb + i] = e.num_hits[i];
      pt.f32()[pb + i] = static_cast<float>(ps[i].pt);
      eta.f32()[pb + i] = static_cast<float>(ps[i].eta);
      phi.f32()[pb + i] = static_cast<float>(ps[i].phi);
      vz.f32()[pb + i] = static_cast<float>(ps[i].vz);
    }
  });
  parts.clear();
  gs.node_offsets = Tensor::FromVector(node_off);
  gs.edge_offsets = Tensor::FromVector(edge_off);
  gs.particle_offsets = Tensor::FromVector(part_off);
  gs.edges = edges;
  gs.edge_feat = efeat;
  gs.edge_labels = labels;
  gs.num_edge_classes = 2;
  gs.node_info[kHitParticle] = particle;
  gs.node_info[kHitLayer] = layer;
  gs.particles[kParticleId] = pid;
  gs.particles[kParticlePt] = pt;
  gs.particles[kParticleEta] = eta;
  gs.particles["phi"] = phi;
  gs.particles["vz"] = vz;
  gs.particles[kParticleHits] = nhits;
  ds.features["node"] = feat;
  // Whole events: the first train fraction, then valid, then test.
  const int64_t n_train =
      std::clamp<int64_t>(std::llround(options.train_fraction * count), 0, count);
  const int64_t n_valid =
      std::clamp<int64_t>(std::llround(options.valid_fraction * count), 0, count - n_train);
  std::vector<int64_t> ids(count);
  std::iota(ids.begin(), ids.end(), 0);
  gs.train = Tensor::FromVector(std::vector<int64_t>(ids.begin(), ids.begin() + n_train));
  gs.valid = Tensor::FromVector(
      std::vector<int64_t>(ids.begin() + n_train, ids.begin() + n_train + n_valid));
  gs.test = Tensor::FromVector(std::vector<int64_t>(ids.begin() + n_train + n_valid, ids.end()));
  ds.split_name = "events";
  LoadOptions build;  // both directions, no loops (none arise), no duplicates (none arise)
  FG_RETURN_IF_ERROR(BuildGraphSetGraph(&ds, build));
  return ds;
}

bool HasTrackingLayout(const Dataset& ds) {
  if (!ds.graphs.has_value() || !ds.graphs->node_info.contains(kHitLayer)) return false;
  const auto node = ds.features.find("node");
  const Tensor& edge = ds.graphs->edge_feat;
  return node != ds.features.end() && node->second.rank() == 2 && node->second.dim(1) == 3 && edge.defined() &&
         edge.rank() == 2 && edge.dim(1) == 6;
}

absl::Status CheckTrackingDataset(const Dataset& ds) {
  if (!ds.graphs)
    return absl::InvalidArgumentError(absl::StrCat(ds.name, ": not a dataset of graphs"));
  const GraphSet& gs = *ds.graphs;
  auto hp = gs.node_info.find(kHitParticle);
  auto hl = gs.node_info.find(kHitLayer);
  auto ppt = gs.particles.find(kParticlePt);
  if (hp == gs.node_info.end() || hl == gs.node_info.end() || ppt == gs.particles.end() ||
      !gs.edge_labels.defined() || hp->second.dtype() != DType::kInt64 ||
      hl->second.dtype() != DType::kInt64 || ppt->second.dtype() != DType::kFloat32 ||
      gs.edge_labels.rank() != 1 || !gs.particle_offsets.defined()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ds.name, ": not a tracking dataset (needs edge labels, node_info '",
                     kHitParticle, "' and '", kHitLayer, "', particles '", kParticlePt, "')"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ConstructionQuality> MeasureConstruction(const Dataset& ds, double pt_min,
                                                        const std::vector<int64_t>& graphs) {
  FG_RETURN_IF_ERROR(CheckTrackingDataset(ds));
  const GraphSet& gs = *ds.graphs;
  auto hp = gs.node_info.find(kHitParticle);
  auto hl = gs.node_info.find(kHitLayer);
  auto ppt = gs.particles.find(kParticlePt);
  std::vector<int64_t> which = graphs;
  if (which.empty()) {
    which.resize(gs.num_graphs());
    std::iota(which.begin(), which.end(), 0);
  }
  const int64_t* particle = hp->second.i64();
  const int64_t* layer = hl->second.i64();
  const float* pt = ppt->second.f32();
  const int64_t* label = gs.edge_labels.i64();
  ConstructionQuality q;
  q.pt_min = pt_min;
  q.graphs = static_cast<int64_t>(which.size());
  std::vector<int64_t> per_layer;
  for (int64_t g : which) {
    if (g < 0 || g >= gs.num_graphs()) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph ", g, " outside [0, ", gs.num_graphs(), ")"));
    }
    const int64_t p0 = gs.particle_offsets.i64()[g], p1 = gs.particle_offsets.i64()[g + 1];
    // Hits per (particle, layer) -> segments sum over l of c[l] * c[l + 1].
    per_layer.assign((p1 - p0) * kBarrelLayers, 0);
    for (int64_t v = gs.NodeBegin(g); v < gs.NodeEnd(g); ++v) {
      if (particle[v] >= p0 && particle[v] < p1 && layer[v] >= 0 && layer[v] < kBarrelLayers) {
        ++per_layer[(particle[v] - p0) * kBarrelLayers + layer[v]];
      }
    }
    for (int64_t i = 0; i < p1 - p0; ++i) {
      if (!(pt[p0 + i] > pt_min)) continue;
      for (int l = 0; l + 1 < kBarrelLayers; ++l) {
        q.true_segments += per_layer[i * kBarrelLayers + l] * per_layer[i * kBarrelLayers + l + 1];
      }
    }
    for (int64_t k = gs.EdgeBegin(g); k < gs.EdgeEnd(g); ++k) {
      ++q.candidates;
      if (label[k] != 1) continue;
      ++q.true_candidates;
      const int64_t a = gs.edges.i64()[2 * k], b = gs.edges.i64()[2 * k + 1];
      if (particle[a] >= 0 && particle[a] < ppt->second.numel() && particle[a] == particle[b] &&
          layer[b] == layer[a] + 1 && pt[particle[a]] > pt_min) {
        ++q.found_segments;
      }
    }
  }
  return q;
}

}  // namespace fg::graph
