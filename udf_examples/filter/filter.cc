// The edge filter of the Exa.TrkX pipeline (Ju et al. 2021, "Performance of a geometric deep
// learning pipeline for HL-LHC particle tracking": embedding, filter, GNN): a cheap edge classifier
// run before the Interaction Network, whose low cut (high efficiency) removes most fake candidate
// edges of a dense event so that the GNN trains on a graph it fits in memory with. `flexgraph
// filter` applies a trained filter and writes the filtered dataset (runtime/cli/filter_command.cc).
//
//   h = MLP_node(x)                                               hits
//   K rounds (model.layers - 1 of them; 0 = the pair MLP alone):
//     m_uv = MLP_msg([h_u, h_v, e_uv]) per entry (both directions of an edge)
//     h_v  = h_v + MLP_upd([h_v, sum_u m_uv])
//   logit_k = MLP_out([h_inner, h_outer, e_k]) once per edge k, given to both its entries
//
// e = MLP_edge(the edge's features) (6 for tracking: dr, dphi, dz, deta, phi slopes; with
// triplets=1, the default, also the 6 triplet features of triplets.h: how well the best edge
// continuing it through each hit agrees with it, which a pair of hits alone cannot tell; encoded
// where it is used, never kept); every MLP is Linear-LayerNorm-SiLU blocks (interaction/mlp.h),
// the head's last Linear bare. Unlike the
// Interaction Network there is no edge state: the per-entry rows of a round are summed into the
// hits and dropped. They are computed in pieces of `chunk` entries (whole destination rows), each
// under ag::Checkpoint when training, so that memory is the hits' rows per round plus one piece's
// rows, not rows per entry: the filter trains on events whose candidate edges the GNN cannot hold.
// Thread-compatible.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/checkpoint.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/status.h"
#include "flexgraph/ops/ops.h"
#include "nau/model.h"
#include "udf_examples/filter/triplets.h"
#include "udf_examples/interaction/mlp.h"

namespace fg::udf {
namespace {

// Entries [k0, k1) of whole destination rows [r0, r1) of a Csr, or edges [k0, k1) of a list.
struct Piece {
  int64_t k0, k1, r0, r1;
};

// Pieces of at most `chunk` entries (more only for a single row that has more).
std::vector<Piece> RowPieces(const Csr& a, int64_t chunk) {
  std::vector<Piece> out;
  const int64_t* ptr = a.row_ptr();
  int64_t r0 = 0;
  while (r0 < a.num_rows) {
    int64_t r1 = r0 + 1;
    while (r1 < a.num_rows && ptr[r1 + 1] - ptr[r0] <= chunk) ++r1;
    out.push_back({ptr[r0], ptr[r1], r0, r1});
    r0 = r1;
  }
  return out;
}

Tensor Int32(const std::vector<int32_t>& v, Device device) {
  return Tensor::FromVector(v).To(device);
}

// The original edge of each entry of `idx` (entry_edges values: k, M + k reversed, -1 none) as
// int32 rows of edge_feat; -1 maps to `none`.
std::vector<int32_t> EdgeRows(const int64_t* entry_edges, int64_t begin, int64_t end, int64_t m,
                              int32_t none) {
  std::vector<int32_t> rows(end - begin);
  for (int64_t k = begin; k < end; ++k) {
    const int64_t e = entry_edges[k];
    rows[k - begin] = e < 0 ? none : static_cast<int32_t>(e % m);
  }
  return rows;
}

class EdgeFilter : public nau::Model {
 public:
  absl::Status Build(const nau::ModelSpec& spec) override {
    const graph::Dataset& ds = *spec.dataset;
    if (!ds.IsGraphSet() || !ds.graphs->edge_feat.defined() || !ds.graph.IsHomogeneous()) {
      return absl::InvalidArgumentError(
          absl::StrCat("filter: dataset ", ds.name, " is not a set of graphs with edge features"));
    }
    FG_ASSIGN_OR_RETURN(int64_t blocks, spec.options.Int("mlp_layers"));
    FG_ASSIGN_OR_RETURN(int64_t norm, spec.options.Int("layernorm"));
    FG_ASSIGN_OR_RETURN(chunk_, spec.options.Int("chunk"));
    if (blocks < 1 || blocks > 8) {
      return absl::InvalidArgumentError(absl::StrCat("mlp_layers: ", blocks, " outside [1, 8]"));
    }
    if (chunk_ < 1)
      return absl::InvalidArgumentError(absl::StrCat("chunk: ", chunk_, " is not positive"));
    FG_ASSIGN_OR_RETURN(int64_t triplets, spec.options.Int("triplets"));
    if (triplets != 0 && triplets != 1) {
      return absl::InvalidArgumentError(absl::StrCat("triplets: ", triplets, " is not 0 or 1"));
    }
    triplets_ = triplets == 1;
    if (triplets_ && (ds.graphs->edge_feat.dim(1) != 6 || !ds.graph.relations[0].symmetric)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "filter: triplets=1 needs a tracking dataset (6 edge features, reverse edges); dataset ",
          ds.name, " has ", ds.graphs->edge_feat.dim(1),
          " edge features (triplets=0 filters without)"));
    }
    if (spec.num_classes != 1) {
      return absl::InvalidArgumentError("filter: the dataset's edge labels are not binary");
    }
    const int64_t h = spec.hidden, f = spec.FeatureDim("node"),
                  fe = ds.graphs->edge_feat.dim(1) + (triplets_ ? kTripletFeatures : 0);
    const int b = static_cast<int>(blocks);
    const bool ln = norm != 0;
    node_encoder_ = std::make_unique<Mlp>(f, h, h, b, ln, false, spec.seed, 1);
    AddChild("node_encoder", *node_encoder_);
    edge_encoder_ = std::make_unique<Mlp>(fe, h, h, b, ln, false, spec.seed, 2);
    AddChild("edge_encoder", *edge_encoder_);
    for (int i = 0; i + 1 < spec.layers; ++i) {
      messages_.push_back(std::make_unique<Mlp>(3 * h, h, h, b, ln, false, spec.seed, 10 + 2 * i));
      updates_.push_back(std::make_unique<Mlp>(2 * h, h, h, b, ln, false, spec.seed, 11 + 2 * i));
      AddChild(absl::StrCat("message", i), *messages_.back());
      AddChild(absl::StrCat("update", i), *updates_.back());
    }
    head_ = std::make_unique<Mlp>(3 * h, h, 1, b, ln, true, spec.seed, 3);
    AddChild("head", *head_);
    return absl::OkStatus();
  }
  int num_layers() const override { return 0; }
  nau::Layer& layer(int i) override {
    FG_CHECK(false) << "filter: no NAU layers (layer " << i << ")";
    std::abort();
  }
  nau::Task task() const override { return nau::Task::kEdgeClassification; }

  ag::Var Input(nau::LayerContext&, const nau::ModelSpec& spec) override {
    return node_encoder_->Forward(ag::Var(spec.dataset->features.at("node")));
  }

  ag::Var Head(nau::LayerContext&, const nau::ModelSpec& spec, const ag::Var& input) override {
    const graph::GraphSet& gs = *spec.dataset->graphs;
    const Csr& a = spec.dataset->Adjacency();
    FG_CHECK(!a.has_int64_indices()) << "filter: a graph batch beyond 2^31 vertices";
    // The edges' input features, [M, fe]: computed, not learned, so kept once per batch.
    const Tensor table =
        triplets_ ? ops::Concat({gs.edge_feat, TripletFeatures(gs, a)}) : gs.edge_feat;
    ag::Var h = input;
    for (size_t i = 0; i < messages_.size(); ++i) {
      const ag::Var nbr = Round(*messages_[i], a, gs, table, h);
      h = ag::Add(updates_[i]->Forward(ag::Concat({h, nbr})), h);
    }
    return EntryLogits(gs, a, table, h);
  }

 private:
  // [xs | xd | e] W + b of `mlp` split over the parts, for the pieces' gathered rows: ps = xs W_s
  // and pd = xd W_d computed once on vertex rows.
  struct Split {
    ag::Var ps, pd;
  };
  Split SplitFirst(const Mlp& mlp, const ag::Var& h) const {
    const int64_t d = h.row_width();
    return {ag::MatMul(h, mlp.FirstWeightRows(0, d)), ag::MatMul(h, mlp.FirstWeightRows(d, d))};
  }
  // mlp over rows src, dst of the split product and the encoded edge features rows `feat`.
  ag::Var PieceRows(const Mlp& mlp, const ag::Var& ps, const ag::Var& pd, const Tensor& src,
                    const Tensor& dst, const Tensor& feat) const {
    const int64_t d = mlp.in_features() / 3;
    ag::Var y = ag::Add(ag::GatherRows(ps, src), ag::GatherRows(pd, dst));
    y = ag::Add(y,
                ag::MatMul(edge_encoder_->Forward(ag::Var(feat)), mlp.FirstWeightRows(2 * d, d)));
    return mlp.Rest(ag::AddBias(y, mlp.FirstBias()));
  }
  std::vector<ag::Var> Maybe(const ag::CheckpointFn& fn, const std::vector<ag::Var>& in) const {
    return ag::GradEnabled() ? ag::Checkpoint(fn, in) : fn(in);
  }

  // One round's messages summed into every destination row: [rows, hidden].
  ag::Var Round(const Mlp& mlp, const Csr& a, const graph::GraphSet& gs, const Tensor& table,
                const ag::Var& h) const {
    const Split s = SplitFirst(mlp, h);
    const Device device = h.value().device();
    const int64_t m = gs.num_edges();
    std::vector<ag::Var> parts;
    for (const Piece& p : RowPieces(a, chunk_)) {
      auto fn = [this, &mlp, &a, &gs, table, p, m, device](const std::vector<ag::Var>& in) {
        std::vector<int32_t> src(a.col() + p.k0, a.col() + p.k1), dst(p.k1 - p.k0);
        std::vector<int64_t> offsets(p.r1 - p.r0 + 1);
        for (int64_t r = p.r0; r < p.r1; ++r) {
          offsets[r - p.r0] = a.row_ptr()[r] - p.k0;
          for (int64_t k = a.row_ptr()[r]; k < a.row_ptr()[r + 1]; ++k)
            dst[k - p.k0] = static_cast<int32_t>(r);
        }
        offsets.back() = p.k1 - p.k0;
        const Tensor feat = FeatureRows(table, EdgeRows(gs.entry_edges.i64(), p.k0, p.k1, m, -1));
        const ag::Var msg =
            PieceRows(mlp, in[0], in[1], Int32(src, device), Int32(dst, device), feat.To(device));
        return std::vector<ag::Var>{ag::SegmentReduce(Tensor::FromVector(offsets).To(device), msg,
                                                      ops::SegmentReduceOp::kSum)};
      };
      parts.push_back(Maybe(fn, {s.ps, s.pd})[0]);
    }
    if (parts.empty()) return ag::Var(Tensor::Zeros({0, h.row_width()}, DType::kFloat32, device));
    return ag::ConcatRows(parts);
  }

  // Rows of the edge feature table (row -1: zeros, an added self loop's).
  static Tensor FeatureRows(const Tensor& table, const std::vector<int32_t>& rows) {
    const int64_t f = table.dim(1);
    Tensor out = Tensor::Zeros({static_cast<int64_t>(rows.size()), f});
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] >= 0) std::copy_n(table.f32() + rows[i] * f, f, out.f32() + i * f);
    }
    return out;
  }

  // The head once per original edge (inner, outer as stored), then one row per Csr entry.
  ag::Var EntryLogits(const graph::GraphSet& gs, const Csr& a, const Tensor& table,
                      const ag::Var& h) const {
    const Split s = SplitFirst(*head_, h);
    const Device device = h.value().device();
    const int64_t m = gs.num_edges();
    std::vector<ag::Var> parts;
    for (int64_t k0 = 0; k0 < m; k0 += chunk_) {
      const int64_t k1 = std::min(m, k0 + chunk_);
      auto fn = [this, &gs, table, k0, k1, device](const std::vector<ag::Var>& in) {
        std::vector<int32_t> src(k1 - k0), dst(k1 - k0), rows(k1 - k0);
        for (int64_t k = k0; k < k1; ++k) {
          src[k - k0] = static_cast<int32_t>(gs.edges.i64()[2 * k]);
          dst[k - k0] = static_cast<int32_t>(gs.edges.i64()[2 * k + 1]);
          rows[k - k0] = static_cast<int32_t>(k);
        }
        return std::vector<ag::Var>{PieceRows(*head_, in[0], in[1], Int32(src, device),
                                              Int32(dst, device),
                                              FeatureRows(table, rows).To(device))};
      };
      parts.push_back(Maybe(fn, {s.ps, s.pd})[0]);
    }
    parts.push_back(ag::Var(Tensor::Zeros({1, 1}, DType::kFloat32, device)));  // row m: no edge
    const ag::Var per_edge = ag::ConcatRows(parts);
    return ag::GatherRows(
        per_edge,
        Int32(EdgeRows(gs.entry_edges.i64(), 0, a.nnz(), m, static_cast<int32_t>(m)), device));
  }

  int64_t chunk_ = 0;
  bool triplets_ = true;
  std::unique_ptr<Mlp> node_encoder_, edge_encoder_, head_;
  std::vector<std::unique_ptr<Mlp>> messages_, updates_;
};

}  // namespace

FG_REGISTER_MODEL(
    filter,
    "Exa.TrkX edge filter: a cheap edge classifier run before the Interaction Network (flexgraph "
    "filter keeps the edges above a low cut); an MLP on [h_inner, h_outer, edge features] after "
    "layers - 1 rounds of edge-conditioned message passing into the hits, computed in pieces",
    R"pb(model { hidden: 64 layers: 1 dropout: 0 }
         train { epochs: 20 lr: 0.003 batch_size: 1 })pb",
    {{"mlp_layers", nau::OptionType::kInt, "2", "Linear-LayerNorm-SiLU blocks per MLP"},
     {"layernorm", nau::OptionType::kInt, "1", "LayerNorm in the MLPs: 0 or 1"},
     {"triplets", nau::OptionType::kInt, "1",
      "1: add the triplet features (the best continuing edge's agreement on each side; tracking "
      "datasets), 0: the edge features alone"},
     {"chunk", nau::OptionType::kInt, "131072",
      "entries per piece: each piece's rows are recomputed in the backward pass, not kept"},
     {"pos_weight", nau::OptionType::kFloat, "20",
      "edge task: weight of a true edge in the loss (high: a filter is cut for high efficiency)"},
     {"class_weights", nau::OptionType::kString, "",
      "edge task, multi-class: not used (binary labels)"},
     {"cut", nau::OptionType::kFloat, "0.5", "edge task: an edge is kept when its score > cut"}},
    [] { return std::make_unique<EdgeFilter>(); });

}  // namespace fg::udf
