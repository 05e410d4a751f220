#include "nau/metapath.h"

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"

namespace fg::nau {
namespace {


std::string Lower(const std::string& s) { return absl::AsciiStrToLower(s); }

std::string TypeList(const graph::HeteroGraph& g) { return absl::StrJoin(g.node_types, ", "); }

// Resolves one token to a node type: a full name, else a unique prefix (case-insensitive).
absl::StatusOr<int> ResolveType(const std::string& token, const std::string& metapath,
                                const graph::HeteroGraph& g) {
  const std::string t = Lower(token);
  std::vector<int> prefixed;
  for (int i = 0; i < static_cast<int>(g.node_types.size()); ++i) {
    const std::string name = Lower(g.node_types[i]);
    if (name == t) return i;
    if (name.compare(0, t.size(), t) == 0) prefixed.push_back(i);
  }
  if (prefixed.size() == 1) return prefixed[0];
  if (prefixed.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("metapath '", metapath, "': '", token,
                                                   "' names no node type (types: ", TypeList(g),
                                                   ")"));
  }
  std::vector<std::string> names;
  for (int i : prefixed) names.push_back(g.node_types[i]);
  return absl::InvalidArgumentError(absl::StrCat("metapath '", metapath, "': '", token,
                                                 "' is ambiguous (", absl::StrJoin(names, ", "),
                                                 "); write more of the type name"));
}

// Every way of walking one relation from type a to type b.
std::vector<MetapathStep> StepsBetween(const graph::HeteroGraph& g, int a, int b) {
  std::vector<MetapathStep> steps;
  for (int r = 0; r < static_cast<int>(g.relations.size()); ++r) {
    const graph::Relation& rel = g.relations[r];
    const int src = g.TypeIndex(rel.src_type), dst = g.TypeIndex(rel.dst_type);
    if (src == a && dst == b) steps.push_back({r, true});
    // A symmetric relation is the same walk in both directions.
    if (src == b && dst == a && !(a == b && rel.symmetric)) steps.push_back({r, false});
  }
  return steps;
}

std::string StepName(const graph::HeteroGraph& g, MetapathStep s) {
  const graph::Relation& rel = g.relations[s.relation];
  return absl::StrCat(rel.Key(), s.forward ? " (forward)" : " (backward)");
}

std::string CanonicalName(const graph::HeteroGraph& g, const std::vector<int>& types) {
  std::vector<std::string> parts;
  for (int t : types) parts.push_back(TypeToken(g, t));
  return absl::StrJoin(parts, "-");
}

Metapath Make(const graph::HeteroGraph& g, std::vector<int> types,
              std::vector<MetapathStep> steps) {
  Metapath mp;
  mp.name = CanonicalName(g, types);
  mp.node_types = std::move(types);
  mp.steps = std::move(steps);
  return mp;
}

MetapathStep Reverse(MetapathStep s) { return {s.relation, !s.forward}; }

int64_t SaturatingAdd(int64_t a, int64_t b) { return std::min(kMaxInstanceCount, a + b); }

}  // namespace

std::string TypeToken(const graph::HeteroGraph& g, int t) {
  const std::string& name = g.node_types[t];
  if (name.empty()) return name;
  const char initial = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));
  for (int u = 0; u < static_cast<int>(g.node_types.size()); ++u) {
    const std::string& other = g.node_types[u];
    if (u != t && !other.empty() &&
        std::tolower(static_cast<unsigned char>(other[0])) == initial) {
      return name;
    }
  }
  return std::string(1, static_cast<char>(std::toupper(static_cast<unsigned char>(name[0]))));
}

std::string Metapath::Describe(const graph::HeteroGraph& g) const {
  std::string s = g.node_types[node_types[0]];
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string& rel = g.relations[steps[i].relation].name;
    absl::StrAppend(&s, steps[i].forward ? absl::StrCat(" -", rel, "-> ")
                                         : absl::StrCat(" <-", rel, "- "),
                    g.node_types[node_types[i + 1]]);
  }
  return s;
}

absl::StatusOr<Metapath> ParseMetapath(const std::string& text, const graph::HeteroGraph& g) {
  const std::string name(absl::StripAsciiWhitespace(text));
  std::vector<std::string> tokens = absl::StrSplit(name, '-');
  if (tokens.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metapath '", name, "': expected node types joined by '-', e.g. 'M-D-M' (types: ",
        TypeList(g), ")"));
  }
  std::vector<int> types;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string token(absl::StripAsciiWhitespace(tokens[i]));
    if (token.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("metapath '", name, "': empty node type at position ", i + 1));
    }
    FG_ASSIGN_OR_RETURN(int t, ResolveType(token, name, g));
    types.push_back(t);
  }
  std::vector<MetapathStep> steps;
  for (size_t i = 0; i + 1 < types.size(); ++i) {
    const std::vector<MetapathStep> found = StepsBetween(g, types[i], types[i + 1]);
    const std::string step = absl::StrCat("step ", i + 1, " (", g.node_types[types[i]], " -> ",
                                          g.node_types[types[i + 1]], ")");
    if (found.empty()) {
      std::vector<std::string> keys;
      for (const graph::Relation& r : g.relations) keys.push_back(r.Key());
      return absl::InvalidArgumentError(absl::StrCat("metapath '", name, "': ", step,
                                                     " matches no relation (relations: ",
                                                     absl::StrJoin(keys, ", "), ")"));
    }
    if (found.size() > 1) {
      std::vector<std::string> names;
      for (MetapathStep s : found) names.push_back(StepName(g, s));
      return absl::InvalidArgumentError(absl::StrCat("metapath '", name, "': ", step,
                                                     " is ambiguous, it matches ",
                                                     absl::StrJoin(names, " and ")));
    }
    steps.push_back(found[0]);
  }
  return Make(g, std::move(types), std::move(steps));
}

absl::StatusOr<std::vector<Metapath>> ParseMetapathList(const std::string& text,
                                                        const graph::HeteroGraph& g) {
  if (Lower(std::string(absl::StripAsciiWhitespace(text))) == "auto") return DefaultMetapaths(g);
  std::vector<Metapath> out;
  for (absl::string_view part : absl::StrSplit(text, absl::ByAnyChar(",; \t\n"), absl::SkipEmpty())) {
    FG_ASSIGN_OR_RETURN(Metapath mp, ParseMetapath(std::string(part), g));
    for (const Metapath& seen : out) {
      if (seen.name == mp.name) {
        return absl::InvalidArgumentError(
            absl::StrCat("metapaths '", text, "': '", std::string(part), "' repeats ", seen.name));
      }
    }
    out.push_back(std::move(mp));
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metapaths '", text, "': no metapath given (e.g. 'M-D-M,M-A-M' or 'auto')"));
  }
  return out;
}

std::vector<Metapath> DefaultMetapaths(const graph::HeteroGraph& g) {
  const int types = static_cast<int>(g.node_types.size());
  auto unique_step = [&](int a, int b, MetapathStep* s) {
    const std::vector<MetapathStep> found = StepsBetween(g, a, b);
    if (found.size() != 1) return false;
    *s = found[0];
    return true;
  };
  std::vector<Metapath> out;
  for (int t = 0; t < types; ++t) {
    std::vector<Metapath> longer;
    for (int x = 0; x < types; ++x) {
      MetapathStep tx;
      if (x == t || !unique_step(t, x, &tx)) continue;
      out.push_back(Make(g, {t, x, t}, {tx, Reverse(tx)}));
      for (int y = 0; y < types; ++y) {
        MetapathStep xy;
        if (y == t || y == x || !unique_step(x, y, &xy)) continue;
        longer.push_back(Make(g, {t, x, y, x, t}, {tx, xy, Reverse(xy), Reverse(tx)}));
      }
    }
    out.insert(out.end(), longer.begin(), longer.end());
  }
  return out;
}

std::vector<int64_t> SampleInstanceIndices(int64_t total, int64_t k, RandomStream* rng) {
  // Floyd's algorithm: k distinct indices, uniformly.
  std::unordered_set<int64_t> chosen;
  chosen.reserve(static_cast<size_t>(k) * 2);
  for (int64_t j = total - k; j < total; ++j) {
    const int64_t t = static_cast<int64_t>(rng->Below(static_cast<uint64_t>(j) + 1));
    if (!chosen.insert(t).second) chosen.insert(j);
  }
  std::vector<int64_t> sorted(chosen.begin(), chosen.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

MetapathEnumerator::MetapathEnumerator(const graph::HeteroGraph* g, const VertexSpace* space,
                                       std::vector<Metapath> metapaths)
    : g_(g), space_(space), metapaths_(std::move(metapaths)) {
  suffix_.resize(metapaths_.size());
  for (size_t m = 0; m < metapaths_.size(); ++m) {
    const Metapath& mp = metapaths_[m];
    const int len = mp.length();
    auto& counts = suffix_[m];
    counts.resize(len);
    counts[len - 1].assign(g_->num_nodes[mp.node_types[len - 1]], 1);
    for (int i = len - 2; i >= 0; --i) {
      counts[i].assign(g_->num_nodes[mp.node_types[i]], 0);
      const std::vector<int64_t>& next = counts[i + 1];
      int64_t* here = counts[i].data();
      ParallelFor(0, static_cast<int64_t>(counts[i].size()), [&](int64_t v) {
        int64_t c = 0;
        for (int32_t u : Next(mp, i, static_cast<int32_t>(v))) c = SaturatingAdd(c, next[u]);
        here[v] = c;
      });
    }
  }
}

std::span<const int32_t> MetapathEnumerator::Next(const Metapath& mp, int s, int32_t v) const {
  const graph::Relation& rel = g_->relations[mp.steps[s].relation];
  const Csr& c = mp.steps[s].forward ? rel.by_src : rel.by_dst;
  return {c.col() + c.row_ptr()[v], static_cast<size_t>(c.degree(v))};
}

int64_t MetapathEnumerator::Count(int m, int32_t start) const { return suffix_[m][0][start]; }

void MetapathEnumerator::Decode(int m, int32_t start, int64_t index, int32_t* path) const {
  const Metapath& mp = metapaths_[m];
  int32_t v = start;
  path[0] = v;
  for (int i = 0; i + 1 < mp.length(); ++i) {
    const std::vector<int64_t>& next = suffix_[m][i + 1];
    for (int32_t u : Next(mp, i, v)) {
      if (index < next[u]) {
        v = u;
        break;
      }
      index -= next[u];
    }
    path[i + 1] = v;
  }
}

int64_t MetapathEnumerator::Enumerate(int m, int32_t start, int64_t max_instances,
                                      RandomStream* rng, std::vector<int32_t>* out) const {
  const Metapath& mp = metapaths_[m];
  const int len = mp.length();
  const int64_t total = Count(m, start);
  if (total == 0) return 0;
  std::vector<int64_t> base(len);
  for (int i = 0; i < len; ++i) base[i] = space_->type_offset(mp.node_types[i]);
  std::vector<int32_t> path(len);
  auto emit = [&] {
    for (int i = 0; i < len; ++i) out->push_back(static_cast<int32_t>(base[i] + path[i]));
  };
  if (max_instances > 0 && total > max_instances) {
    // Floyd's algorithm: max_instances distinct instance indices, uniformly; then decode each
    // (sorted, so the sample keeps depth-first order).
    FG_CHECK(rng != nullptr) << "MetapathEnumerator::Enumerate: sampling needs a RandomStream";
    for (int64_t index : SampleInstanceIndices(total, max_instances, rng)) {
      Decode(m, start, index, path.data());
      emit();
    }
    return max_instances;
  }
  // Depth-first walk, pruning vertices with no complete suffix.
  std::vector<std::span<const int32_t>> nbrs(len);
  std::vector<size_t> pos(len, 0);
  path[0] = start;
  int depth = 0;  // path[0..depth] fixed
  int64_t emitted = 0;
  if (len == 1) {
    emit();
    return 1;
  }
  nbrs[0] = Next(mp, 0, start);
  pos[0] = 0;
  while (depth >= 0) {
    if (pos[depth] == nbrs[depth].size()) {
      --depth;
      continue;
    }
    const int32_t u = nbrs[depth][pos[depth]++];
    if (suffix_[m][depth + 1][u] == 0) continue;
    path[depth + 1] = u;
    if (depth + 2 == len) {
      emit();
      ++emitted;
      continue;
    }
    ++depth;
    nbrs[depth] = Next(mp, depth, u);
    pos[depth] = 0;
  }
  return emitted;
}

int64_t MetapathEnumerator::Endpoints(int m, int32_t start, int64_t max_neighbors,
                                      RandomStream* rng, std::vector<int32_t>* out,
                                      std::vector<int64_t>* paths) const {
  const Metapath& mp = metapaths_[m];
  if (Count(m, start) == 0) return 0;
  // The distinct vertices at each position with the number of walks reaching them.
  std::vector<std::pair<int32_t, int64_t>> frontier = {{start, 1}}, next;
  for (int i = 0; i + 1 < mp.length(); ++i) {
    next.clear();
    const std::vector<int64_t>& alive = suffix_[m][i + 1];
    for (const auto& [v, c] : frontier) {
      for (int32_t u : Next(mp, i, v)) {
        if (alive[u] > 0) next.emplace_back(u, c);
      }
    }
    std::sort(next.begin(), next.end());
    frontier.clear();
    for (const auto& [u, c] : next) {
      if (!frontier.empty() && frontier.back().first == u) {
        frontier.back().second = SaturatingAdd(frontier.back().second, c);
      } else {
        frontier.emplace_back(u, c);
      }
    }
  }
  const int64_t base = space_->type_offset(mp.node_types.back());
  const int64_t total = static_cast<int64_t>(frontier.size());
  auto emit = [&](int64_t k) {
    out->push_back(static_cast<int32_t>(base + frontier[k].first));
    if (paths != nullptr) paths->push_back(frontier[k].second);
  };
  if (max_neighbors > 0 && total > max_neighbors) {
    FG_CHECK(rng != nullptr) << "MetapathEnumerator::Endpoints: sampling needs a RandomStream";
    for (int64_t k : SampleInstanceIndices(total, max_neighbors, rng)) emit(k);
    return max_neighbors;
  }
  for (int64_t k = 0; k < total; ++k) emit(k);
  return total;
}

}  // namespace fg::nau
