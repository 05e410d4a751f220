// Graph counts, degree distributions and model shapes of the performance model (runtime/plan/workload.h).
#include "runtime/plan/workload.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"

namespace fg::plan {

int64_t DegreeHistogram::Vertices() const {
  int64_t n = 0;
  for (const auto& [d, c] : bins) n += c;
  return n;
}

int64_t DegreeHistogram::Entries() const {
  int64_t e = 0;
  for (const auto& [d, c] : bins) e += d * c;
  return e;
}

double DegreeHistogram::ExpectedTouched(double q) const {
  if (q >= 1.0) {
    double n = 0;
    for (const auto& [d, c] : bins) n += d > 0 ? static_cast<double>(c) : 0.0;
    return n;
  }
  const double log_miss = std::log1p(-q);
  double sum = 0;
  for (const auto& [d, c] : bins) sum += static_cast<double>(c) * -std::expm1(static_cast<double>(d) * log_miss);
  return sum;
}

DegreeHistogram HistogramOf(const std::vector<int64_t>& degrees) {
  std::map<int64_t, int64_t> count;
  for (int64_t d : degrees) ++count[d];
  DegreeHistogram h;
  h.bins.assign(count.begin(), count.end());
  return h;
}

DegreeHistogram PoissonDegrees(int64_t n, double mean) {
  // Expected vertices per degree, rounded; the remainder of the rounding goes to the mode.
  DegreeHistogram h;
  int64_t assigned = 0, mode = 0, mode_count = -1;
  const int64_t top = static_cast<int64_t>(mean + 12 * std::sqrt(mean + 1) + 12);
  for (int64_t d = 0; d <= top; ++d) {
    const double p = std::exp(d * std::log(std::max(mean, 1e-300)) - mean - std::lgamma(d + 1.0));
    const int64_t c = std::llround(p * static_cast<double>(n));
    if (c <= 0) continue;
    h.bins.push_back({d, c});
    assigned += c;
    if (c > mode_count) mode = static_cast<int64_t>(h.bins.size()) - 1, mode_count = c;
  }
  if (h.bins.empty()) h.bins.push_back({static_cast<int64_t>(std::llround(mean)), 0}), mode = 0;
  h.bins[mode].second += n - assigned;
  return h;
}

DegreeHistogram PowerLawDegrees(int64_t n, int64_t entries, double alpha) {
  constexpr int kBuckets = 4096;
  const int buckets = static_cast<int>(std::min<int64_t>(kBuckets, std::max<int64_t>(n, 1)));
  // Quantile k of a Pareto law with minimum 1: (1 - u)^(-1 / (alpha - 1)), u the bucket's middle.
  std::vector<double> raw(buckets);
  std::vector<int64_t> size(buckets);
  double total = 0;
  for (int k = 0; k < buckets; ++k) {
    size[k] = n * (k + 1) / buckets - n * k / buckets;
    const double u = (k + 0.5) / buckets;
    raw[k] = std::pow(1.0 - u, -1.0 / (alpha - 1.0));
    total += raw[k] * static_cast<double>(size[k]);
  }
  const double cap = static_cast<double>(std::max<int64_t>(n - 1, 0));
  // Scale to the requested entries; capped buckets give their excess to the others (a few rounds).
  double scale = static_cast<double>(entries) / total;
  for (int round = 0; round < 8; ++round) {
    double capped = 0, free = 0;
    for (int k = 0; k < buckets; ++k) {
      if (raw[k] * scale >= cap) capped += cap * static_cast<double>(size[k]);
      else free += raw[k] * static_cast<double>(size[k]);
    }
    if (free <= 0) break;
    scale = (static_cast<double>(entries) - capped) / free;
  }
  std::map<int64_t, int64_t> count;
  for (int k = 0; k < buckets; ++k) {
    const int64_t d = static_cast<int64_t>(std::llround(std::min(raw[k] * scale, cap)));
    count[d] += size[k];
  }
  DegreeHistogram h;
  h.bins.assign(count.begin(), count.end());
  return h;
}

GraphCounts CountsOf(const Csr& g) {
  GraphCounts c;
  c.vertices = g.num_rows;
  std::vector<int64_t> in(g.num_rows, 0), out(g.num_cols, 0);
  for (int64_t v = 0; v < g.num_rows; ++v) {
    for (int64_t e = g.row_ptr()[v]; e < g.row_ptr()[v + 1]; ++e) {
      const int64_t u = g.col()[e];
      if (u == v) continue;
      ++in[v];
      ++out[u];
      ++c.entries;
    }
  }
  c.in_degrees = HistogramOf(in);
  c.out_degrees = HistogramOf(out);
  return c;
}

absl::StatusOr<ModelKind> ParseModelKind(const std::string& name) {
  if (name == "gcn") return ModelKind::kGcn;
  if (name == "sage") return ModelKind::kSage;
  if (name == "gin") return ModelKind::kGin;
  if (name == "sgc") return ModelKind::kSgc;
  return absl::InvalidArgumentError(absl::StrCat("--model ", name, ": the model covers gcn, sage, gin and sgc"));
}

const char* ModelName(ModelKind kind) {
  switch (kind) {
    case ModelKind::kGcn: return "gcn";
    case ModelKind::kSage: return "sage";
    case ModelKind::kGin: return "gin";
    case ModelKind::kSgc: return "sgc";
  }
  return "?";
}

absl::Status Validate(const ModelShape& m) {
  auto positive = [](const char* name, int64_t v) {
    return v > 0 ? absl::OkStatus()
                 : absl::InvalidArgumentError(absl::StrCat(name, " must be positive, got ", v));
  };
  if (auto s = positive("features", m.features); !s.ok()) return s;
  if (auto s = positive("hidden", m.hidden); !s.ok()) return s;
  if (auto s = positive("classes", m.classes); !s.ok()) return s;
  return positive("layers", m.layers);
}

std::vector<LayerDims> Layers(const ModelShape& m) {
  std::vector<LayerDims> out;
  for (int l = 0; l < m.layers; ++l) {
    const bool last = l + 1 == m.layers;
    LayerDims d;
    if (m.kind == ModelKind::kSgc) {
      d.in = m.features;
      d.out = last ? m.classes : m.features;
      d.message = m.features;
      d.aggregates_self = true;
      d.update_flops_per_row = last ? 2.0 * d.in * d.out : 0.0;
      d.activation_width = last ? d.in + d.out : 0;
      d.parameters = last ? d.in * d.out + d.out : 0;
      out.push_back(d);
      continue;
    }
    d.in = l == 0 ? m.features : m.hidden;
    d.out = last ? m.classes : m.hidden;
    d.activation_width = d.in + d.out + (m.kind == ModelKind::kGin ? m.hidden : 0);  // GIN: its MLP's middle
    switch (m.kind) {
      case ModelKind::kGcn:
        d.message = std::min(d.in, d.out);
        d.message_trained = l > 0 || d.out < d.in;
        d.aggregates_self = true;
        d.update_flops_per_row = 2.0 * d.in * d.out;
        d.parameters = d.in * d.out + d.out;
        break;
      case ModelKind::kSage:
        d.message = std::min(d.in, d.out);
        d.message_trained = l > 0 || d.out < d.in;
        d.update_flops_per_row = 4.0 * d.in * d.out;
        d.parameters = 2 * d.in * d.out + d.out;
        break;
      case ModelKind::kGin:
        d.message = d.in;
        d.message_trained = l > 0;
        d.update_flops_per_row = 2.0 * (d.in * m.hidden + m.hidden * d.out);
        d.parameters = d.in * m.hidden + m.hidden + m.hidden * d.out + d.out;
        break;
      case ModelKind::kSgc:
        break;
    }
    out.push_back(d);
  }
  return out;
}

int64_t Parameters(const ModelShape& m) {
  int64_t n = 0;
  for (const LayerDims& d : Layers(m)) n += d.parameters;
  return n;
}

namespace {
// Layer 0 reads the constant input itself (no dropout, no projection): received once per run.
bool CachedInput(const ModelShape& m) { return m.kind == ModelKind::kSgc; }
}  // namespace

std::vector<Spmm> TrainingSpmms(const ModelShape& m) {
  std::vector<Spmm> out = EvaluationSpmms(m);
  const std::vector<LayerDims> dims = Layers(m);
  for (int l = m.layers - 1; l >= 0; --l) {
    if (dims[l].message_trained) out.push_back({l, dims[l].message, true});
  }
  return out;
}

std::vector<Spmm> EvaluationSpmms(const ModelShape& m) {
  std::vector<Spmm> out;
  const std::vector<LayerDims> dims = Layers(m);
  for (int l = 0; l < m.layers; ++l) {
    if (l == 0 && CachedInput(m)) continue;
    out.push_back({l, dims[l].message, false});
  }
  return out;
}

}  // namespace fg::plan
