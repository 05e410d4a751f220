// PinSage on an RMAT graph (Graph500 parameters, flexgraph/graph/gen/rmat.h through the dataset
// spec): HDG build time (random walks from every vertex), HDG bytes and training epoch time, on 1
// and 2 threads. Checks that the HDG is identical for both thread counts and prints each epoch
// time next to its roofline floor (GEMM flops at the measured GEMM peak + SpMM bytes at the measured
// STREAM triad bandwidth, bench/ceilings.h).
//
//   pinsage_bench [--scale 18] [--edge_factor 16] [--features 64] [--hidden 64]
//                 [--num_traces 10] [--n_hops 3] [--top_k 10] [--epochs 3] [--builds 3]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/timer.h"
#include "bench/ceilings.h"
#include "hdg/builder.h"
#include "runtime/train/trainer.h"

namespace {

using namespace fg;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

bool SameHdg(const hdg::Hdg& a, const hdg::Hdg& b) {
  const Csr &x = a.level(1).csr(), &y = b.level(1).csr();
  return x.nnz() == y.nnz() && x.num_rows == y.num_rows &&
         std::memcmp(x.row_ptr(), y.row_ptr(), x.offsets.nbytes()) == 0 &&
         std::memcmp(x.col(), y.col(), x.indices.nbytes()) == 0 &&
         std::memcmp(a.level(1).weights.f32(), b.level(1).weights.f32(),
                     a.level(1).weights.nbytes()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {
      {"scale", "18"},      {"edge_factor", "16"}, {"features", "64"}, {"hidden", "64"},
      {"num_traces", "10"}, {"n_hops", "3"},       {"top_k", "10"},    {"epochs", "3"},
      {"builds", "3"}};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || !flags.count(k.substr(2))) {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
    flags[k.substr(2)] = argv[i + 1];
  }
  auto flag = [&](const char* k) { return std::atoi(flags[k].c_str()); };

  flexgraph::RunConfig o;
  o.mutable_dataset()->set_path(absl::StrCat("rmat:scale=", flags["scale"], ",edge_factor=",
                                             flags["edge_factor"], ",features=", flags["features"],
                                             ",classes=8"));
  o.mutable_model()->set_name("pinsage");
  o.mutable_model()->set_hidden(flag("hidden"));
  o.mutable_model()->set_layers(2);
  o.mutable_model()->set_dropout(0.5f);
  o.mutable_train()->set_threads(2);
  o.mutable_output()->set_quiet(true);
  for (const char* k : {"num_traces", "n_hops", "top_k"}) (*o.mutable_model()->mutable_options())[k] = flags[k];
  Stopwatch load;
  auto created = runtime::Trainer::Create(o);
  if (!created.ok()) {
    std::fprintf(stderr, "pinsage_bench: %s\n", std::string(created.status().message()).c_str());
    return 1;
  }
  runtime::Trainer& trainer = **created;
  const graph::Dataset& ds = trainer.dataset();
  const int64_t n = ds.graph.num_nodes[0];
  std::printf("PinSage on %s: %lld vertices, %lld edges (loaded and first HDG in %.1fs)\n",
              o.dataset().path().c_str(), static_cast<long long>(n),
              static_cast<long long>(ds.graph.TotalEdges()), load.Seconds());
  std::printf("walks: num_traces %s, n_hops %s, top_k %s; model: 2 layers, features %s, hidden %s\n",
              flags["num_traces"].c_str(), flags["n_hops"].c_str(), flags["top_k"].c_str(),
              flags["features"].c_str(), flags["hidden"].c_str());
  std::printf("%s", trainer.Explain().c_str());

  // The selection of layer 0 over every vertex, as the trainer builds it.
  nau::Model& model = trainer.model();
  nau::VertexSpace space(ds.graph);
  std::vector<int32_t> roots(n);
  for (int64_t v = 0; v < n; ++v) roots[v] = static_cast<int32_t>(v);
  nau::SelectContext ctx(&ds, &space, trainer.config().train().seed(), 0, 0);
  const nau::Layer& layer = model.layer(0);
  auto build = [&]() {
    auto h = hdg::HdgBuilder(layer.Schema(), n).Build(roots, [&](int32_t r, hdg::NeighborWriter& w) {
      layer.SelectNeighbors(ctx, r, w);
    });
    if (!h.ok()) {
      std::fprintf(stderr, "pinsage_bench: %s\n", std::string(h.status().message()).c_str());
      std::exit(1);
    }
    return std::move(h).value();
  };

  // Roofline terms of one training epoch (forward + backward ~ 3x the forward GEMMs; SpMM moves
  // each entry's index and weight plus one pooled row, forward and backward).
  const double d_in = flag("features"), h = flag("hidden"), classes = 8;
  const double gemm_flops =
      3.0 * 2.0 * n * (d_in * h + (d_in + h) * h + h * h + (h + h) * classes);
  std::vector<std::pair<int, double>> epoch_times;
  std::vector<hdg::Hdg> per_threads;
  std::printf("\n%-8s %-14s %-12s %-12s %-10s %s\n", "threads", "HDG build (s)", "HDG MiB",
              "epoch (s)", "floor (s)", "fraction of roofline");
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    std::vector<double> builds;
    hdg::Hdg last = build();
    for (int b = 0; b < flag("builds"); ++b) {
      Stopwatch w;
      last = build();
      builds.push_back(w.Seconds());
    }
    std::vector<double> epochs;
    for (int e = 0; e < flag("epochs") + 1; ++e) {  // the first epoch warms up
      Stopwatch w;
      trainer.TrainStep(e);
      if (e > 0) epochs.push_back(w.Seconds());
    }
    const double nnz = static_cast<double>(last.level(1).csr().nnz());
    const double spmm_bytes = 2.0 * 2.0 * (nnz * 8.0 + nnz * h * 4.0 + n * h * 4.0);
    // A roofline over kernels of two kinds: the GEMMs priced by their flops, the SpMMs by their
    // bytes, at ceilings measured now on this many threads.
    const double floor = gemm_flops / bench::GemmFlopsPerSecond() + spmm_bytes / bench::TriadBytesPerSecond();
    const double epoch = Median(epochs);
    std::printf("%-8d %-14.3f %-12.1f %-12.3f %-10.4f %.0f%%\n", threads, Median(builds),
                last.Bytes() / 1048576.0, epoch, floor, 100.0 * floor / epoch);
    per_threads.push_back(std::move(last));
  }
  const bool same = SameHdg(per_threads[0], per_threads[1]);
  std::printf("HDG identical on 1 and 2 threads: %s (%lld entries, mean arity %.2f)\n",
              same ? "yes" : "NO", static_cast<long long>(per_threads[0].level(1).csr().nnz()),
              static_cast<double>(per_threads[0].level(1).csr().nnz()) / n);
  std::printf("trainer HDG bytes (both layers share one selection): %lld\n",
              static_cast<long long>(trainer.HdgBytes()));
  return same ? 0 : 1;
}
