// MAGNN's options and building blocks (encoders, rotations, the two attentions); the layer that
// puts them together is in magnn.cc. See magnn.h for the equations.
#include "udf_examples/magnn/magnn.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/instance_functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/status.h"

namespace fg::udf::magnn {

const char* EncoderName(Encoder e) {
  switch (e) {
    case Encoder::kMean:
      return "mean";
    case Encoder::kLinear:
      return "linear";
    case Encoder::kRotate:
      return "rotate";
  }
  return "?";
}

absl::StatusOr<Encoder> ParseEncoder(const std::string& name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "rotate0") return Encoder::kRotate;
  for (Encoder e : {Encoder::kMean, Encoder::kLinear, Encoder::kRotate}) {
    if (n == EncoderName(e)) return e;
  }
  return absl::InvalidArgumentError(absl::StrCat("model option 'encoder': unknown encoder '", name,
                                                 "' (choices: mean, linear, rotate)"));
}

absl::StatusOr<Options> Options::FromSpec(const nau::ModelSpec& spec, bool neighbors) {
  Options o;
  const nau::OptionValues& opt = spec.options;
  o.neighbors = neighbors;
  o.metapaths = opt.String("metapaths");
  if (!neighbors) {
    FG_ASSIGN_OR_RETURN(o.encoder, ParseEncoder(opt.String("encoder")));
  }
  FG_ASSIGN_OR_RETURN(o.featureless, nau::ParseFeatureless(opt.String("featureless")));
  FG_ASSIGN_OR_RETURN(o.memory_budget_mb, opt.Int("memory_budget_mb"));
  const std::string cap = neighbors ? "max_neighbors" : "max_instances";
  FG_ASSIGN_OR_RETURN(o.max_instances, opt.Int(cap));
  FG_ASSIGN_OR_RETURN(int64_t resample, opt.Int("resample"));
  if (neighbors) {
    const std::string w = absl::AsciiStrToLower(opt.String("weighting"));
    if (w != "paths" && w != "distinct") {
      return absl::InvalidArgumentError(absl::StrCat(
          "model option 'weighting': unknown weighting '", w, "' (choices: paths, distinct)"));
    }
    o.path_weighted = w == "paths";
  }
  FG_ASSIGN_OR_RETURN(o.attn_dim, opt.Int("attn_dim"));
  double attn_dropout = spec.dropout;
  if (opt.Has("attn_dropout")) {
    FG_ASSIGN_OR_RETURN(attn_dropout, opt.Float("attn_dropout"));
  }
  FG_ASSIGN_OR_RETURN(double slope, opt.Float("slope"));
  auto bad = [](const std::string& option, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("model option '", option, "': ", why));
  };
  if (o.max_instances < 0) return bad(cap, "must be 0 (all) or positive");
  if (resample < 0) return bad("resample", "must be 0 (sample once) or positive");
  if (o.memory_budget_mb < 1) return bad("memory_budget_mb", "must be positive");
  if (o.attn_dim < 1) return bad("attn_dim", "must be positive");
  if (!(attn_dropout >= 0 && attn_dropout < 1)) return bad("attn_dropout", "must be in [0, 1)");
  if (!(slope >= 0)) return bad("slope", "must not be negative");
  o.resample = static_cast<int>(resample);
  o.attn_dropout = static_cast<float>(attn_dropout);
  o.slope = static_cast<float>(slope);
  return o;
}

// --- building blocks ---------------------------------------------------------------------------

ag::Var UnitRotations(const ag::Var& raw) {
  const int64_t rows = raw.rows(), d = raw.row_width();
  FG_CHECK(d % 2 == 0) << "UnitRotations: width " << d << " is not even";
  ag::Var pairs = ag::Reshape(raw, {rows * d / 2, 2});
  return ag::Reshape(ag::RowL2Normalize(pairs), {rows, d});
}

ag::Var PathRotations(const ag::Var& unit, const nau::Metapath& mp) {
  const int64_t d = unit.row_width();
  const Device device = unit.value().device();
  const ag::Var conj_sign(ops::ComplexFull(d / 2, 1.0f, -1.0f).To(device));
  std::vector<ag::Var> rows = {ag::Var(ops::ComplexFull(d / 2, 1.0f, 0.0f).To(device))};
  for (const nau::MetapathStep& step : mp.steps) {
    ag::Var r = ag::GatherRows(unit, Tensor::FromVector(std::vector<int32_t>{step.relation}));
    // Back towards the root, a forward step is walked dst -> src: the conjugate rotation.
    if (step.forward) r = ag::Mul(r, conj_sign);
    rows.push_back(ag::ComplexMul(rows.back(), r));
  }
  return ag::Reshape(ag::Concat(rows), {mp.length(), d});
}

ag::Var MeanEncode(const ag::Var& x) { return ag::MeanMiddle(x); }

ag::Var RotateEncode(const ag::Var& x, const ag::Var& path_rotations) {
  return ag::MeanMiddle(ag::ComplexMul(x, path_rotations));
}

ag::Var InstanceAttention(const SparseMatrixPtr& groups, const ag::Var& instances,
                          bool shared_across_heads, const ag::Var& center_scores,
                          const ag::Var& instance_scores, int heads, float slope,
                          float attn_dropout, uint64_t seed, bool training,
                          const Tensor& entry_ids) {
  ag::Var e = ag::LeakyRelu(ag::SddmmAdd(groups, center_scores, instance_scores), slope);
  ag::Var alpha = ag::EdgeSoftmax(groups, e);  // [entries, heads]: sums to 1 per group and head
  // Masks keyed by (global root, metapath, instance index): independent of the partitioning.
  alpha = ag::Dropout(alpha, attn_dropout, seed, training, entry_ids);
  // Shared encodings: head h weights the same rows into output columns [h d, (h+1) d).
  // Per-head encodings: head h's weights scale head h's slice.
  ag::Var out = shared_across_heads && heads > 1
                    ? ag::HeadWeightedSum(groups, instances, alpha)
                    : ag::Spmm(groups, instances, ops::SpmmReduce::kSum, alpha);
  return ag::Elu(out);
}

ag::Var MetapathAttention(const std::vector<ag::Var>& h, const nn::Linear& fc, const ag::Var& q,
                          Tensor* beta, const nau::LayerContext* ctx) {
  FG_CHECK(!h.empty()) << "MetapathAttention: no metapaths";
  const int64_t n = h[0].rows();
  const nau::LayerContext alone;
  std::vector<ag::Var> scores;
  for (const ag::Var& hp : h) {
    // s_P = q · mean_v tanh(W h_v^P + b), the mean over all roots.
    ag::Var mean = (ctx != nullptr ? *ctx : alone).MeanOverRoots(ag::Tanh(fc.Forward(hp)));
    scores.push_back(ag::MatMul(ag::Reshape(mean, {1, fc.out_features()}), q));
  }
  const int64_t p = static_cast<int64_t>(h.size());
  ag::Var s = ag::Reshape(ag::Concat(scores), {p, 1});
  ag::Var b = ag::SegmentSoftmax(Tensor::FromVector(std::vector<int64_t>{0, p}), s);  // [P, 1]
  if (beta != nullptr) *beta = b.value().Clone();
  ag::Var out;
  for (int64_t k = 0; k < p; ++k) {
    ag::Var bk = ag::GatherRows(b, Tensor::FromVector(std::vector<int32_t>(n, static_cast<int32_t>(k))));
    ag::Var term = ag::ScaleRows(h[k], bk);
    out = out.defined() ? ag::Add(out, term) : term;
  }
  return out;
}

}  // namespace fg::udf::magnn
