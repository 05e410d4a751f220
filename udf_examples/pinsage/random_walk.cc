#include "udf_examples/pinsage/random_walk.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace fg::udf {

absl::Status WalkOptions::Validate() const {
  if (num_traces < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("pinsage: num_traces must be at least 1, got ", num_traces));
  }
  if (n_hops < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("pinsage: n_hops must be at least 1, got ", n_hops));
  }
  if (top_k < 1) {
    return absl::InvalidArgumentError(absl::StrCat("pinsage: top_k must be at least 1, got ", top_k));
  }
  if (!(restart_prob >= 0.0 && restart_prob <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("pinsage: restart_prob must lie in [0, 1], got ", restart_prob));
  }
  return absl::OkStatus();
}

absl::StatusOr<WalkPlan> WalkPlan::Make(const graph::Dataset& dataset,
                                        const nau::VertexSpace& space, const std::string& walk) {
  const graph::HeteroGraph& g = dataset.graph;
  WalkPlan plan;
  plan.start_.assign(space.num_types(), -1);
  for (int t = 0; t <= space.num_types(); ++t) {
    plan.type_offsets_.push_back(t < space.num_types() ? space.type_offset(t) : space.size());
  }
  if (walk.empty()) {
    if (!g.IsHomogeneous()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pinsage: dataset '", dataset.name, "' is heterogeneous (", absl::StrJoin(g.node_types, ", "),
          "): give a typed walk, e.g. walk=", g.node_types.size() > 1 ? g.node_types[1] : "a", "-",
          g.node_types[0], "-", g.node_types.size() > 1 ? g.node_types[1] : "a"));
    }
    plan.cycle_ = {g.node_types[0]};
    plan.steps_.push_back(Step{g.relations[0].by_dst, 0, 0});
    plan.start_[0] = 0;
    return plan;
  }
  std::vector<std::string> types = absl::StrSplit(walk, '-');
  if (types.size() < 2 || types.front() != types.back()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pinsage: walk '", walk, "' must be a cycle of node types such as artist-user-artist"));
  }
  for (const std::string& t : types) {
    if (space.TypeIndex(t) < 0) {
      return absl::InvalidArgumentError(absl::StrCat("pinsage: walk '", walk, "': unknown node type '",
                                                     t, "' (types: ", absl::StrJoin(g.node_types, ", "),
                                                     ")"));
    }
  }
  types.pop_back();
  plan.cycle_ = types;
  plan.typed_ = true;
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string& from = types[i];
    const std::string& to = types[(i + 1) % types.size()];
    std::vector<const Csr*> found;
    std::vector<std::string> names;
    for (const graph::Relation& r : g.relations) {
      if (r.src_type == from && r.dst_type == to) {
        found.push_back(&r.by_src);
        names.push_back(r.Key());
      } else if (r.src_type == to && r.dst_type == from) {
        found.push_back(&r.by_dst);
        names.push_back(r.Key());
      }
    }
    if (found.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pinsage: walk '", walk, "': ", found.empty() ? "no relation connects" : "several relations (",
          absl::StrJoin(names, ", "), found.empty() ? "" : ") connect", " '", from, "' and '", to, "'"));
    }
    const int tf = space.TypeIndex(from), tt = space.TypeIndex(to);
    plan.steps_.push_back(Step{*found[0], space.type_offset(tf), space.type_offset(tt)});
    if (plan.start_[tf] < 0) plan.start_[tf] = static_cast<int>(i);
  }
  return plan;
}

std::string WalkPlan::ToString() const {
  if (!typed_) return "in-edges";
  return absl::StrCat(absl::StrJoin(cycle_, "-"), "-", cycle_.front());
}

std::vector<VisitCount> WalkPlan::TopVisited(int32_t root, const WalkOptions& options,
                                             RandomStream& rng) const {
  // Vertex ids of the root's type are counted at the end of every hop.
  const auto it = std::upper_bound(type_offsets_.begin(), type_offsets_.end(), int64_t{root});
  const int type = static_cast<int>(it - type_offsets_.begin()) - 1;
  std::vector<VisitCount> top;
  if (type < 0 || type >= static_cast<int>(start_.size()) || start_[type] < 0) return top;
  const int first = start_[type], len = static_cast<int>(steps_.size());

  thread_local std::vector<int32_t> visits;
  visits.clear();
  for (int trace = 0; trace < options.num_traces; ++trace) {
    int64_t cur = root;
    for (int hop = 0; hop < options.n_hops; ++hop) {
      if (hop > 0 && options.restart_prob > 0.0 && rng.Uniform() < options.restart_prob) cur = root;
      bool dead_end = false;
      for (int s = 0; s < len && !dead_end; ++s) {
        const Step& step = steps_[(first + s) % len];
        const int64_t local = cur - step.from_offset;
        const int64_t deg = step.adj.degree(local);
        if (deg == 0) {
          dead_end = true;
          break;
        }
        const int64_t e = step.adj.row_ptr()[local] + static_cast<int64_t>(rng.Below(deg));
        cur = step.to_offset + step.adj.col()[e];
        if (options.count_all_types && s + 1 < len && cur != root) visits.push_back(static_cast<int32_t>(cur));
      }
      if (dead_end) break;  // the trace ends at a vertex without a way on
      if (cur != root) visits.push_back(static_cast<int32_t>(cur));
    }
  }
  std::sort(visits.begin(), visits.end());
  for (size_t i = 0; i < visits.size();) {
    size_t j = i;
    while (j < visits.size() && visits[j] == visits[i]) ++j;
    top.push_back(VisitCount{visits[i], static_cast<float>(j - i)});
    i = j;
  }
  // Most visited first; equal counts by vertex id (already ascending, and the sort is stable).
  const size_t k = std::min(top.size(), static_cast<size_t>(options.top_k));
  std::stable_sort(top.begin(), top.end(),
                   [](const VisitCount& a, const VisitCount& b) { return a.count > b.count; });
  top.resize(k);
  return top;
}

}  // namespace fg::udf
