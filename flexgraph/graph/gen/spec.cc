#include "flexgraph/graph/gen/spec.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/builder.h"
#include "flexgraph/graph/gen/rmat.h"
#include "flexgraph/graph/gen/sbm.h"
#include "flexgraph/graph/gen/trackml.h"

namespace fg::graph {

namespace {

// key=value pairs after "kind:"; every key must be listed in `known`.
absl::StatusOr<std::map<std::string, double>> ParseParams(const std::string& spec,
                                                          const std::string& kind,
                                                          const std::vector<std::string>& known) {
  std::map<std::string, double> params;
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) return params;
  for (absl::string_view kv : absl::StrSplit(spec.substr(colon + 1), ',', absl::SkipWhitespace())) {
    const std::vector<std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    const std::string key(absl::StripAsciiWhitespace(p[0]));
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(spec, ": unknown ", kind, " parameter '", key,
                                                     "' (known: ", absl::StrJoin(known, ", "), ")"));
    }
    double v;
    if (p.size() != 2 || !absl::SimpleAtod(absl::StripAsciiWhitespace(p[1]), &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(spec, ": ", kind, " parameter '", key, "' needs a numeric value"));
    }
    params[key] = v;
  }
  return params;
}

absl::StatusOr<int64_t> IntParam(const std::map<std::string, double>& p, const std::string& key,
                                 int64_t def, const std::string& spec) {
  auto it = p.find(key);
  if (it == p.end()) return def;
  if (it->second != static_cast<double>(static_cast<int64_t>(it->second))) {
    return absl::InvalidArgumentError(absl::StrCat(spec, ": '", key, "' must be an integer"));
  }
  return static_cast<int64_t>(it->second);
}

double Param(const std::map<std::string, double>& p, const std::string& key, double def) {
  auto it = p.find(key);
  return it == p.end() ? def : it->second;
}

absl::StatusOr<Dataset> Sbm(const std::string& spec) {
  FG_ASSIGN_OR_RETURN(auto p, ParseParams(spec, "sbm", {"nodes", "classes", "features", "avg_degree",
                                                         "homophily", "noise", "p_in", "p_out",
                                                         "train", "valid", "seed"}));
  SbmOptions o;
  FG_ASSIGN_OR_RETURN(o.nodes, IntParam(p, "nodes", o.nodes, spec));
  FG_ASSIGN_OR_RETURN(o.classes, IntParam(p, "classes", o.classes, spec));
  FG_ASSIGN_OR_RETURN(o.features, IntParam(p, "features", o.features, spec));
  FG_ASSIGN_OR_RETURN(int64_t seed, IntParam(p, "seed", 1, spec));
  o.seed = static_cast<uint64_t>(seed);
  o.avg_degree = Param(p, "avg_degree", o.avg_degree);
  o.homophily = Param(p, "homophily", o.homophily);
  o.feature_noise = Param(p, "noise", o.feature_noise);
  o.train_fraction = Param(p, "train", o.train_fraction);
  o.valid_fraction = Param(p, "valid", o.valid_fraction);
  if (p.count("p_in") != 0 || p.count("p_out") != 0) {
    if (p.count("p_in") == 0 || p.count("p_out") == 0) {
      return absl::InvalidArgumentError(absl::StrCat(spec, ": give both p_in and p_out"));
    }
    o.SetBlockProbabilities(p["p_in"], p["p_out"]);
  }
  FG_ASSIGN_OR_RETURN(Dataset ds, GenerateSbm(o));
  return ds;
}

absl::StatusOr<Dataset> Rmat(const std::string& spec) {
  FG_ASSIGN_OR_RETURN(auto p, ParseParams(spec, "rmat", {"scale", "edge_factor", "features",
                                                          "classes", "noise", "a", "b", "c",
                                                          "train", "valid", "seed"}));
  RmatOptions o;
  FG_ASSIGN_OR_RETURN(int64_t scale, IntParam(p, "scale", o.scale, spec));
  FG_ASSIGN_OR_RETURN(int64_t ef, IntParam(p, "edge_factor", o.edge_factor, spec));
  FG_ASSIGN_OR_RETURN(int64_t features, IntParam(p, "features", 64, spec));
  FG_ASSIGN_OR_RETURN(int64_t classes, IntParam(p, "classes", 8, spec));
  FG_ASSIGN_OR_RETURN(int64_t seed, IntParam(p, "seed", 1, spec));
  if (scale < 1 || scale > 30 || ef < 1 || ef > 1024 || features < 0 || classes < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        spec, ": need 1 <= scale <= 30, 1 <= edge_factor <= 1024, features >= 0, classes >= 1"));
  }
  o.scale = static_cast<int>(scale);
  o.edge_factor = static_cast<int>(ef);
  o.seed = static_cast<uint64_t>(seed);
  o.a = Param(p, "a", o.a);
  o.b = Param(p, "b", o.b);
  o.c = Param(p, "c", o.c);
  if (o.a < 0 || o.b < 0 || o.c < 0 || o.a + o.b + o.c > 1) {
    return absl::InvalidArgumentError(absl::StrCat(spec, ": need a, b, c >= 0 and a + b + c <= 1"));
  }
  const int64_t n = int64_t{1} << o.scale;
  const std::vector<Edge> edges = GenerateRmatEdges(o);
  const int64_t m = static_cast<int64_t>(edges.size());
  std::vector<int64_t> src(m), dst(m);
  for (int64_t e = 0; e < m; ++e) {
    src[e] = edges[e].first;
    dst[e] = edges[e].second;
  }
  Dataset ds;
  ds.name = absl::StrCat("rmat", o.scale);
  FG_ASSIGN_OR_RETURN(ds.graph, BuildHomogeneousGraph(n, src.data(), dst.data(), m, Tensor(),
                                                      {.deduplicate = true,
                                                       .remove_self_loops = true,
                                                       .add_reverse_edges = true}));
  // Random classes from the SBM's class stream, then class-correlated features.
  SbmOptions classes_only;
  classes_only.nodes = n;
  classes_only.classes = classes;
  classes_only.features = 0;
  classes_only.avg_degree = 0;
  classes_only.train_fraction = Param(p, "train", 0.1);
  classes_only.valid_fraction = Param(p, "valid", 0.1);
  classes_only.seed = o.seed;
  FG_ASSIGN_OR_RETURN(Dataset labels, GenerateSbm(classes_only));
  ds.labels["node"] = labels.labels["node"];
  ds.num_classes["node"] = classes;
  ds.features["node"] = ClassFeatures(ds.labels["node"], classes, features, Param(p, "noise", SbmOptions().feature_noise), o.seed);
  ds.split_name = "random";
  ds.splits["node"] = labels.splits["node"];
  return ds;
}

absl::StatusOr<Dataset> Trackml(const std::string& spec) {
  FG_ASSIGN_OR_RETURN(auto p, ParseParams(spec, "trackml",
                                          {"events", "particles", "noise", "seed", "pt_min",
                                           "pt_max", "pt_slope", "eta_max", "vertex_xy", "vertex_z",
                                           "bfield", "material", "ineff", "smear", "phi_slope",
                                           "z0_max", "deta_max", "train", "valid"}));
  TrackmlOptions o;
  FG_ASSIGN_OR_RETURN(o.events, IntParam(p, "events", o.events, spec));
  FG_ASSIGN_OR_RETURN(int64_t seed, IntParam(p, "seed", 1, spec));
  if (seed < 0) return absl::InvalidArgumentError(absl::StrCat(spec, ": 'seed' must be >= 0"));
  o.seed = static_cast<uint64_t>(seed);
  o.particles = Param(p, "particles", o.particles);
  o.noise = Param(p, "noise", o.noise);
  o.pt_min = Param(p, "pt_min", o.pt_min);
  o.pt_max = Param(p, "pt_max", o.pt_max);
  o.pt_slope = Param(p, "pt_slope", o.pt_slope);
  o.eta_max = Param(p, "eta_max", o.eta_max);
  o.vertex_xy = Param(p, "vertex_xy", o.vertex_xy);
  o.vertex_z = Param(p, "vertex_z", o.vertex_z);
  o.bfield = Param(p, "bfield", o.bfield);
  o.material = Param(p, "material", o.material);
  o.ineff = Param(p, "ineff", o.ineff);
  o.smear = Param(p, "smear", o.smear);
  o.cuts.phi_slope_max = Param(p, "phi_slope", o.cuts.phi_slope_max);
  o.cuts.z0_max = Param(p, "z0_max", o.cuts.z0_max);
  o.cuts.deta_max = Param(p, "deta_max", o.cuts.deta_max);
  o.train = Param(p, "train", o.train);
  o.valid = Param(p, "valid", o.valid);
  absl::Status valid = ValidateTrackmlOptions(o);
  if (!valid.ok()) return absl::InvalidArgumentError(absl::StrCat(spec, ": ", valid.message()));
  return GenerateTrackml(o);
}

}  // namespace

bool IsGeneratorSpec(const std::string& s) {
  for (const char* kind : {"sbm", "rmat", "trackml"}) {
    const std::string k = kind;
    if (s == k || s.rfind(k + ":", 0) == 0) return true;
  }
  return false;
}

absl::StatusOr<Dataset> GenerateFromSpec(const std::string& spec) {
  if (spec == "sbm" || spec.rfind("sbm:", 0) == 0) return Sbm(spec);
  if (spec == "rmat" || spec.rfind("rmat:", 0) == 0) return Rmat(spec);
  if (spec == "trackml" || spec.rfind("trackml:", 0) == 0) return Trackml(spec);
  return absl::InvalidArgumentError(
      absl::StrCat(spec, ": not a generator spec (sbm:..., rmat:... or trackml:...)"));
}

}  // namespace fg::graph
