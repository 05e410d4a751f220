#include "nau/context.h"

#include <algorithm>
#include <cstring>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"

namespace fg::nau {

VertexSpace::VertexSpace(const graph::HeteroGraph& g) : types_(g.node_types) {
  offsets_.push_back(0);
  for (int64_t n : g.num_nodes) offsets_.push_back(offsets_.back() + n);
}

int VertexSpace::TypeIndex(const std::string& name) const {
  auto it = std::find(types_.begin(), types_.end(), name);
  return it == types_.end() ? -1 : static_cast<int>(it - types_.begin());
}

int VertexSpace::TypeOf(int64_t global) const {
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), global);
  return static_cast<int>(it - offsets_.begin()) - 1;
}

int64_t SelectContext::InDegree(int32_t v) const {
  const Csr& a = dataset_->Adjacency();
  const int64_t row = v - first_row();
  if (row >= 0 && row < a.num_rows) return a.degree(row);
  const graph::PartInfo* part = dataset_->part ? &*dataset_->part : nullptr;
  if (part != nullptr && part->halo_ids.defined()) {
    const int64_t* ids = part->halo_ids.i64();
    const int64_t* end = ids + part->halo_ids.numel();
    const int64_t* it = std::lower_bound(ids, end, static_cast<int64_t>(v));
    if (it != end && *it == v) return part->halo_in_degrees.i64()[it - ids];
  }
  RecordForeign(v);
  return 0;
}

int64_t SelectContext::SourceId(int64_t v) const {
  if (!dataset_ || !dataset_->part) return v;
  const graph::PartInfo& part = *dataset_->part;
  const int t = space_->TypeOf(v);
  const int64_t local = v - space_->type_offset(t);
  if (local < part.begin(t) || local >= part.end(t)) {
    RecordForeign(v);
    return v;
  }
  return space_->type_offset(t) + part.original_ids.at(space_->type_name(t)).i64()[local - part.begin(t)];
}

ag::Var LayerContext::MeanOverRoots(const ag::Var& x) const {
  auto across = [&](const ag::Var& v) { return sum_across_workers ? sum_across_workers(v) : v; };
  const float total =
      across(ag::Var(Tensor::Full({1}, static_cast<float>(x.rows())))).value().Item();
  return ag::Scale(across(ag::SumRows(x)), total > 0 ? 1.0f / total : 0.0f);
}

namespace {
bool SameIds(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined() || a.raw() == b.raw()) return true;
  return a.numel() == b.numel() && a.dtype() == b.dtype() && a.device() == Device::kCpu &&
         b.device() == Device::kCpu && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}
}  // namespace

bool LayerContext::HasDropped(const ag::Var& x, float p, int site, const Tensor& row_ids) const {
  if (!dropped_.empty() && dropped_.front().layer != layer) dropped_.clear();  // not held on
  const uint64_t s = DropoutSeed(site);
  for (const Dropped& d : dropped_) {
    if (d.seed == s && d.p == p && d.x.value().raw() == x.value().raw() &&
        d.x.value().shape() == x.value().shape() && SameIds(d.ids, row_ids)) {
      return true;
    }
  }
  // The roots' rows of an input already dropped (as Dropout finds them).
  if (roots_of_.layer != layer || roots_of_.roots.node() != x.node() || !row_ids.defined() ||
      row_ids.raw() != root_global_ids.raw()) {
    return false;
  }
  for (const Dropped& d : dropped_) {
    if (d.seed == s && d.p == p && d.x.node() == roots_of_.input.node() && d.ids.defined() &&
        d.ids.raw() == table_global_ids.raw()) {
      return true;
    }
  }
  return false;
}

Tensor LayerContext::PlacedIds(const Tensor& row_ids, Device device) const {
  for (const auto& [host, placed] : placed_ids) {
    if (row_ids.defined() && row_ids.raw() == host.raw() && placed.device() == device) return placed;
  }
  return row_ids;
}

ag::Var LayerContext::Dropout(const ag::Var& x, float p, int site, const Tensor& row_ids) const {
  if (!training || p <= 0.0f) return x;
  if (!dropped_.empty() && dropped_.front().layer != layer) dropped_.clear();
  const uint64_t s = DropoutSeed(site);
  for (const Dropped& d : dropped_) {
    if (d.seed == s && d.p == p && d.x.value().raw() == x.value().raw() &&
        d.x.value().shape() == x.value().shape() && SameIds(d.ids, row_ids)) {
      return d.out;
    }
  }
  // The roots' rows of an input already dropped under the same keys.
  if (roots_of_.layer == layer && roots_of_.roots.node() == x.node() && row_ids.defined() &&
      row_ids.raw() == root_global_ids.raw()) {
    for (const Dropped& d : dropped_) {
      if (d.seed == s && d.p == p && d.x.node() == roots_of_.input.node() && d.ids.defined() &&
          d.ids.raw() == table_global_ids.raw()) {
        return roots_of_.index.defined() ? ag::GatherRows(d.out, roots_of_.index)
                                         : ag::FirstRows(d.out, roots_of_.roots.rows());
      }
    }
  }
  ag::Var out = ag::Dropout(x, p, s, training, PlacedIds(row_ids, x.value().device()));
  dropped_.push_back({layer, s, site, p, x, out, row_ids});
  return out;
}

void LayerContext::NoteDropped(const ag::Var& x, float p, int site, const Tensor& row_ids,
                               const ag::Var& out) const {
  FG_CHECK(!x.requires_grad()) << "NoteDropped: a dropout drawn elsewhere has no backward";
  if (!dropped_.empty() && dropped_.front().layer != layer) dropped_.clear();
  dropped_.push_back({layer, DropoutSeed(site), site, p, x, out, row_ids});
}

std::vector<std::pair<float, int>> LayerContext::DropoutsOf(const ag::Var& x, const Tensor& row_ids) const {
  std::vector<std::pair<float, int>> out;
  for (const Dropped& d : dropped_) {
    if (d.layer == layer && d.x.value().raw() == x.value().raw() && SameIds(d.ids, row_ids)) {
      out.push_back({d.p, d.site});
    }
  }
  return out;
}

}  // namespace fg::nau
