#include "partition/workload.h"

#include <algorithm>
#include <memory>

#include <google/protobuf/text_format.h>

#include "absl/strings/numbers.h"
#include "proto/config.pb.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/status.h"
#include "hdg/builder.h"
#include "nau/model.h"
#include "partition/union_graph.h"

namespace fg::partition {
namespace {

// Built-in stand-ins for models this binary does not register.
struct BuiltinDefaults {
  int hidden, layers, heads;
  std::map<std::string, std::string> options;
};

const std::map<std::string, BuiltinDefaults>& Builtins() {
  static const auto* builtins = new std::map<std::string, BuiltinDefaults>{
      // PinSage (Ying et al., KDD 2018): importance-pooled top-k random-walk neighbours. Option
      // names and defaults follow udf_examples/pinsage.
      {"pinsage", {64, 2, 1, {{"num_traces", "10"}, {"n_hops", "3"}, {"top_k", "10"}}}},
      // MAGNN (Fu et al., WWW 2020): 64 hidden, 8 heads; as udf_examples/magnn.
      {"magnn", {64, 2, 8, {{"max_instances", "1024"}}}},
  };
  return *builtins;
}

absl::StatusOr<int64_t> IntOption(const std::map<std::string, std::string>& options,
                                  const std::string& name) {
  int64_t v = 0;
  auto it = options.find(name);
  if (it == options.end() || !absl::SimpleAtoi(it->second, &v) || v < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model option '", name, "' expects a non-negative integer, got '",
        it == options.end() ? "" : it->second, "'"));
  }
  return v;
}

// The width of the vectors a layer aggregates (and peers exchange), by model: GCN projects first
// when that narrows the features; PinSage and MAGNN aggregate projected (hidden) vectors; others
// aggregate their input.
int64_t MessageWidth(const std::string& model, int64_t in, int64_t out, int hidden) {
  if (model == "gcn") return std::min(in, out);
  if (model == "pinsage" || model == "magnn") return hidden;
  return in;
}

// Everything BuildWorkload needs about the dataset.
struct Env {
  const graph::Dataset* dataset;
  const Csr* adj;  // union graph
  std::vector<int64_t> type_offsets;
  std::string target;
  int target_index;
  int64_t num_classes;

  int TypeOf(int64_t v) const {
    return static_cast<int>(std::upper_bound(type_offsets.begin(), type_offsets.end(), v) -
                            type_offsets.begin()) - 1;
  }
  int64_t FeatureDim(int t) const {
    auto it = dataset->features.find(dataset->graph.node_types[t]);
    return it == dataset->features.end() || !it->second.defined() ? 0 : it->second.dim(1);
  }
  // The neighbours of v in the union graph whose type is t (a contiguous run: rows are sorted).
  std::pair<const int32_t*, const int32_t*> Neighbors(int64_t v, int t) const {
    const int32_t* b = adj->col() + adj->row_ptr()[v];
    const int32_t* e = adj->col() + adj->row_ptr()[v + 1];
    const int32_t* lo = std::lower_bound(b, e, static_cast<int32_t>(type_offsets[t]));
    const int32_t* hi = std::lower_bound(lo, e, static_cast<int32_t>(type_offsets[t + 1]));
    return {lo, hi};
  }
  std::vector<int32_t> TypeRange(int t) const {
    std::vector<int32_t> ids(type_offsets[t + 1] - type_offsets[t]);
    for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<int32_t>(type_offsets[t] + k);
    return ids;
  }
};

// One layer's HDG with what the cost model needs besides it.
struct LayerHdg {
  std::shared_ptr<const hdg::Hdg> hdg;
  std::vector<int32_t> roots;
  int64_t in = 0, out = 0, message = 0;
  std::vector<int64_t> level_width;  // levels 1..L
  bool decomposable = false;
  // Dense flops per root (Update) and per input-table row (projection before aggregation).
  double root_flops = 0, table_row_flops = 0;
};

// Adds one layer: its dependency structure and its per-vertex work.
void AddLayer(const LayerHdg& lh, const std::vector<int32_t>& table, Workload* w) {
  const hdg::Hdg& h = *lh.hdg;
  const int levels = h.num_levels();
  LayerWorkload lw;
  lw.schema = h.schema().ToString();
  lw.roots = lh.roots;
  lw.in_width = lh.in;
  lw.out_width = lh.out;
  lw.message_width = lh.message;
  lw.decomposable = lh.decomposable;
  // Root index of every node, level by level from the top.
  std::vector<int32_t> node_root(h.level(levels).num_nodes());
  for (size_t i = 0; i < node_root.size(); ++i) node_root[i] = static_cast<int32_t>(i);
  for (int k = levels; k >= 1; --k) {
    const Csr& c = h.level(k).csr();
    const double width = static_cast<double>(lh.level_width[k - 1]);
    lw.nodes_per_level.insert(lw.nodes_per_level.begin(), c.num_rows);
    lw.entries_per_level.insert(lw.entries_per_level.begin(), c.nnz());
    w->hdg_entries += c.nnz();
    std::vector<int32_t> child_root(k > 1 ? c.num_cols : 0, -1);
    for (int64_t i = 0; i < c.num_rows; ++i) {
      const int32_t r = node_root[i];
      const int32_t v = lh.roots[r];
      w->entry_floats[v] += static_cast<double>(c.degree(i)) * width;
      w->row_floats[v] += width;
      if (k > 1) {
        for (int64_t e = c.row_ptr()[i]; e < c.row_ptr()[i + 1]; ++e) child_root[c.col()[e]] = r;
      }
    }
    if (k > 1) node_root = std::move(child_root);
  }
  // Group the bottom level by root (counting sort; stable, so deterministic).
  const Csr& b = h.level(1).csr();
  const size_t num_roots = lh.roots.size();
  lw.root_nodes.assign(num_roots + 1, 0);
  for (int64_t i = 0; i < b.num_rows; ++i) {
    if (node_root[i] >= 0) ++lw.root_nodes[node_root[i] + 1];
  }
  for (size_t r = 0; r < num_roots; ++r) lw.root_nodes[r + 1] += lw.root_nodes[r];
  bool in_order = true;
  for (int64_t i = 0; i < b.num_rows && in_order; ++i) in_order = node_root[i] >= 0 && (i == 0 || node_root[i] >= node_root[i - 1]);
  if (in_order) {
    lw.bottom = b;
  } else {
    std::vector<int64_t> next(lw.root_nodes.begin(), lw.root_nodes.end() - 1);
    std::vector<int64_t> order(lw.root_nodes.back());
    for (int64_t i = 0; i < b.num_rows; ++i) {
      if (node_root[i] >= 0) order[next[node_root[i]]++] = i;
    }
    std::vector<int64_t> offsets{0};
    std::vector<int32_t> indices;
    indices.reserve(b.nnz());
    for (int64_t i : order) {
      indices.insert(indices.end(), b.col() + b.row_ptr()[i], b.col() + b.row_ptr()[i + 1]);
      offsets.push_back(static_cast<int64_t>(indices.size()));
    }
    lw.bottom = Csr::FromVectors(static_cast<int64_t>(order.size()), b.num_cols, offsets, indices);
  }
  // Dense transforms: flops, and the rows they stream in and out.
  for (int32_t v : lh.roots) {
    w->gemm_flops[v] += lh.root_flops;
    w->row_floats[v] += static_cast<double>(lh.in + lh.out);
  }
  if (lh.table_row_flops > 0) {
    for (int32_t v : table) {
      w->gemm_flops[v] += lh.table_row_flops;
      w->row_floats[v] += static_cast<double>(lh.in + lh.message);
    }
  }
  w->layers.push_back(std::move(lw));
}

std::vector<int32_t> AllVertices(int64_t n) {
  std::vector<int32_t> all(n);
  for (int64_t v = 0; v < n; ++v) all[v] = static_cast<int32_t>(v);
  return all;
}

// The layers of a model registered in nau::ModelRegistry, built as the trainer builds them.
absl::Status AddRegisteredLayers(const Env& env, const nau::ModelInfo& info,
                                 const WorkloadOptions& o, Workload* w) {
  const graph::Dataset& ds = *env.dataset;
  nau::VertexSpace space(ds.graph);
  nau::ModelSpec spec;
  spec.dataset = &ds;
  spec.vertices = &space;
  spec.target_type = env.target;
  flexgraph::RunConfig defaults;
  google::protobuf::TextFormat::ParseFromString(info.defaults, &defaults);
  const flexgraph::ModelConfig& d = defaults.model();
  spec.hidden = o.hidden > 0 ? o.hidden : d.has_hidden() ? d.hidden() : 16;
  spec.layers = o.layers > 0 ? o.layers : d.has_layers() ? d.layers() : 2;
  spec.heads = o.heads > 0 ? o.heads : d.has_heads() ? d.heads() : 1;
  spec.num_classes = env.num_classes > 0 ? env.num_classes : spec.hidden;
  spec.dropout = d.has_dropout() ? d.dropout() : 0.5f;
  spec.seed = o.seed;
  spec.options = nau::OptionValues(info.options, o.options);
  std::unique_ptr<nau::Model> model = info.factory();
  FG_RETURN_IF_ERROR(Annotate(model->Build(spec), absl::StrCat("model ", o.model)));

  const int64_t n = space.size();
  std::map<std::string, std::pair<std::shared_ptr<const hdg::Hdg>, size_t>> by_key;
  std::vector<int32_t> table = AllVertices(n);
  int64_t in = spec.FeatureDim(env.target);
  for (int i = 0; i < model->num_layers(); ++i) {
    nau::Layer& layer = model->layer(i);
    LayerHdg lh;
    lh.roots = model->Roots(i, spec);
    const bool last = i == model->num_layers() - 1;
    lh.in = in;
    lh.out = last ? spec.num_classes : spec.hidden;
    lh.message = MessageWidth(o.model, lh.in, lh.out, spec.hidden);
    lh.root_flops = 2.0 * static_cast<double>(lh.in * lh.out);
    lh.table_row_flops = lh.message != lh.in ? 2.0 * static_cast<double>(lh.in * lh.message) : 0;
    lh.decomposable = layer.LevelAggregator(1).decomposable();
    const std::string key = layer.SelectionKey();
    auto it = key.empty() ? by_key.end() : by_key.find(key);
    if (it != by_key.end() && it->second.second == lh.roots.size()) {
      lh.hdg = it->second.first;
    } else {
      nau::SelectContext ctx(&ds, &space, o.seed, 0, i);
      hdg::HdgBuilder builder(layer.Schema(), n);
      FG_ASSIGN_OR_RETURN(hdg::Hdg built,
                          builder.Build(lh.roots, [&](int32_t root, hdg::NeighborWriter& out) {
                            layer.SelectNeighbors(ctx, root, out);
                          }));
      lh.hdg = std::make_shared<const hdg::Hdg>(std::move(built));
      if (!key.empty()) by_key[key] = {lh.hdg, lh.roots.size()};
    }
    // Upper MAGNN levels (intra- and inter-metapath attention) run per head.
    lh.level_width.assign(lh.hdg->num_levels(), lh.message * (o.model == "magnn" ? spec.heads : 1));
    lh.level_width[0] = lh.message;
    AddLayer(lh, table, w);
    table = lh.roots;
    in = lh.out;
  }
  return absl::OkStatus();
}

// PinSage: for each root, `walks` random walks of `walk_length` steps on the union graph; the
// `top_k` most visited vertices of the root's type (ties: smaller id) weighted by visit count.
absl::StatusOr<hdg::Hdg> BuildPinSageHdg(const Env& env, const std::vector<int32_t>& roots,
                                         int64_t walks, int64_t walk_length, int64_t top_k,
                                         uint64_t seed, int layer) {
  const Csr& a = *env.adj;
  hdg::HdgBuilder builder(hdg::SchemaTree::Flat("walk-neighbor", /*weighted=*/true), a.num_rows);
  return builder.Build(roots, [&](int32_t root, hdg::NeighborWriter& out) {
    RandomStream rng(seed, MixKey(0x9175A6E, static_cast<uint64_t>(layer), root));
    const int type = env.TypeOf(root);
    std::vector<int32_t> visits;
    for (int64_t w = 0; w < walks; ++w) {
      int64_t v = root;
      for (int64_t s = 0; s < walk_length; ++s) {
        const int64_t d = a.degree(v);
        if (d == 0) break;
        v = a.col()[a.row_ptr()[v] + static_cast<int64_t>(rng.Below(d))];
        if (v != root && env.TypeOf(v) == type) visits.push_back(static_cast<int32_t>(v));
      }
    }
    std::sort(visits.begin(), visits.end());
    std::vector<std::pair<int32_t, int32_t>> counted;  // (-count, vertex)
    for (size_t i = 0; i < visits.size();) {
      size_t j = i;
      while (j < visits.size() && visits[j] == visits[i]) ++j;
      counted.push_back({-static_cast<int32_t>(j - i), visits[i]});
      i = j;
    }
    const size_t k = std::min<size_t>(counted.size(), top_k);
    std::partial_sort(counted.begin(), counted.begin() + k, counted.end());
    for (size_t i = 0; i < k; ++i) out.Add(counted[i].second, static_cast<float>(-counted[i].first));
  });
}

// MAGNN: metapath instances (r, x, y) with x of type X adjacent to r and y of r's type adjacent to
// x, one metapath per neighbouring type X; when a root has more than `cap` instances of a
// metapath, `cap` distinct ones are drawn uniformly (Floyd's algorithm).
absl::StatusOr<hdg::Hdg> BuildMagnnHdg(const Env& env, const std::vector<int32_t>& roots,
                                       const std::vector<std::pair<int, int>>& metapaths,
                                       int64_t cap, uint64_t seed, int layer) {
  const graph::HeteroGraph& g = env.dataset->graph;
  std::vector<hdg::MetapathType> types;
  for (const auto& [t, x] : metapaths) {
    types.push_back({absl::StrCat(g.node_types[t], "-", g.node_types[x], "-", g.node_types[t]), 3});
  }
  const Csr& a = *env.adj;
  hdg::HdgBuilder builder(hdg::SchemaTree::Metapaths(types), a.num_rows);
  return builder.Build(roots, [&](int32_t root, hdg::NeighborWriter& out) {
    const int t = env.TypeOf(root);
    for (size_t m = 0; m < metapaths.size(); ++m) {
      if (metapaths[m].first != t) continue;
      const auto [xb, xe] = env.Neighbors(root, metapaths[m].second);
      std::vector<int64_t> prefix{0};  // instances through the first k neighbours x
      for (const int32_t* x = xb; x != xe; ++x) {
        const auto [yb, ye] = env.Neighbors(*x, t);
        prefix.push_back(prefix.back() + (ye - yb));
      }
      const int64_t count = prefix.back();
      std::vector<int64_t> picks;
      if (cap == 0 || count <= cap) {
        picks.resize(count);
        for (int64_t i = 0; i < count; ++i) picks[i] = i;
      } else {
        RandomStream rng(seed, MixKey(0x3A6E, static_cast<uint64_t>(layer), root, m));
        for (int64_t j = count - cap; j < count; ++j) {
          const int64_t r = static_cast<int64_t>(rng.Below(j + 1));
          picks.push_back(std::find(picks.begin(), picks.end(), r) == picks.end() ? r : j);
        }
        std::sort(picks.begin(), picks.end());
      }
      size_t xi = 0;
      for (int64_t p : picks) {
        while (prefix[xi + 1] <= p) ++xi;
        const int32_t x = xb[xi];
        const int32_t y = env.Neighbors(x, t).first[p - prefix[xi]];
        out.AddInstance(static_cast<int>(m), {root, x, y});
      }
    }
  });
}

absl::Status AddBuiltinLayers(const Env& env, const BuiltinDefaults& d, const WorkloadOptions& o,
                              Workload* w) {
  std::map<std::string, std::string> options = d.options;
  for (const auto& [k, v] : o.options) {
    if (!options.count(k)) {
      std::vector<std::string> known;
      for (const auto& [name, def] : d.options) known.push_back(name);
      return absl::InvalidArgumentError(absl::StrCat("model ", o.model, ": unknown option '", k,
                                                     "' (known: ", absl::StrJoin(known, ", "), ")"));
    }
    options[k] = v;
  }
  const int hidden = o.hidden > 0 ? o.hidden : d.hidden;
  const int num_layers = o.layers > 0 ? o.layers : d.layers;
  const int heads = o.heads > 0 ? o.heads : d.heads;
  const graph::HeteroGraph& g = env.dataset->graph;
  const int num_types = static_cast<int>(g.node_types.size());
  const int64_t n = env.type_offsets.back();
  const int64_t classes = env.num_classes > 0 ? env.num_classes : hidden;
  const bool magnn = o.model == "magnn";

  // Metapaths T-X-T for every pair of adjacent types (MAGNN).
  std::vector<std::pair<int, int>> metapaths;
  if (magnn) {
    std::vector<std::vector<bool>> adjacent(num_types, std::vector<bool>(num_types, false));
    for (const graph::Relation& r : g.relations) {
      const int s = g.TypeIndex(r.src_type), t = g.TypeIndex(r.dst_type);
      if (r.by_src.nnz() == 0) continue;
      adjacent[s][t] = adjacent[t][s] = true;
    }
    for (int t = 0; t < num_types; ++t) {
      for (int x = 0; x < num_types; ++x) {
        if (adjacent[t][x]) metapaths.push_back({t, x});
      }
    }
  }
  auto has_metapath = [&](int t) {
    return std::any_of(metapaths.begin(), metapaths.end(), [&](auto& m) { return m.first == t; });
  };
  // Input projection of every vertex with features (MAGNN projects each type to `hidden`).
  int64_t in = env.FeatureDim(env.target_index);
  if (in == 0) in = hidden;
  if (magnn) {
    for (int t = 0; t < num_types; ++t) {
      const double flops = 2.0 * static_cast<double>(env.FeatureDim(t)) * hidden;
      const double rows = static_cast<double>(env.FeatureDim(t) + hidden);
      for (int64_t v = env.type_offsets[t]; v < env.type_offsets[t + 1]; ++v) {
        w->gemm_flops[v] += flops;
        w->row_floats[v] += rows;
      }
    }
    in = hidden;
  }
  std::vector<int32_t> table = AllVertices(n);
  for (int i = 0; i < num_layers; ++i) {
    const bool last = i == num_layers - 1;
    LayerHdg lh;
    // Roots: the target type in the last layer (and in every PinSage layer on typed graphs, whose
    // walks keep the root's type); every type that has a metapath before that (MAGNN).
    if (last || (!magnn && num_types > 1)) {
      lh.roots = env.TypeRange(env.target_index);
    } else {
      for (int t = 0; t < num_types; ++t) {
        if (!magnn || has_metapath(t)) {
          std::vector<int32_t> r = env.TypeRange(t);
          lh.roots.insert(lh.roots.end(), r.begin(), r.end());
        }
      }
    }
    lh.in = in;
    lh.out = last ? classes : hidden;
    lh.message = MessageWidth(o.model, lh.in, lh.out, hidden);
    lh.decomposable = !magnn;  // MAGNN's instance encoder is a custom aggregator
    if (magnn) {
      FG_ASSIGN_OR_RETURN(int64_t cap, IntOption(options, "max_instances"));
      FG_ASSIGN_OR_RETURN(hdg::Hdg h, BuildMagnnHdg(env, lh.roots, metapaths, cap, o.seed, i));
      lh.hdg = std::make_shared<const hdg::Hdg>(std::move(h));
      // Instances encode hidden-wide vectors; intra- and inter-metapath attention run per head.
      lh.level_width = {hidden, static_cast<int64_t>(hidden) * heads,
                        static_cast<int64_t>(hidden) * heads};
      lh.root_flops = 2.0 * static_cast<double>(hidden) * heads * lh.out;
    } else {
      FG_ASSIGN_OR_RETURN(int64_t walks, IntOption(options, "num_traces"));
      FG_ASSIGN_OR_RETURN(int64_t length, IntOption(options, "n_hops"));
      FG_ASSIGN_OR_RETURN(int64_t top_k, IntOption(options, "top_k"));
      FG_ASSIGN_OR_RETURN(hdg::Hdg h,
                          BuildPinSageHdg(env, lh.roots, walks, length, top_k, o.seed, i));
      lh.hdg = std::make_shared<const hdg::Hdg>(std::move(h));
      lh.level_width = {lh.message};
      // Neighbour transform Q (in -> hidden) on every input row, then W over [self || pooled].
      lh.table_row_flops = 2.0 * static_cast<double>(lh.in) * lh.message;
      lh.root_flops = 2.0 * static_cast<double>(lh.in + lh.message) * lh.out;
    }
    AddLayer(lh, table, w);
    table = lh.roots;
    in = lh.out;
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> BuiltinWorkloadModels() {
  std::vector<std::string> names;
  for (const auto& [name, d] : Builtins()) names.push_back(name);
  return names;
}

absl::StatusOr<Workload> BuildWorkload(const graph::Dataset& dataset, const Csr& union_graph,
                                       const WorkloadOptions& options) {
  Env env;
  env.dataset = &dataset;
  env.adj = &union_graph;
  env.type_offsets = TypeOffsets(dataset.graph);
  env.target = options.target_type.empty() ? dataset.LabeledType() : options.target_type;
  env.target_index = dataset.graph.TypeIndex(env.target);
  if (env.target_index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("target type '", env.target, "' is not a node type of dataset ", dataset.name));
  }
  auto classes = dataset.num_classes.find(env.target);
  env.num_classes = classes == dataset.num_classes.end() ? 0 : classes->second;
  if (union_graph.num_rows != env.type_offsets.back()) {
    return absl::InvalidArgumentError("union graph does not match the dataset's vertex space");
  }

  Workload w;
  w.model = options.model;
  w.num_vertices = env.type_offsets.back();
  w.entry_floats.assign(w.num_vertices, 0.0);
  w.row_floats.assign(w.num_vertices, 0.0);
  w.gemm_flops.assign(w.num_vertices, 0.0);
  const nau::ModelInfo* info = options.source == WorkloadSource::kBuiltin
                                   ? nullptr
                                   : nau::ModelRegistry::Get().Find(options.model);
  if (info != nullptr) {
    w.source = "registered";
    FG_RETURN_IF_ERROR(AddRegisteredLayers(env, *info, options, &w));
    return w;
  }
  auto builtin = options.source == WorkloadSource::kRegistered ? Builtins().end()
                                                               : Builtins().find(options.model);
  if (builtin == Builtins().end()) {
    std::vector<std::string> known = nau::ModelRegistry::Get().Names();
    for (const auto& name : BuiltinWorkloadModels()) known.push_back(name);
    return absl::InvalidArgumentError(absl::StrCat("model: unknown model '", options.model,
                                                   "' (known: ", absl::StrJoin(known, ", "), ")"));
  }
  w.source = "built-in";
  FG_RETURN_IF_ERROR(AddBuiltinLayers(env, builtin->second, options, &w));
  return w;
}

}  // namespace fg::partition
