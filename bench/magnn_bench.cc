// MAGNN on IMDB (../shared/data/imdb) and on a synthetic IMDB-like graph `--scale` times larger:
// metapath instances per (layer, metapath) and how many roots the cap truncated, HDG bytes, HDG
// build time, training epoch time with its stage shares, and each epoch time next to its roofline
// floor (dense flops at 180 GFLOP/s + streamed bytes at 40 GB/s on 2 cores; DESIGN.md).
//
// The synthetic graph keeps IMDB's shape: per movie one director and three actors, drawn with
// Zipf-like popularity (heavy-tailed like IMDB's: actors in up to ~50 movies, directors ~20),
// 3 genres that directors and actors lean towards, bag-of-words features of `--features`
// dimensions for every type, and a 10/10/80 split of the movies. It is written to a binary cache
// file and trained through the Trainer like any dataset.
//
//   magnn_bench [--scale 10] [--features 3065] [--epochs 5] [--layers 2] [--max_instances 1024]
//               [--encoder rotate] [--threads 2] [--imdb ../shared/data/imdb] [--only imdb|synthetic]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/graph/builder.h"
#include "flexgraph/graph/io/cache.h"
#include "hdg/builder.h"
#include "nau/metapath.h"
#include "bench/ceilings.h"
#include "runtime/train/trainer.h"

namespace {

using namespace fg;

// Samples member i of a class with probability proportional to 1 / ((i mod 500) + 1)^s: a Zipf
// skew within every block of 500, so degrees stay IMDB-like (actors up to ~50 movies, directors
// up to ~20) at any scale instead of growing with the pool.
class Popularity {
 public:
  Popularity(int64_t n, double s) : cumulative_(n) {
    double c = 0;
    for (int64_t i = 0; i < n; ++i) cumulative_[i] = c += 1.0 / std::pow(i % 500 + 1.0, s);
  }
  int64_t Draw(RandomStream& rng) const {
    const double u = rng.Uniform() * cumulative_.back();
    const int64_t i = std::upper_bound(cumulative_.begin(), cumulative_.end(), u) -
                      cumulative_.begin();
    return std::min<int64_t>(i, static_cast<int64_t>(cumulative_.size()) - 1);
  }

 private:
  std::vector<double> cumulative_;
};

// Bag-of-words rows: ~`words` ones, a third of them from the class's own vocabulary block.
Tensor BagOfWords(const std::vector<int>& cls, int64_t dims, int words, uint64_t seed) {
  const int64_t n = static_cast<int64_t>(cls.size());
  Tensor t = Tensor::Zeros({n, dims});
  ParallelFor(0, n, [&](int64_t i) {
    RandomStream rng(seed, static_cast<uint64_t>(i));
    float* row = t.f32() + i * dims;
    const int64_t block = dims / 3;
    for (int w = 0; w < words; ++w) {
      const int64_t j = rng.Uniform() < 0.33f ? cls[i] * block + rng.Below(block)
                                              : static_cast<int64_t>(rng.Below(dims));
      row[j] = 1.0f;
    }
  });
  return t;
}

graph::Dataset MakeImdbLike(int scale, int64_t features, uint64_t seed) {
  const int64_t movies = 4274 * scale, directors = 2079 * scale, actors = 5252 * scale;
  const int classes = 3;
  RandomStream rng(seed, 1);
  auto classes_of = [&](int64_t n) {
    std::vector<int> c(n);
    for (auto& x : c) x = static_cast<int>(rng.Below(classes));
    return c;
  };
  std::vector<int> movie_cls = classes_of(movies), dir_cls = classes_of(directors),
                   act_cls = classes_of(actors);
  auto members = [&](const std::vector<int>& cls) {
    std::vector<std::vector<int64_t>> m(classes);
    for (size_t i = 0; i < cls.size(); ++i) m[cls[i]].push_back(static_cast<int64_t>(i));
    return m;
  };
  const auto dir_members = members(dir_cls), act_members = members(act_cls);
  std::vector<Popularity> dir_pop, act_pop;
  for (int c = 0; c < classes; ++c) {
    dir_pop.emplace_back(static_cast<int64_t>(dir_members[c].size()), 0.5);
    act_pop.emplace_back(static_cast<int64_t>(act_members[c].size()), 0.6);
  }
  auto pick = [&](const std::vector<std::vector<int64_t>>& m, const std::vector<Popularity>& pop,
                  int cls, double same) {
    const int c = rng.Uniform() < same ? cls : static_cast<int>(rng.Below(classes));
    return m[c][pop[c].Draw(rng)];
  };
  std::vector<int64_t> md_src, md_dst, ma_src, ma_dst;
  for (int64_t m = 0; m < movies; ++m) {
    md_src.push_back(m);
    md_dst.push_back(pick(dir_members, dir_pop, movie_cls[m], 0.6));
    std::vector<int64_t> cast;
    while (cast.size() < 3) {
      const int64_t a = pick(act_members, act_pop, movie_cls[m], 0.5);
      if (std::find(cast.begin(), cast.end(), a) == cast.end()) cast.push_back(a);
    }
    for (int64_t a : cast) {
      ma_src.push_back(m);
      ma_dst.push_back(a);
    }
  }
  graph::Dataset ds;
  ds.name = absl::StrCat("imdb-like-x", scale);
  ds.graph.node_types = {"movie", "director", "actor"};
  ds.graph.num_nodes = {movies, directors, actors};
  for (auto [name, dst_type, n_dst, src, dst] :
       {std::tuple{"directed_by", "director", directors, &md_src, &md_dst},
        std::tuple{"starring", "actor", actors, &ma_src, &ma_dst}}) {
    auto r = graph::BuildRelation("movie", name, dst_type, movies, n_dst, src->data(),
                                  dst->data(), static_cast<int64_t>(src->size()), nullptr,
                                  Tensor(), {});
    FG_CHECK(r.ok()) << r.status();
    ds.graph.relations.push_back(std::move(r).value());
  }
  ds.features["movie"] = BagOfWords(movie_cls, features, 15, seed + 1);
  ds.features["director"] = BagOfWords(dir_cls, features, 15, seed + 2);
  ds.features["actor"] = BagOfWords(act_cls, features, 15, seed + 3);
  std::vector<int64_t> labels(movie_cls.begin(), movie_cls.end());
  ds.labels["movie"] = Tensor::FromVector(labels);
  ds.num_classes["movie"] = classes;
  std::vector<int64_t> order(movies);
  for (int64_t i = 0; i < movies; ++i) order[i] = i;
  for (int64_t i = movies - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i + 1)]);
  const int64_t n_train = movies / 10, n_valid = movies / 10;
  auto ids = [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> v(order.begin() + lo, order.begin() + hi);
    std::sort(v.begin(), v.end());
    return Tensor::FromVector(v);
  };
  ds.split_name = "random";
  ds.splits["movie"] = {ids(0, n_train), ids(n_train, n_train + n_valid),
                        ids(n_train + n_valid, movies)};
  return ds;
}

struct LayerReport {
  double flops = 0, bytes = 0;
};

// Rebuilds every layer's HDG as the Trainer does, printing instances per metapath, the roots the
// cap truncated, HDG bytes and build time; returns the per-epoch dense flops and streamed bytes
// of the model (forward + backward ~ 3 passes).
LayerReport DescribeHdgs(runtime::Trainer& trainer, int64_t max_instances) {
  const graph::Dataset& ds = trainer.dataset();
  const flexgraph::ModelConfig& o = trainer.config().model();
  nau::VertexSpace space(ds.graph);
  nau::ModelSpec spec;
  spec.dataset = &ds;
  spec.vertices = &space;
  spec.target_type = ds.LabeledType();
  nau::Model& model = trainer.model();
  LayerReport rep;
  const double d = o.hidden(), heads = o.heads();
  for (int64_t t = 0; t < space.num_types(); ++t) {
    rep.flops += 3 * 2.0 * space.type_size(t) * spec.FeatureDim(space.type_name(t)) * d;
  }
  for (int i = 0; i < model.num_layers(); ++i) {
    nau::Layer& layer = model.layer(i);
    const std::vector<int32_t> roots = model.Roots(i, spec);
    nau::SelectContext ctx(&ds, &space, trainer.config().train().seed(), 0, i);
    Stopwatch watch;
    auto built = hdg::HdgBuilder(layer.Schema(), space.size())
                     .Build(roots, [&](int32_t r, hdg::NeighborWriter& out) {
                       layer.SelectNeighbors(ctx, r, out);
                     });
    FG_CHECK(built.ok()) << built.status();
    const double seconds = watch.Seconds();
    const hdg::Hdg& h = *built;
    const auto& mps = h.schema().metapaths();
    std::printf("  layer %d: %zu roots, HDG %.1f MiB built in %.2fs\n", i, roots.size(),
                h.Bytes() / 1048576.0, seconds);
    const hdg::HdgLevel& l1 = h.level(1);
    const hdg::HdgLevel& l2 = h.level(2);
    const int64_t n = h.num_roots();
    for (size_t m = 0; m < mps.size(); ++m) {
      const int64_t inst = l1.type_offsets[m + 1] - l1.type_offsets[m];
      int64_t capped = 0, with = 0;
      for (int64_t r = 0; r < n; ++r) {
        const int64_t k = l2.csr().degree(static_cast<int64_t>(m) * n + r);
        with += k > 0;
        capped += max_instances > 0 && k == max_instances;
      }
      std::printf("    %-10s %9lld instances (%lld bytes of vertex ids), %lld roots with any, "
                  "%lld at the cap\n",
                  mps[m].name.c_str(), static_cast<long long>(inst),
                  static_cast<long long>(inst * mps[m].length * 4), static_cast<long long>(with),
                  static_cast<long long>(capped));
      // Encoder: read L rows of d floats per instance; attention: scores and the weighted sum.
      rep.bytes += 3.0 * inst * (mps[m].length + 2) * d * 4;
      rep.flops += 3.0 * 2 * inst * d * heads * 2;
    }
    const double p = static_cast<double>(mps.size());
    rep.bytes += 3.0 * 4 * (n * p * heads * d);  // [groups, heads * d] level-2 output
    rep.flops += 3.0 * 2 * n * heads * d * (128 + 64);  // fusion fc and the output layer
  }
  return rep;
}

int Run(const std::string& title, const flexgraph::RunConfig& o, int64_t max_instances) {
  Stopwatch load;
  auto created = runtime::Trainer::Create(o);
  if (!created.ok()) {
    std::fprintf(stderr, "magnn_bench: %s\n", std::string(created.status().message()).c_str());
    return 1;
  }
  runtime::Trainer& trainer = **created;
  const graph::Dataset& ds = trainer.dataset();
  std::printf("%s: %s, %lld vertices, %lld edges, %d layer(s), encoder %s (loaded and HDGs built "
              "in %.1fs)\n",
              title.c_str(), o.dataset().path().c_str(), static_cast<long long>(ds.graph.num_nodes[0] +
                                                                       ds.graph.num_nodes[1] +
                                                                       ds.graph.num_nodes[2]),
              static_cast<long long>(ds.graph.TotalEdges()), trainer.config().model().layers(),
              trainer.config().model().options().at("encoder").c_str(), load.Seconds());
  const LayerReport rep = DescribeHdgs(trainer, max_instances);
  std::printf("  total HDG bytes (as trained): %lld\n", static_cast<long long>(trainer.HdgBytes()));
  const std::clock_t cpu0 = std::clock();
  auto r = trainer.Run();
  const double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  if (!r.ok()) {
    std::fprintf(stderr, "magnn_bench: %s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  // A roofline over the epoch's totals (the per-kernel split is not kept here): the larger of the
  // memory time and the compute time, from ceilings measured now, which no kernel mix can beat.
  const double floor = std::max(rep.flops / bench::GemmFlopsPerSecond(), rep.bytes / bench::TriadBytesPerSecond());
  std::printf("  epochs:");
  for (double s : r->epoch_seconds) std::printf(" %.3fs", s);
  // On a shared machine wall time overstates the cost; CPU time (all threads) does not.
  std::printf("\n  CPU time per epoch (training step and evaluation, all threads): %.3fs",
              cpu / std::max(1, r->epochs));
  std::printf("\n  median epoch %.3fs; roofline floor %.3fs (%.1f GFLOP, %.2f GB) = %.0f%% of "
              "the ceilings; peak RSS %.0f MiB\n  stages: %s\n",
              r->epoch_seconds_median, floor, rep.flops / 1e9, rep.bytes / 1e9,
              100.0 * floor / r->epoch_seconds_median, r->peak_rss_bytes / 1048576.0,
              r->stats.Shares().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {
      {"scale", "10"},   {"features", "3065"}, {"epochs", "5"},       {"layers", ""},
      {"threads", "2"},  {"max_instances", ""}, {"encoder", "rotate"}, {"only", ""},
      {"imdb", std::string(FG_SHARED_DATA_DIR) + "/imdb"}};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || !flags.count(k.substr(2))) {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
    flags[k.substr(2)] = argv[i + 1];
  }
  flexgraph::RunConfig o;
  o.mutable_model()->set_name("magnn");
  o.mutable_train()->set_epochs(std::atoi(flags["epochs"].c_str()));
  o.mutable_train()->set_patience(0);
  o.mutable_train()->set_threads(std::atoi(flags["threads"].c_str()));
  o.mutable_output()->set_quiet(true);
  if (!flags["layers"].empty()) o.mutable_model()->set_layers(std::atoi(flags["layers"].c_str()));
  auto& options = *o.mutable_model()->mutable_options();
  options["max_instances"] = flags["max_instances"].empty() ? "1024" : flags["max_instances"];
  options["encoder"] = flags["encoder"];
  const int64_t cap = std::atoll(options["max_instances"].c_str());
  int rc = 0;
  if (flags["only"] != "synthetic") {
    flexgraph::RunConfig imdb = o;
    imdb.mutable_dataset()->set_path(flags["imdb"]);
    imdb.mutable_dataset()->set_split("magnn");
    rc |= Run("IMDB", imdb, cap);
  }
  if (flags["only"] != "imdb") {
    const int scale = std::atoi(flags["scale"].c_str());
    Stopwatch gen;
    graph::Dataset ds = MakeImdbLike(scale, std::atoll(flags["features"].c_str()), 7);
    const std::string path = absl::StrCat("/tmp/magnn_bench_imdb_x", scale, "_f",
                                          flags["features"], ".fgc");
    absl::Status written = graph::io::WriteCache(ds, path);
    if (!written.ok()) {
      std::fprintf(stderr, "magnn_bench: %s\n", std::string(written.message()).c_str());
      return 1;
    }
    std::printf("\ngenerated %s in %.1fs\n", path.c_str(), gen.Seconds());
    flexgraph::RunConfig syn = o;
    syn.mutable_dataset()->set_path(path);
    rc |= Run(absl::StrCat("IMDB-like x", scale), syn, cap);
  }
  return rc;
}
