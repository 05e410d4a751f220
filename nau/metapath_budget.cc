#include "nau/metapath_budget.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"

namespace fg::nau {
namespace {

// Average out-degree of each step from the whole graph's relation sizes.
MetapathEstimate AverageDegreeEstimate(const Metapath& mp, const graph::HeteroGraph& g,
                                       const std::vector<int64_t>& relation_edges,
                                       int64_t max_instances) {
  MetapathEstimate e;
  e.roots = g.num_nodes[mp.start_type()];
  double per_root = 1;
  for (int s = 0; s < static_cast<int>(mp.steps.size()); ++s) {
    const int64_t from = g.num_nodes[mp.node_types[s]];
    per_root *= from > 0 ? static_cast<double>(relation_edges[mp.steps[s].relation]) / from : 0.0;
  }
  if (max_instances > 0) per_root = std::min(per_root, static_cast<double>(max_instances));
  e.instances = per_root * static_cast<double>(e.roots);
  return e;
}

std::string Count(double x) {
  if (x >= 1e9) return absl::StrFormat("%.2fG", x / 1e9);
  if (x >= 1e6) return absl::StrFormat("%.2fM", x / 1e6);
  if (x >= 1e4) return absl::StrFormat("%.1fk", x / 1e3);
  return absl::StrFormat("%.0f", x);
}

}  // namespace

std::vector<MetapathEstimate> EstimateMetapaths(const std::vector<Metapath>& metapaths,
                                                const graph::Dataset& dataset,
                                                int64_t max_instances) {
  const graph::HeteroGraph& g = dataset.graph;
  std::vector<MetapathEstimate> out;
  if (dataset.part && dataset.part->num_parts() > 1) {
    const std::vector<int64_t>& edges = dataset.part->relation_edges;
    FG_CHECK(edges.size() == g.relations.size()) << "EstimateMetapaths: the part lacks relation sizes";
    for (const Metapath& mp : metapaths) out.push_back(AverageDegreeEstimate(mp, g, edges, max_instances));
    return out;
  }
  const VertexSpace space(g);
  const MetapathEnumerator counts(&g, &space, metapaths);
  for (int m = 0; m < static_cast<int>(metapaths.size()); ++m) {
    MetapathEstimate e;
    e.exact = true;
    e.roots = g.num_nodes[metapaths[m].start_type()];
    std::vector<int64_t> per_root(e.roots);
    ParallelFor(0, e.roots, [&](int64_t v) { per_root[v] = counts.Count(m, static_cast<int32_t>(v)); });
    for (int64_t c : per_root) {
      e.per_root_max = std::max(e.per_root_max, static_cast<double>(c));
      e.instances += static_cast<double>(max_instances > 0 ? std::min(c, max_instances) : c);
    }
    out.push_back(e);
  }
  return out;
}

std::vector<Metapath> MetapathBudget::Kept() const {
  std::vector<Metapath> kept;
  for (const BudgetedMetapath& c : candidates) {
    if (c.kept) kept.push_back(c.metapath);
  }
  return kept;
}

std::string MetapathBudget::Describe() const {
  std::string out;
  for (const BudgetedMetapath& c : candidates) {
    absl::StrAppendFormat(&out, "  %-12s %8s instances over %s roots%s, ~%.0f MiB  %s\n",
                          c.metapath.name, Count(c.estimate.instances), Count(c.estimate.roots),
                          c.estimate.exact ? "" : " (average-degree estimate)", c.bytes / 1048576.0,
                          c.kept ? "kept" : "dropped");
  }
  absl::StrAppendFormat(&out, "  instances take ~%.0f MiB of a %.0f MiB budget\n", kept_bytes / 1048576.0,
                        budget_bytes / 1048576.0);
  return out;
}

MetapathBudget ChooseMetapaths(
    const std::vector<Metapath>& candidates, const std::vector<MetapathEstimate>& estimates,
    const std::function<double(const Metapath&, const MetapathEstimate&)>& bytes_of,
    double budget_bytes, int keep_type) {
  FG_CHECK(candidates.size() == estimates.size()) << "ChooseMetapaths: one estimate per candidate";
  MetapathBudget b;
  b.budget_bytes = budget_bytes;
  int keep = -1;  // the smallest metapath of the target type
  for (size_t i = 0; i < candidates.size(); ++i) {
    BudgetedMetapath c{candidates[i], estimates[i], bytes_of(candidates[i], estimates[i]), true};
    b.kept_bytes += c.bytes;
    if (c.metapath.start_type() == keep_type && (keep < 0 || c.bytes < b.candidates[keep].bytes)) {
      keep = static_cast<int>(i);
    }
    b.candidates.push_back(std::move(c));
  }
  std::vector<int> order(candidates.size());
  std::iota(order.begin(), order.end(), 0);
  // Other types' metapaths before the target's, largest first; ties by candidate order, so the
  // choice is deterministic.
  auto key = [&](int i) {
    return std::make_pair(b.candidates[i].metapath.start_type() == keep_type, -b.candidates[i].bytes);
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int c) { return key(a) < key(c); });
  for (int i : order) {
    if (b.kept_bytes <= budget_bytes) break;
    if (i == keep) continue;
    b.candidates[i].kept = false;
    b.kept_bytes -= b.candidates[i].bytes;
  }
  return b;
}

}  // namespace fg::nau
