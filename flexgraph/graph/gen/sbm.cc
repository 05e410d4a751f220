#include "flexgraph/graph/gen/sbm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/builder.h"

namespace fg::graph {

namespace {
// Stream ids: what a draw is for, mixed with its index.
enum : uint64_t { kClassStream = 1, kEdgeStream = 2, kFeatureStream = 3, kMeanStream = 4, kSplitStream = 5 };
const CsrBuildOptions kUndirected{.deduplicate = true, .remove_self_loops = true, .add_reverse_edges = true};
}  // namespace

void SbmOptions::SetBlockProbabilities(double p_in, double p_out) {
  const double s = static_cast<double>(nodes) / classes;
  const double in = p_in * (s - 1), out = p_out * (nodes - s);
  avg_degree = in + out;
  homophily = avg_degree > 0 ? in / avg_degree : 0.0;
}

double SbmOptions::PIn() const {
  const double s = static_cast<double>(nodes) / classes;
  return s > 1 ? avg_degree * homophily / (s - 1) : 0.0;
}

double SbmOptions::POut() const {
  const double s = static_cast<double>(nodes) / classes;
  return nodes > s ? avg_degree * (1 - homophily) / (nodes - s) : 0.0;
}

Tensor ClassFeatures(const Tensor& labels, int64_t classes, int64_t features, double noise,
                     uint64_t seed) {
  const int64_t n = labels.numel();
  std::vector<float> means(classes * features);
  for (int64_t c = 0; c < classes; ++c) {
    RandomStream rng(seed, MixKey(kMeanStream, c));
    for (int64_t j = 0; j < features; ++j) means[c * features + j] = rng.Normal();
  }
  Tensor x = Tensor::Empty({n, features});
  float* xp = x.f32();
  const int64_t* lp = labels.i64();
  ParallelFor(0, n, [&](int64_t i) {
    RandomStream rng(seed, MixKey(kFeatureStream, i));
    const float* mu = means.data() + lp[i] * features;
    for (int64_t j = 0; j < features; ++j) {
      xp[i * features + j] = mu[j] + static_cast<float>(noise) * rng.Normal();
    }
  });
  return x;
}

Split RandomSplit(int64_t n, double train_fraction, double valid_fraction, uint64_t seed) {
  std::vector<std::pair<uint64_t, int64_t>> order(n);
  ParallelFor(0, n, [&](int64_t i) {
    RandomStream rng(seed, MixKey(kSplitStream, i));
    order[i] = {rng.NextU64(), i};
  });
  std::sort(order.begin(), order.end());
  const int64_t n_train = std::llround(n * train_fraction);
  const int64_t n_valid = std::min(n - n_train, static_cast<int64_t>(std::llround(n * valid_fraction)));
  auto part = [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> ids;
    for (int64_t k = lo; k < hi; ++k) ids.push_back(order[k].second);
    std::sort(ids.begin(), ids.end());
    return Tensor::FromVector(ids, {static_cast<int64_t>(ids.size())});
  };
  Split s;
  s.train = part(0, n_train);
  s.valid = part(n_train, n_train + n_valid);
  s.test = part(n_train + n_valid, n);
  return s;
}

absl::StatusOr<Dataset> GenerateSbm(const SbmOptions& o) {
  if (o.nodes < 2 || o.nodes > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("sbm: nodes must be in [2, 2^31), got ", o.nodes));
  }
  if (o.classes < 1 || o.classes > o.nodes) {
    return absl::InvalidArgumentError(absl::StrCat("sbm: classes must be in [1, nodes], got ", o.classes));
  }
  if (o.features < 0 || o.avg_degree < 0 || o.homophily < 0 || o.homophily > 1 ||
      o.feature_noise < 0 || o.train_fraction < 0 || o.valid_fraction < 0 ||
      o.train_fraction + o.valid_fraction > 1) {
    return absl::InvalidArgumentError(
        "sbm: need features >= 0, avg_degree >= 0, homophily in [0, 1], noise >= 0 and "
        "train + valid fractions in [0, 1]");
  }
  const int64_t n = o.nodes, k = o.classes;
  Tensor labels = Tensor::Empty({n}, DType::kInt64);
  int64_t* lab = labels.i64();
  ParallelFor(0, n, [&](int64_t i) {
    RandomStream rng(o.seed, MixKey(kClassStream, i));
    lab[i] = static_cast<int64_t>(rng.Below(k));
  });
  std::vector<std::vector<int32_t>> members(k);
  for (int64_t i = 0; i < n; ++i) members[lab[i]].push_back(static_cast<int32_t>(i));
  std::vector<int64_t> nonempty;
  for (int64_t c = 0; c < k; ++c) {
    if (!members[c].empty()) nonempty.push_back(c);
  }
  const int64_t m = std::llround(n * o.avg_degree / 2.0);
  std::vector<int64_t> src(m), dst(m);
  ParallelFor(0, m, [&](int64_t e) {
    RandomStream rng(o.seed, MixKey(kEdgeStream, e));
    const int64_t u = static_cast<int64_t>(rng.Below(n));
    const int64_t c = lab[u];
    int64_t c2 = c;
    if (rng.Uniform() >= o.homophily && nonempty.size() > 1) {
      do {
        c2 = nonempty[rng.Below(nonempty.size())];
      } while (c2 == c);
    }
    const auto& pool = members[c2];
    src[e] = u;
    dst[e] = pool[rng.Below(pool.size())];
  });
  Dataset ds;
  ds.name = "sbm";
  FG_ASSIGN_OR_RETURN(ds.graph, BuildHomogeneousGraph(n, src.data(), dst.data(), m, Tensor(),
                                                      kUndirected));
  ds.features["node"] = ClassFeatures(labels, k, o.features, o.feature_noise, o.seed);
  ds.labels["node"] = labels;
  ds.num_classes["node"] = k;
  ds.split_name = "random";
  ds.splits["node"] = RandomSplit(n, o.train_fraction, o.valid_fraction, o.seed);
  return ds;
}

}  // namespace fg::graph
