// MAGNN (Fu, Zhang, Meng, King: "MAGNN: Metapath Aggregated Graph Neural Network for Heterogeneous
// Graph Embedding", WWW 2020) as NAU UDFs — the INHA model class. One layer, for a root v:
//
//   NeighborSelection  the instances of every metapath P starting at v's type (walks
//                      v = p_0 - p_1 - ... - p_{L-1}), at most max_instances per (v, P), uniformly
//                      sampled beyond that. HDG: vertices -> instances (arity L) -> (v, P) groups
//                      -> v (arity = number of metapaths).
//   Level 1 (dense)    intra-metapath instance encoder h_p = f_θ(h_{p_0}, ..., h_{p_{L-1}}) over the
//                      [instances, L, d] batch of each metapath (uniform arity; streamed by a fused
//                      gather-encode, never materialised): mean, linear (mean then W_P) or RotatE
//                      (each vertex rotated in complex space by the product of the relation
//                      rotations on its way back to the root, then the mean).
//   Level 2 (graph)    multi-head instance attention per (v, P):
//                      e_p^h = LeakyReLU(a_P^h · [h_v || h_p]),  α = segment softmax over p,
//                      h_v^P = ELU(||_h Σ_p α_p^h h_p^h).
//   Level 3 (dense)    inter-metapath attention per root type T:
//                      s_P = mean_{v of T} q_T · tanh(M_T h_v^P + b_T),  β = softmax_P(s),
//                      h_v = Σ_P β_P h_v^P.
//   Update             h'_v = W_o h_v + b_o (ELU on hidden layers).
// Node content enters through type-specific projections (Model::Input): h_v = W_{type(v)} x_v + b
// (a learned embedding for types without features), with dropout before the first layer.
// Hidden layers compute every vertex with its own type's metapaths; the last layer the target
// type's. Options (spec.options): metapaths ("auto" or e.g. "M-D-M,M-A-M"; see nau/metapath.h —
// on the command line separate them with ';' since --model_opt splits on ','), encoder
// (mean|linear|rotate), max_instances (per root and metapath, uniformly sampled beyond; 0 = all),
// resample (epochs between resampling capped instances; 0 = once), attn_dim, attn_dropout, slope.
//
// The building blocks below are pure functions of autograd Vars (tests check their gradients).
// Thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/nn/module.h"
#include "nau/metapath.h"
#include "nau/context.h"
#include "nau/model.h"
#include "nau/typed_input.h"

namespace fg::udf::magnn {

enum class Encoder { kMean, kLinear, kRotate };
const char* EncoderName(Encoder e);
// "mean", "linear" or "rotate" (also "rotate0", MAGNN's name); errors list the choices.
absl::StatusOr<Encoder> ParseEncoder(const std::string& name);

// Model options (spec.options), with MAGNN's IMDB defaults.
struct Options {
  // HAN: each root's metapath-based neighbours (instances of one vertex, the neighbour;
  // max_instances caps them: option max_neighbors) instead of metapath instances; no encoder.
  bool neighbors = false;
  // HAN (option weighting): a neighbour enters the attention once per metapath instance joining
  // it (max_instances instances sampled uniformly), so uniform attention is the row-normalised
  // metapath mean; false: each distinct neighbour once (HAN's paper), max_instances of them
  // sampled uniformly.
  bool path_weighted = true;
  std::string metapaths = "auto";  // see nau/metapath.h; "auto" = nau::DefaultMetapaths
  Encoder encoder = Encoder::kRotate;
  int64_t max_instances = 128;     // per (root, metapath); 0 = all
  int resample = 0;                // resample capped instances every k epochs; 0 = sample once
  int64_t attn_dim = 128;          // inter-metapath attention vector dimension
  float attn_dropout = 0.5f;       // dropout on instance attention weights (default: dropout)
  float slope = 0.2f;              // LeakyReLU slope of the instance attention scores
  nau::Featureless featureless = nau::Featureless::kEmbedding;  // types without features
  int64_t memory_budget_mb = 2048; // the automatic metapath choice keeps what fits

  static absl::StatusOr<Options> FromSpec(const nau::ModelSpec& spec, bool neighbors = false);
};

// --- building blocks ---------------------------------------------------------------------------
// The complex product, the fused instance encoder and per-head weighted sums are framework ops
// (flexgraph/autograd/instance_functions.h: ag::ComplexMul, ag::EncodeInstances,
// ag::HeadWeightedSum).
// Unit complex numbers from raw parameters [R, d]: every (re, im) pair divided by its modulus.
ag::Var UnitRotations(const ag::Var& raw);
// [L, d] rotations of the positions of an instance of `mp` towards its root (position 0):
// row 0 is 1; row i multiplies row i-1 by the rotation of step i-1 walked back towards the root —
// the relation's rotation r when the metapath walks it backward (dst -> src), conj(r) when
// forward. `unit` holds one rotation per relation of the graph ([relations, d]). For a
// symmetric metapath such as M-D-M the end points are not rotated (r · conj(r) = 1).
ag::Var PathRotations(const ag::Var& unit, const nau::Metapath& mp);
// Instance encoders over gathered instances x [n, L, d] -> [n, d].
ag::Var MeanEncode(const ag::Var& x);
ag::Var RotateEncode(const ag::Var& x, const ag::Var& path_rotations);

// Multi-head instance attention over the (root, metapath) groups of an HDG level (rows =
// groups, columns = instances). `instances` is [num_instances, d] (one encoding shared by the
// heads, shared_across_heads) or [num_instances, heads * d] (per-head encodings, head h in columns
// [h d, (h+1) d)); `center_scores` [groups, heads]
// holds a_center^h · h_v of each group's root and `instance_scores` [num_instances, heads] holds
// a_inst^h · h_p. Returns ELU(||_h Σ_p α_p^h h_p^h), [groups, heads * d]; empty groups give 0.
// `attn_dropout` drops attention weights in training with the given seed; entry e's mask is keyed
// by entry_ids[e] (int64; undefined: e).
ag::Var InstanceAttention(const SparseMatrixPtr& groups, const ag::Var& instances,
                          bool shared_across_heads, const ag::Var& center_scores,
                          const ag::Var& instance_scores, int heads, float slope,
                          float attn_dropout, uint64_t seed, bool training,
                          const Tensor& entry_ids = Tensor());

// Inter-metapath attention over per-metapath embeddings h[P] ([n, D] each, same roots):
// s_P = mean_v q · tanh(h_v^P W + b), β = softmax_P(s), returns Σ_P β_P h^P. `fc` maps D to the
// attention dimension, q is [attn_dim, 1]. Writes β to *beta when given. The mean over v covers
// all roots of the layer (LayerContext::MeanOverRoots of `ctx`, when given).
ag::Var MetapathAttention(const std::vector<ag::Var>& h, const nn::Linear& fc, const ag::Var& q,
                          Tensor* beta = nullptr, const nau::LayerContext* ctx = nullptr);

// One MAGNN layer over `metapaths` (those starting at a type it has roots of); d: input width,
// out: output width.
std::unique_ptr<nau::Layer> MakeMagnnLayer(const nau::ModelSpec& spec, const Options& opt,
                                           std::vector<nau::Metapath> metapaths, int64_t d,
                                           int64_t out, bool last, int index);

// Memory one instance of a metapath of `length` vertices takes in one layer, forward and backward
// (HDG entries, its encoding, attention scores and weights, their gradients), with `metapaths`
// metapaths in the layer. The linear encoder keeps the instance mean and a heads x hidden encoding
// (and its copy into the layer's rows) where the others keep one hidden-wide encoding.
double BytesPerInstance(int length, int64_t hidden, int heads, int metapaths, Encoder encoder);

// The registered models: "magnn", and "han" (the same layers over metapath-based neighbours).
std::unique_ptr<nau::Model> MakeMagnn();
std::unique_ptr<nau::Model> MakeHan();

}  // namespace fg::udf::magnn
