// MAGNN as a NAU layer over the building blocks of magnn_blocks.cc; see magnn.h for the equations.
#include "udf_examples/magnn/magnn.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/autograd/instance_functions.h"
#include "flexgraph/base/status.h"

namespace fg::udf::magnn {
namespace {

// Row concatenation of rank-2 Vars of one width (flattened rows concatenate like columns).
ag::Var ConcatRows(const std::vector<ag::Var>& parts, int64_t width) {
  std::vector<ag::Var> flat;
  int64_t rows = 0;
  for (const ag::Var& p : parts) {
    if (p.rows() == 0) continue;
    flat.push_back(ag::Reshape(p, {1, p.rows() * width}));
    rows += p.rows();
  }
  if (flat.empty()) {
    return ag::Var(Tensor::Zeros({0, width}, DType::kFloat32,
                                 parts.empty() ? Device::kCpu : parts[0].value().device()));
  }
  if (flat.size() == 1) return parts.size() == 1 ? parts[0] : ag::Reshape(flat[0], {rows, width});
  return ag::Reshape(ag::Concat(flat), {rows, width});
}

Tensor IntTensor(const std::vector<int32_t>& v) { return Tensor::FromVector(v); }

// Block index of every node of an HDG level (from its type_offsets).
std::vector<int32_t> NodeBlocks(const hdg::HdgLevel& l) {
  std::vector<int32_t> block(l.num_nodes());
  for (size_t t = 0; t + 1 < l.type_offsets.size(); ++t) {
    std::fill(block.begin() + l.type_offsets[t], block.begin() + l.type_offsets[t + 1],
              static_cast<int32_t>(t));
  }
  return block;
}

}  // namespace

// --- the NAU layer -----------------------------------------------------------------------------
namespace {

class MagnnLayer : public nau::Layer {
 public:
  // `metapaths`: those starting at a node type this layer has roots of; d: input width (the
  // projected node content or the previous layer's output); out: output width.
  MagnnLayer(const nau::ModelSpec& spec, const Options& opt, std::vector<nau::Metapath> metapaths,
             int64_t d, int64_t out, bool last, int index)
      : space_(spec.vertices),
        opt_(opt),
        heads_(spec.heads),
        d_(d),
        last_(last),
        index_(index),
        dropout_(spec.dropout),
        by_type_(spec.vertices->num_types()) {
    const graph::PartInfo* part = spec.dataset->part ? &*spec.dataset->part : nullptr;
    // Instance counts read the whole graph: built where it is held (not on one part of several,
    // whose instances the framework expands across the workers).
    if (part == nullptr || part->num_parts() == 1) walker_.emplace(&spec.dataset->graph, spec.vertices, metapaths);
    selection_.metapaths = std::move(metapaths);
    selection_.max_instances = opt.max_instances;
    const auto& mps = selection_.metapaths;
    const int p = static_cast<int>(mps.size());
    const uint64_t seed = spec.seed;
    uint64_t stream = 1000 * static_cast<uint64_t>(index + 1);
    for (int m = 0; m < p; ++m) by_type_[mps[m].start_type()].push_back(m);
    selection_.by_type = by_type_;
    const int64_t width = heads_ * d;  // per-metapath embedding: heads concatenated
    if (opt.encoder == Encoder::kRotate && !opt.neighbors) {
      rotations_ = AddParameter(
          "relation_rotations",
          nn::Initialize({static_cast<int64_t>(spec.dataset->graph.relations.size()), d},
                         nn::Init::kGlorot, seed, stream++));
    }
    for (int m = 0; m < p; ++m) {
      if (opt.encoder == Encoder::kLinear && !opt.neighbors) {
        linear_.emplace_back(d, width, /*bias=*/true, nn::Init::kGlorot, seed, stream++);
        AddChild(absl::StrCat("encoder.", mps[m].name), linear_.back());
      }
    }
    // Instance attention vectors a_P = [a_center; a_inst], one column per (metapath, head).
    attn_center_ = AddParameter("attn_center", nn::Initialize({d, p * heads_}, nn::Init::kGlorot,
                                                              seed, stream++, 1.414f));
    attn_inst_ = AddParameter("attn_inst", nn::Initialize({d, p * heads_}, nn::Init::kGlorot,
                                                          seed, stream++, 1.414f));
    // Inter-metapath attention, per root type.
    fuse_fc_.resize(by_type_.size());
    fuse_q_.resize(by_type_.size());
    for (size_t t = 0; t < by_type_.size(); ++t) {
      if (by_type_[t].empty()) continue;
      const std::string& type = space_->type_name(static_cast<int>(t));
      fuse_fc_[t] = nn::Linear(width, opt.attn_dim, /*bias=*/true, nn::Init::kGlorot, seed,
                               stream++);
      AddChild(absl::StrCat("fuse.", type), fuse_fc_[t]);
      fuse_q_[t] = AddParameter(absl::StrCat("fuse.", type, ".q"),
                                nn::Initialize({opt.attn_dim, 1}, nn::Init::kGlorot, seed,
                                               stream++, 1.414f));
    }
    out_fc_ = nn::Linear(width, out, /*bias=*/true, nn::Init::kGlorot, seed, stream++);
    AddChild("output", out_fc_);
  }

  hdg::SchemaTree Schema() const override {
    std::vector<hdg::MetapathType> types;
    for (const nau::Metapath& mp : selection_.metapaths) {
      types.push_back({mp.name, opt_.neighbors ? 1 : mp.length()});
    }
    return hdg::SchemaTree::Metapaths(std::move(types));
  }
  // Metapath-based neighbours are a selection of their own (the whole graph is held: Build).
  const nau::MetapathSelection* Instances() const override {
    return opt_.neighbors ? nullptr : &selection_;
  }
  bool SampledSelection() const override { return opt_.resample > 0; }
  int SelectionPeriod() const override { return std::max(1, opt_.resample); }

  void SelectNeighbors(const nau::SelectContext& ctx, int32_t root,
                       hdg::NeighborWriter& out) const override {
    const int type = space_->TypeOf(root);
    const int32_t local = static_cast<int32_t>(root - space_->type_offset(type));
    RandomStream rng = ctx.Rng(root);
    thread_local std::vector<int32_t> ids;
    for (int m : by_type_[type]) {
      ids.clear();
      if (opt_.neighbors && !opt_.path_weighted) {
        walker_->Endpoints(m, local, opt_.max_instances, &rng, &ids);
        for (int32_t u : ids) out.AddInstance(m, {u});
        continue;
      }
      const int len = selection_.metapaths[m].length();
      const int64_t k = walker_->Enumerate(m, local, opt_.max_instances, &rng, &ids);
      if (opt_.neighbors) {  // each instance's end vertex: neighbours repeat per joining path
        thread_local std::vector<int32_t> ends;
        ends.clear();
        for (int64_t i = 0; i < k; ++i) ends.push_back(ids[i * len + len - 1]);
        std::sort(ends.begin(), ends.end());
        for (int32_t u : ends) out.AddInstance(m, {u});
        continue;
      }
      for (int64_t i = 0; i < k; ++i) {
        out.AddInstance(m, std::span<const int32_t>(ids.data() + i * len, len));
      }
    }
  }

  ag::Var Message(nau::LayerContext& ctx, const ag::Var& h) override {
    // Dropout on the projected node content (MAGNN's feat_drop), before the first layer only.
    if (index_ > 0) return h;
    return ctx.Dropout(h, dropout_, 0, ctx.table_global_ids);
  }

  nau::Aggregator LevelAggregator(int level) const override {
    using nau::Aggregator;
    using nau::Strategy;
    switch (level) {
      case 1:
        return Aggregator::Custom(
            opt_.neighbors ? absl::StrCat("metapath-based neighbours' rows, [neighbours, ", d_, "]")
                           : absl::StrCat(EncoderName(opt_.encoder),
                                          " instance encoder over [instances, length, ", d_, "]"),
            Strategy::kDense, [this](const nau::LevelInput& in) { return Encode(in); });
      case 2:
        return Aggregator::Custom(
            absl::StrCat(heads_, "-head instance attention, segment softmax per (root, metapath)"),
            Strategy::kGraph, [this](const nau::LevelInput& in) { return Attend(in); });
      default:
        return Aggregator::Custom(
            absl::StrCat("inter-metapath attention over ", selection_.metapaths.size(),
                         " metapaths, [roots, ", heads_ * d_, "] per metapath"),
            Strategy::kDense, [this](const nau::LevelInput& in) { return Fuse(in); });
    }
  }

  ag::Var Update(nau::UpdateContext&, const ag::Var&, const ag::Var& nbr) override {
    ag::Var h = out_fc_.Forward(nbr);
    return last_ ? h : ag::Elu(h);
  }
  bool NbrIsEmbedding() const override { return true; }

  // Instances encode d-wide rows; instance and metapath attention run per head (heads x d wide);
  // Update transforms heads x d to out per root.
  nau::LayerCost Cost(int64_t, int64_t) const override {
    const int64_t width = heads_ * d_;
    return {.in = d_,
            .out = out_fc_.out_features(),
            .level_widths = {d_, width},
            .update_flops = 2.0 * width * out_fc_.out_features()};
  }

 private:
  bool PerHeadEncodings() const {
    return !opt_.neighbors && opt_.encoder == Encoder::kLinear && heads_ > 1;
  }

  // Level 1: every metapath's block of instances is a dense [n_P, L_P, d] batch (uniform
  // arity), encoded by a fused gather-rotate-mean that never materialises the batch; all blocks
  // write into one [instances, d] output.
  ag::Var Encode(const nau::LevelInput& in) const {
    const auto& mps = selection_.metapaths;
    const HdgIndex& index = Index(in);
    if (opt_.neighbors) return ag::GatherRows(in.children, index.neighbor_rows);
    ag::Var unit;
    if (opt_.encoder == Encoder::kRotate) unit = UnitRotations(rotations_);
    std::vector<Tensor> blocks;
    std::vector<ag::Var> rotations, linear;
    for (size_t b = 0; b < index.vertices.size(); ++b) {
      const int m = index.vertex_metapath[b];
      if (opt_.encoder == Encoder::kLinear) {
        // Mean, then the metapath's own linear map to heads * d.
        linear.push_back(linear_[m].Forward(
            ag::EncodeInstances(in.children, {index.vertices[b]}, {ag::Var()})));
        continue;
      }
      blocks.push_back(index.vertices[b]);
      rotations.push_back(opt_.encoder == Encoder::kRotate ? PathRotations(unit, mps[m])
                                                           : ag::Var());
    }
    if (opt_.encoder == Encoder::kLinear) return ConcatRows(linear, heads_ * d_);
    if (blocks.empty())
      return ag::Var(Tensor::Zeros({0, d_}, DType::kFloat32, in.children.value().device()));
    return ag::EncodeInstances(in.children, blocks, rotations);
  }

  // Level 2: attention over the instances of each (root, metapath) group.
  ag::Var Attend(const nau::LevelInput& in) const {
    const HdgIndex& index = Index(in);
    const int64_t p = static_cast<int64_t>(selection_.metapaths.size());
    const int64_t num_inst = in.hdg->level(1).num_nodes();
    // Scores for every (row, metapath, head), then each row keeps its own metapath's columns.
    ag::Var center = ag::GatherRows(
        ag::Reshape(ag::MatMul(in.self, attn_center_), {in.self.rows() * p, heads_}),
        index.center_pick);
    ag::Var inst;
    if (!PerHeadEncodings()) {
      inst = ag::GatherRows(
          ag::Reshape(ag::MatMul(in.children, attn_inst_), {num_inst * p, heads_}),
          index.inst_pick);
    } else {
      // Head h's encoding is columns [h d, (h+1) d): score it with head h's vector only.
      ag::Var all = ag::MatMul(ag::Reshape(in.children, {num_inst * heads_, d_}), attn_inst_);
      inst = ag::Reshape(ag::GatherRows(ag::Reshape(all, {num_inst * heads_ * p * heads_, 1}),
                                        index.inst_pick),
                         {num_inst, heads_});
    }
    const bool dropped = in.ctx->training && opt_.attn_dropout > 0;
    return InstanceAttention(index.groups, in.children, !PerHeadEncodings(), center, inst, heads_,
                             opt_.slope, opt_.attn_dropout, in.ctx->DropoutSeed(1),
                             in.ctx->training, dropped ? index.entry_ids : Tensor());
  }

  // Level 3: per root type, attention over that type's metapaths. Roots of one type are
  // contiguous in root order (types are laid out one after the other), so the per-type results
  // concatenate back into root order.
  ag::Var Fuse(const nau::LevelInput& in) const {
    const HdgIndex& index = Index(in);
    const int64_t width = in.children.row_width();
    std::vector<ag::Var> parts;
    for (int t = 0; t < space_->num_types(); ++t) {
      if (by_type_[t].empty()) {  // no metapath starts here: nothing to aggregate
        parts.push_back(ag::Var(Tensor::Zeros({index.type_roots[t], width}, DType::kFloat32,
                                              in.children.value().device())));
        continue;
      }
      std::vector<ag::Var> h;
      for (const Tensor& ids : index.fuse_groups[t]) h.push_back(ag::PickRows(in.children, ids));
      parts.push_back(MetapathAttention(h, fuse_fc_[t], fuse_q_[t], nullptr, in.ctx));
    }
    return ConcatRows(parts, width);
  }

  // The index tensors a pass over one HDG reads, on the device of the layer's input.
  struct HdgIndex {
    std::vector<SparseMatrixPtr> levels;  // the host levels it was built from (held: the key)
    Tensor root_ids;                      // and the roots' global ids
    SparseMatrixPtr groups;               // level 2 on the device, with its transpose
    Tensor neighbor_rows;                 // HAN: level 1's vertex-table rows
    std::vector<Tensor> vertices;         // per non-empty metapath block: [instances, length]
    std::vector<int> vertex_metapath;
    Tensor center_pick, inst_pick;        // Attend's picks of each row's own metapath's scores
    Tensor entry_ids;                     // instance attention's dropout keys
    std::vector<int64_t> type_roots;      // Fuse: roots per node type
    std::vector<std::vector<Tensor>> fuse_groups;  // per type and metapath: each root's group
  };

  // The index of in's HDG, built on the first pass over it. HDGs are constant between
  // selections, so every epoch after the first reads these tensors as they are.
  const HdgIndex& Index(const nau::LevelInput& in) const {
    const Tensor& root_ids = in.ctx->root_global_ids;
    for (auto it = index_cache_.begin(); it != index_cache_.end(); ++it) {
      bool same = it->levels.size() == static_cast<size_t>(in.hdg->num_levels()) &&
                  it->root_ids.raw() == root_ids.raw();
      for (int k = 1; same && k <= in.hdg->num_levels(); ++k) {
        same = it->levels[k - 1] == in.hdg->level(k).matrix;
      }
      if (same) {  // most recently used last
        if (std::next(it) != index_cache_.end()) std::rotate(it, std::next(it), index_cache_.end());
        return index_cache_.back();
      }
    }
    // Training's and evaluation's HDGs; a new selection replaces the one used longest ago.
    if (index_cache_.size() >= 2) index_cache_.erase(index_cache_.begin());
    index_cache_.push_back(BuildIndex(in));
    return index_cache_.back();
  }

  HdgIndex BuildIndex(const nau::LevelInput& in) const {
    const Device device = in.children.value().device();
    const auto& mps = selection_.metapaths;
    const int64_t p = static_cast<int64_t>(mps.size());
    const hdg::Hdg& hdg = *in.hdg;
    HdgIndex x;
    for (int k = 1; k <= hdg.num_levels(); ++k) x.levels.push_back(hdg.level(k).matrix);
    x.root_ids = in.ctx->root_global_ids;
    const hdg::HdgLevel& instances = hdg.level(1);
    const Csr& ic = instances.csr();
    if (opt_.neighbors) {
      x.neighbor_rows = Tensor::FromVector(std::vector<int32_t>(ic.col(), ic.col() + ic.nnz())).To(device);
    } else {
      for (size_t m = 0; m < mps.size(); ++m) {
        const int64_t lo = instances.type_offsets[m], hi = instances.type_offsets[m + 1];
        if (hi == lo) continue;
        const int64_t len = instances.block_arity[m];
        FG_CHECK(len == mps[m].length()) << mps[m].name << ": instances of arity " << len;
        Tensor v = Tensor::Empty({hi - lo, len}, DType::kInt32);
        const int32_t* first = ic.col() + ic.row_ptr()[lo];
        std::copy(first, first + (hi - lo) * len, v.i32());
        x.vertices.push_back(v.To(device));
        x.vertex_metapath.push_back(static_cast<int>(m));
      }
    }
    // Level 2: the groups of (root, metapath), on the device once.
    const hdg::HdgLevel& groups = hdg.level(2);
    x.groups = device == Device::kCpu ? groups.matrix : groups.matrix->OnDevice(device);
    nau::LevelInput at2 = in;
    at2.level = 2;
    const Tensor group_root = at2.NodeRoots();
    const std::vector<int32_t> group_block = NodeBlocks(groups);
    const std::vector<int32_t> inst_block = NodeBlocks(instances);
    const int64_t num_inst = instances.num_nodes();
    std::vector<int32_t> pick(groups.num_nodes());
    for (int64_t g = 0; g < groups.num_nodes(); ++g) {
      pick[g] = static_cast<int32_t>(group_root.i32()[g] * p + group_block[g]);
    }
    x.center_pick = IntTensor(pick).To(device);
    if (!PerHeadEncodings()) {
      pick.resize(num_inst);
      for (int64_t k = 0; k < num_inst; ++k) pick[k] = static_cast<int32_t>(k * p + inst_block[k]);
    } else {
      pick.resize(num_inst * heads_);
      for (int64_t k = 0; k < num_inst; ++k) {
        for (int64_t h = 0; h < heads_; ++h) {
          pick[k * heads_ + h] =
              static_cast<int32_t>(((k * heads_ + h) * p + inst_block[k]) * heads_ + h);
        }
      }
    }
    x.inst_pick = IntTensor(pick).To(device);
    // Masks keyed by (global root, metapath, instance index): independent of the partitioning.
    const Csr& gc = groups.csr();
    const Tensor& root_ids = in.ctx->root_global_ids;
    Tensor entry_ids = Tensor::Empty({gc.nnz()}, DType::kInt64);
    for (int64_t g = 0; g < gc.num_rows; ++g) {
      const int32_t r = group_root.i32()[g];
      const uint64_t root = root_ids.defined() ? static_cast<uint64_t>(root_ids.i64()[r]) : r;
      for (int64_t e = gc.row_ptr()[g]; e < gc.row_ptr()[g + 1]; ++e) {
        entry_ids.i64()[e] = static_cast<int64_t>(
            MixKey(root, static_cast<uint64_t>(group_block[g]), e - gc.row_ptr()[g]) >> 1);
      }
    }
    x.entry_ids = entry_ids.To(device);
    // Level 3: per root type (types in order, even with no local roots, so all workers make the
    // same reductions), the group of (root r, metapath m): child m of root r. Root types come from
    // global ids (the HDG's roots may be local rows of a worker's table); roots of one type are
    // contiguous in root order, so the per-type results concatenate back into root order.
    const Csr& rc = hdg.level(3).csr();
    const int64_t n = hdg.num_roots();
    std::vector<std::vector<int32_t>> type_rows(space_->num_types());
    for (int64_t r = 0; r < n; ++r) {
      const int64_t id = root_ids.defined() ? root_ids.i64()[r] : hdg.roots().i32()[r];
      type_rows[space_->TypeOf(id)].push_back(static_cast<int32_t>(r));
    }
    x.fuse_groups.resize(space_->num_types());
    for (int t = 0; t < space_->num_types(); ++t) {
      x.type_roots.push_back(static_cast<int64_t>(type_rows[t].size()));
      for (int m : by_type_[t]) {
        std::vector<int32_t> ids(type_rows[t].size());
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = rc.col()[rc.row_ptr()[type_rows[t][i]] + m];
        x.fuse_groups[t].push_back(IntTensor(ids).To(device));
      }
    }
    return x;
  }

  const nau::VertexSpace* space_;
  Options opt_;
  int64_t heads_, d_;
  bool last_;
  int index_;
  float dropout_;
  std::optional<nau::MetapathEnumerator> walker_;  // null on one part of several
  nau::MetapathSelection selection_;
  std::vector<std::vector<int>> by_type_;  // node type -> indices of metapaths starting there
  ag::Var rotations_;                      // RotatE: [relations, d] raw relation rotations
  std::vector<nn::Linear> linear_;         // linear encoder: per metapath, d -> heads * d
  ag::Var attn_center_, attn_inst_;        // [d, metapaths * heads]
  std::vector<nn::Linear> fuse_fc_;        // per root type: heads * d -> attn_dim
  std::vector<ag::Var> fuse_q_;            // per root type: [attn_dim, 1]
  nn::Linear out_fc_;
  mutable std::vector<HdgIndex> index_cache_;  // the last HDGs passed over (Index)
};

}  // namespace

std::unique_ptr<nau::Layer> MakeMagnnLayer(const nau::ModelSpec& spec, const Options& opt,
                                           std::vector<nau::Metapath> metapaths, int64_t d,
                                           int64_t out, bool last, int index) {
  return std::make_unique<MagnnLayer>(spec, opt, std::move(metapaths), d, out, last, index);
}

}  // namespace fg::udf::magnn
