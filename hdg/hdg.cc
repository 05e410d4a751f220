#include "hdg/hdg.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/npy.h"

namespace fg::hdg {

Hdg::Hdg(SchemaTree schema, int64_t num_vertices, Tensor roots, std::vector<HdgLevel> levels)
    : schema_(std::move(schema)),
      num_vertices_(num_vertices),
      roots_(std::move(roots)),
      levels_(std::move(levels)) {
  for (int64_t r = 0; r < roots_.numel() && roots_are_first_rows_; ++r) {
    roots_are_first_rows_ = roots_.i32()[r] == r;
  }
}

Tensor HdgLevel::NormalizedWeights() const {
  if (normalized_weights.defined()) return normalized_weights;
  const Tensor offsets = csr().offsets.To(Device::kCpu), w = weights.To(Device::kCpu);
  const int64_t* o = offsets.i64();
  Tensor out = Tensor::Empty({w.numel()});
  for (int64_t i = 0; i + 1 < offsets.numel(); ++i) {
    double s = 0.0;
    for (int64_t e = o[i]; e < o[i + 1]; ++e) s += w.f32()[e];
    const float inv = s > 0 ? static_cast<float>(1.0 / s) : 0.0f;
    for (int64_t e = o[i]; e < o[i + 1]; ++e) out.f32()[e] = w.f32()[e] * inv;
  }
  return out.To(weights.device());
}

Hdg Hdg::OnDevice(Device device, const std::vector<bool>& normalized) const {
  std::vector<HdgLevel> levels = levels_;
  for (size_t k = 0; k < levels.size(); ++k) {
    HdgLevel& l = levels[k];
    if (l.weights.defined() && k < normalized.size() && normalized[k]) {
      l.normalized_weights = l.NormalizedWeights().To(device);
    }
    l.matrix = l.matrix->OnDevice(device);
    l.weights = l.weights.To(device);
  }
  return Hdg(schema_, num_vertices_, roots_, std::move(levels));
}

size_t Hdg::Bytes() const {
  size_t b = roots_.nbytes();
  for (const auto& l : levels_) b += l.csr().bytes() + (l.weights.defined() ? l.weights.nbytes() : 0);
  return b;
}

HdgStats Hdg::Stats() const {
  HdgStats s;
  s.nodes_per_level.push_back(num_vertices_);
  s.entries_per_level.push_back(0);
  s.arity_histogram.emplace_back();
  for (const auto& l : levels_) {
    s.nodes_per_level.push_back(l.num_nodes());
    s.entries_per_level.push_back(l.csr().nnz());
    std::vector<int64_t> hist(66, 0);
    for (int64_t i = 0; i < l.num_nodes(); ++i) ++hist[std::min<int64_t>(l.csr().degree(i), 65)];
    while (hist.size() > 1 && hist.back() == 0) hist.pop_back();
    s.arity_histogram.push_back(hist);
  }
  s.bytes = Bytes();
  return s;
}

std::string HdgStats::ToString() const {
  std::string out = absl::StrCat("vertices ", nodes_per_level[0]);
  for (size_t k = 1; k < nodes_per_level.size(); ++k) {
    int64_t max_arity = static_cast<int64_t>(arity_histogram[k].size()) - 1;
    absl::StrAppend(&out, "; level ", k, ": ", nodes_per_level[k], " nodes, ",
                    entries_per_level[k], " children (mean arity ",
                    nodes_per_level[k] ? static_cast<double>(entries_per_level[k]) / nodes_per_level[k] : 0.0,
                    ", max ", max_arity > 64 ? ">64" : absl::StrCat(max_arity), ")");
  }
  absl::StrAppend(&out, "; ", bytes, " bytes");
  return out;
}

absl::Status WriteNpy(const Hdg& hdg, const std::string& prefix) {
  std::vector<int64_t> roots(hdg.num_roots());
  for (int64_t r = 0; r < hdg.num_roots(); ++r) roots[r] = hdg.roots().i32()[r];
  FG_RETURN_IF_ERROR(graph::io::WriteNpy(prefix + "roots.npy", Tensor::FromVector(roots)));
  for (int k = 1; k <= hdg.num_levels(); ++k) {
    const HdgLevel& l = hdg.level(k);
    const std::string level = absl::StrCat(prefix, "level", k, ".");
    FG_RETURN_IF_ERROR(graph::io::WriteNpy(level + "indptr.npy", l.csr().offsets));
    FG_RETURN_IF_ERROR(graph::io::WriteNpy(level + "indices.npy", l.csr().indices));
    if (l.weights.defined()) FG_RETURN_IF_ERROR(graph::io::WriteNpy(level + "weights.npy", l.weights));
  }
  return absl::OkStatus();
}

}  // namespace fg::hdg
