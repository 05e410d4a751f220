#include "udf_examples/pinsage/random_walk.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "flexgraph/base/status.h"

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
                                        const nau::VertexSpace& space, const std::string& walk,
                                        const WalkOptions& options) {
  FG_RETURN_IF_ERROR(options.Validate());
  const graph::HeteroGraph& g = dataset.graph;
  const graph::PartInfo* part = dataset.part ? &*dataset.part : nullptr;
  auto first_row = [&](int type) -> int64_t { return part ? part->begin(type) : 0; };
  WalkPlan plan;
  plan.options_ = options;
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
    plan.steps_.push_back(Step{g.relations[0].by_dst, 0, 0, first_row(0)});
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
    if (part != nullptr && !found[0]->offsets.defined()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "pinsage: walk '", walk, "' steps from '", from, "' to '", to, "' through ", names[0],
          ", whose out-edges this part of a partitioned dataset does not hold"));
    }
    plan.steps_.push_back(Step{*found[0], space.type_offset(tf), space.type_offset(tt), first_row(tf)});
    if (plan.start_[tf] < 0) plan.start_[tf] = static_cast<int>(i);
  }
  return plan;
}

std::string WalkPlan::ToString() const {
  if (!typed_) return "in-edges";
  return absl::StrCat(absl::StrJoin(cycle_, "-"), "-", cycle_.front());
}

int WalkPlan::TypeOf(int64_t global) const {
  const auto it = std::upper_bound(type_offsets_.begin(), type_offsets_.end(), global);
  return static_cast<int>(it - type_offsets_.begin()) - 1;
}

namespace {
constexpr uint32_t kRestartDrawn = 1;  // Walker::flags: this hop's restart was decided
}  // namespace

bool WalkPlan::Start(nau::Walker* w) const {
  const int type = TypeOf(w->root);
  if (type < 0 || type >= static_cast<int>(start_.size()) || start_[type] < 0) return false;
  w->cur = w->root;
  w->trace = w->hop = w->step = 0;
  w->flags = 0;
  w->draws = 0;
  return true;
}

// One trace: n_hops hops of one cycle each (a hop may first restart at the root); a vertex without
// a way on ends the trace. Hop ends other than the root are visits (with count_all_types, every
// step's vertex).
bool WalkPlan::Advance(const nau::SelectContext&, nau::Walker* w, RandomStream& rng,
                       std::vector<int32_t>* visits) const {
  const WalkOptions& o = options_;
  const int first = start_[TypeOf(w->root)], len = static_cast<int>(steps_.size());
  auto next_trace = [&] {
    ++w->trace;
    w->hop = w->step = 0;
    w->flags = 0;
    w->cur = w->root;
  };
  while (w->trace < o.num_traces) {
    if (w->step == 0 && w->hop > 0 && o.restart_prob > 0.0 && !(w->flags & kRestartDrawn)) {
      w->flags |= kRestartDrawn;
      if (rng.Uniform() < o.restart_prob) w->cur = w->root;
      w->draws = rng.draws();
    }
    const Step& step = steps_[(first + w->step) % len];
    const int64_t row = w->cur - step.from_offset - step.first_row;
    if (row < 0 || row >= step.adj.num_rows) return true;  // held elsewhere
    const int64_t deg = step.adj.degree(row);
    if (deg == 0) {  // the trace ends at a vertex without a way on
      next_trace();
      continue;
    }
    const int64_t e = step.adj.row_ptr()[row] + static_cast<int64_t>(rng.Below(deg));
    w->draws = rng.draws();
    w->cur = step.to_offset + step.adj.col()[e];
    ++w->step;
    if (w->step < len) {
      if (o.count_all_types && w->cur != w->root) visits->push_back(static_cast<int32_t>(w->cur));
      continue;
    }
    if (w->cur != w->root) visits->push_back(static_cast<int32_t>(w->cur));  // a hop's end
    w->step = 0;
    w->flags = 0;
    if (++w->hop == o.n_hops) next_trace();
  }
  return false;
}

void WalkPlan::Finish(int64_t root, std::vector<nau::Visit>& visits, hdg::NeighborWriter& out) const {
  std::sort(visits.begin(), visits.end(),
            [](const nau::Visit& a, const nau::Visit& b) { return a.key < b.key; });
  struct Count {
    int32_t vertex;
    float count;
  };
  std::vector<Count> top;
  for (size_t i = 0; i < visits.size();) {
    size_t j = i;
    while (j < visits.size() && visits[j].key == visits[i].key) ++j;
    top.push_back(Count{visits[i].vertex, static_cast<float>(j - i)});
    i = j;
  }
  // Most visited first; equal counts by source id (already ascending, and the sort is stable).
  std::stable_sort(top.begin(), top.end(), [](const Count& a, const Count& b) { return a.count > b.count; });
  const size_t k = std::min(top.size(), static_cast<size_t>(options_.top_k));
  for (size_t i = 0; i < k; ++i) out.Add(top[i].vertex, top[i].count);
  if (options_.pad) {
    for (size_t i = k; i < static_cast<size_t>(options_.top_k); ++i) out.Add(static_cast<int32_t>(root), 0.0f);
  }
}

}  // namespace fg::udf
