// Kernel benchmarks: SpMM (sum) on graphs larger than the last-level cache and GEMM at the shapes a
// GCN layer uses, each reporting the achieved rate and its fraction of the machine ceilings
// (DESIGN.md, "Machine ceilings"). See bench/README.md for how to run and the measured numbers.
//
// Sizes (environment variables, defaults in parentheses):
//   FG_BENCH_SCALE (20)             2^scale vertices in the SpMM graphs
//   FG_BENCH_DEGREE (16)            mean degree of the uniform graph; the RMAT graph uses edge
//                                   factor degree/2 before symmetrisation
//   FG_BENCH_WIDTHS (16,64,256)     SpMM feature widths
//   FG_BENCH_THREADS (1,2)          thread counts
//   FG_BENCH_GEMM_ROWS (131072)     n of the GEMM shapes
//   FG_BENCH_CLASSES (40)           k of the output layer GEMM
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/graph/gen/rmat.h"
#include "flexgraph/graph/reorder.h"
#include "flexgraph/ops/kernels.h"
#include "flexgraph/ops/ops.h"

namespace fg {
namespace {

// Machine ceilings of DESIGN.md, by thread count.
double StreamGBs(int threads) { return threads <= 1 ? 25.0 : 40.0; }
double SgemmGflops(int threads) { return threads <= 1 ? 90.0 : 180.0; }

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoll(v) : fallback;
}

std::vector<int64_t> EnvList(const char* name, std::vector<int64_t> fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  std::vector<int64_t> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::atoll(item.c_str()));
  return out;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// --- graphs ----------------------------------------------------------------------------------

enum class GraphKind { kUniform, kUniformRcm, kRmat, kRmatRcm, kRmatDegreeSorted };

const char* GraphName(GraphKind k) {
  switch (k) {
    case GraphKind::kUniform: return "uniform";
    case GraphKind::kUniformRcm: return "uniform_rcm";
    case GraphKind::kRmat: return "rmat";
    case GraphKind::kRmatRcm: return "rmat_rcm";
    case GraphKind::kRmatDegreeSorted: return "rmat_degsort";
  }
  return "?";
}

// n * degree / 2 uniformly random undirected edges (mean degree ~degree, Poisson-like).
Csr UniformGraph(int scale, int degree, uint64_t seed) {
  const int64_t n = int64_t{1} << scale;
  std::vector<graph::Edge> edges(n * degree / 2);
  ParallelFor(0, static_cast<int64_t>(edges.size()), [&](int64_t e) {
    RandomStream rng(seed, static_cast<uint64_t>(e));
    edges[e] = {static_cast<int32_t>(rng.Below(n)), static_cast<int32_t>(rng.Below(n))};
  });
  return graph::BuildSymmetricCsr(n, edges);
}

// Graphs are built once, on first use, and kept for the whole run.
const Csr& GetGraph(GraphKind kind) {
  static std::map<GraphKind, Csr> cache;
  auto it = cache.find(kind);
  if (it != cache.end()) return it->second;
  const int scale = static_cast<int>(EnvInt("FG_BENCH_SCALE", 20));
  const int degree = static_cast<int>(EnvInt("FG_BENCH_DEGREE", 16));
  const auto t0 = std::chrono::steady_clock::now();
  Csr g;
  switch (kind) {
    case GraphKind::kUniform:
      g = UniformGraph(scale, degree, 17);
      break;
    case GraphKind::kRmat: {
      graph::RmatOptions opt{.scale = scale, .edge_factor = std::max(1, degree / 2), .seed = 17};
      g = graph::BuildSymmetricCsr(int64_t{1} << scale, graph::GenerateRmatEdges(opt));
      break;
    }
    case GraphKind::kUniformRcm:
      g = graph::PermuteCsr(GetGraph(GraphKind::kUniform), graph::RcmOrder(GetGraph(GraphKind::kUniform)));
      break;
    case GraphKind::kRmatRcm:
      g = graph::PermuteCsr(GetGraph(GraphKind::kRmat), graph::RcmOrder(GetGraph(GraphKind::kRmat)));
      break;
    case GraphKind::kRmatDegreeSorted:
      g = graph::PermuteCsr(GetGraph(GraphKind::kRmat),
                            graph::DegreeSortOrder(GetGraph(GraphKind::kRmat)));
      break;
  }
  int64_t max_deg = 0;
  for (int64_t r = 0; r < g.num_rows; ++r) max_deg = std::max(max_deg, g.degree(r));
  std::fprintf(stderr, "graph %s: %lld vertices, %lld entries, max degree %lld, built in %.2f s\n",
               GraphName(kind), static_cast<long long>(g.num_rows),
               static_cast<long long>(g.nnz()), static_cast<long long>(max_deg), Seconds(t0));
  return cache.emplace(kind, std::move(g)).first->second;
}

// An uninitialised [rows, width] float matrix (tensor storage puts large buffers on huge pages).
Tensor EmptyMatrix(int64_t rows, int64_t width) { return Tensor::Empty({rows, width}); }

// A [rows, width] float matrix with arbitrary finite values, cached per shape.
const Tensor& GetDense(int64_t rows, int64_t width) {
  static std::map<std::pair<int64_t, int64_t>, Tensor> cache;
  auto key = std::make_pair(rows, width);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Tensor t = EmptyMatrix(rows, width);
  float* p = t.f32();
  ParallelFor(0, rows, [&](int64_t r) {
    for (int64_t j = 0; j < width; ++j) {
      p[r * width + j] = static_cast<float>((r * 7 + j) % 13) * 0.1f;
    }
  });
  return cache.emplace(key, std::move(t)).first->second;
}

// A zero [rows, width] matrix (first touched by the calling thread).
Tensor ZeroMatrix(int64_t rows, int64_t width) {
  Tensor t = EmptyMatrix(rows, width);
  t.SetZero();
  return t;
}

// --- SpMM ------------------------------------------------------------------------------------

// Bytes SpMM must move: offsets and column indices, one gathered row per entry, the output rows.
double SpmmBytes(const Csr& a, int64_t width) {
  return static_cast<double>(a.num_rows + 1) * 8 + static_cast<double>(a.nnz()) * 4 +
         static_cast<double>(a.nnz()) * width * 4 + static_cast<double>(a.num_rows) * width * 4;
}

void SetRateCounters(benchmark::State& state, double units_per_iter, const char* unit,
                     double ceiling) {
  const double total = units_per_iter * static_cast<double>(state.iterations());
  state.counters[unit] = benchmark::Counter(total, benchmark::Counter::kIsRate);
  state.counters["of_ceiling"] = benchmark::Counter(total / ceiling, benchmark::Counter::kIsRate);
}

// The CPU kernel into a preallocated output (the op's allocation and page faults are not timed).
void BM_Spmm(benchmark::State& state, GraphKind kind) {
  const int64_t width = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const Csr& a = GetGraph(kind);
  const Tensor& x = GetDense(a.num_cols, width);
  Tensor out = ZeroMatrix(a.num_rows, width);
  SetNumThreads(threads);
  for (auto _ : state) {
    ops::cpu::Spmm(a.row_ptr(), a.col(), nullptr, 1, a.num_rows, x.f32(), width, 0, out.f32());
    benchmark::ClobberMemory();
  }
  SetRateCounters(state, SpmmBytes(a, width) / 1e9, "GB/s", StreamGBs(threads));
  state.counters["nnz"] = static_cast<double>(a.nnz());
}

// The public op, including its output allocation (page faults of a fresh buffer every call).
void BM_SpmmOp(benchmark::State& state, GraphKind kind) {
  const int64_t width = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const Csr& a = GetGraph(kind);
  const Tensor& x = GetDense(a.num_cols, width);
  SetNumThreads(threads);
  for (auto _ : state) {
    Tensor out = ops::Spmm(a, x, ops::SpmmReduce::kSum);
    benchmark::DoNotOptimize(out.f32());
  }
  SetRateCounters(state, SpmmBytes(a, width) / 1e9, "GB/s", StreamGBs(threads));
}

// One-off cost of a reordering (computing the permutation and relabeling the graph).
void BM_Reorder(benchmark::State& state, GraphKind source, bool rcm) {
  const Csr& a = GetGraph(source);
  SetNumThreads(2);
  for (auto _ : state) {
    auto perm = rcm ? graph::RcmOrder(a) : graph::DegreeSortOrder(a);
    Csr b = graph::PermuteCsr(a, perm);
    benchmark::DoNotOptimize(b.col());
  }
}

// The transpose of a graph (with its entry permutation), as loading a dataset and building HDGs'
// backward structures do: bytes of column ids read and of ids and permutation written.
void BM_Transpose(benchmark::State& state, GraphKind kind) {
  const int threads = static_cast<int>(state.range(0));
  const Csr& a = GetGraph(kind);
  SetNumThreads(threads);
  for (auto _ : state) {
    Tensor perm;
    Csr t = a.Transpose(&perm);
    benchmark::DoNotOptimize(t.col());
  }
  SetRateCounters(state, (12.0 * a.nnz() + 16.0 * a.num_rows) / 1e9, "GB/s", StreamGBs(threads));
}

// --- STREAM triad -----------------------------------------------------------------------------

// a = b + s * c over three 128 MiB arrays: the machine's bandwidth now, next to the fixed ceilings
// (on a shared machine it falls when others run). Bytes counted as STREAM does (3 arrays).
void BM_Triad(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  constexpr int64_t kN = int64_t{1} << 25, kChunk = int64_t{1} << 16;
  const Tensor& b = GetDense(kN / 64, 64);
  const Tensor& c = GetDense(kN / 64 + 1, 64);
  Tensor a = ZeroMatrix(kN / 64, 64);
  SetNumThreads(threads);
  for (auto _ : state) {
    float* pa = a.f32();
    const float* pb = b.f32();
    const float* pc = c.f32();
    ParallelFor(0, kN / kChunk, [&](int64_t k) {
#pragma omp simd
      for (int64_t i = k * kChunk; i < (k + 1) * kChunk; ++i) pa[i] = pb[i] + 3.0f * pc[i];
    });
    benchmark::ClobberMemory();
  }
  SetRateCounters(state, 3.0 * kN * 4 / 1e9, "GB/s", StreamGBs(threads));
}

// --- dropout ---------------------------------------------------------------------------------

// The counter-based dropout of a [FG_BENCH_GEMM_ROWS, width] matrix into a preallocated output:
// bytes read and written against the bandwidth ceiling (the Philox draws are the rest).
void BM_Dropout(benchmark::State& state) {
  const int64_t width = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const int64_t rows = EnvInt("FG_BENCH_GEMM_ROWS", 131072);
  const Tensor& x = GetDense(rows, width);
  Tensor y = ZeroMatrix(rows, width);
  SetNumThreads(threads);
  for (auto _ : state) {
    ops::cpu::Dropout(7, nullptr, rows, width, 0.5f, x.f32(), y.f32());
    benchmark::ClobberMemory();
  }
  SetRateCounters(state, 2.0 * rows * width * 4 / 1e9, "GB/s", StreamGBs(threads));
  state.counters["entries/s"] = benchmark::Counter(static_cast<double>(rows * width) * state.iterations(),
                                                   benchmark::Counter::kIsRate);
}

// --- GEMM ------------------------------------------------------------------------------------

struct GemmShape {
  const char* name;
  bool trans_a, trans_b;
  int64_t m, n, k;  // C[m, n] = op(A)[m, k] op(B)[k, n]
};

void BM_Gemm(benchmark::State& state, GemmShape s) {
  const int threads = static_cast<int>(state.range(0));
  const Tensor& a = GetDense(s.trans_a ? s.k : s.m, s.trans_a ? s.m : s.k);
  const Tensor& b = GetDense(s.trans_b ? s.n : s.k, s.trans_b ? s.k : s.n);
  Tensor c = ZeroMatrix(s.m, s.n);
  SetNumThreads(threads);
  for (auto _ : state) {
    ops::MatmulInto(a, b, s.trans_a, s.trans_b, 1.0f, 0.0f, &c);
    benchmark::ClobberMemory();
  }
  SetRateCounters(state, 2.0 * s.m * s.n * s.k / 1e9, "GFLOP/s", SgemmGflops(threads));
}

void RegisterAll() {
  const auto widths = EnvList("FG_BENCH_WIDTHS", {16, 64, 256});
  const auto thread_counts = EnvList("FG_BENCH_THREADS", {1, 2});
  {
    auto* b = benchmark::RegisterBenchmark("Triad", BM_Triad);
    for (int64_t t : thread_counts) b->Arg(t);
    b->ArgNames({"threads"})->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.2);
  }
  for (GraphKind kind : {GraphKind::kUniform, GraphKind::kUniformRcm, GraphKind::kRmat,
                         GraphKind::kRmatRcm, GraphKind::kRmatDegreeSorted}) {
    auto* b = benchmark::RegisterBenchmark((std::string("Spmm/") + GraphName(kind)).c_str(),
                                           BM_Spmm, kind);
    for (int64_t w : widths) {
      for (int64_t t : thread_counts) b->Args({w, t});
    }
    b->ArgNames({"width", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.3);
  }
  for (GraphKind kind : {GraphKind::kUniform, GraphKind::kRmat}) {
    auto* b = benchmark::RegisterBenchmark((std::string("SpmmOp/") + GraphName(kind)).c_str(),
                                           BM_SpmmOp, kind);
    for (int64_t t : thread_counts) b->Args({64, t});
    b->ArgNames({"width", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.3);
  }
  for (GraphKind kind : {GraphKind::kUniform, GraphKind::kRmat}) {
    auto* b = benchmark::RegisterBenchmark((std::string("Transpose/") + GraphName(kind)).c_str(),
                                           BM_Transpose, kind);
    for (int64_t t : thread_counts) b->Arg(t);
    b->ArgNames({"threads"})->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.3);
  }
  benchmark::RegisterBenchmark("Reorder/rmat_rcm", BM_Reorder, GraphKind::kRmat, true)
      ->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("Reorder/rmat_degsort", BM_Reorder, GraphKind::kRmat, false)
      ->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

  {
    auto* b = benchmark::RegisterBenchmark("Dropout", BM_Dropout);
    for (int64_t t : thread_counts) b->Args({16, t})->Args({100, t})->Args({128, t})->Args({256, t});
    b->ArgNames({"width", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.2);
  }
  const int64_t n = EnvInt("FG_BENCH_GEMM_ROWS", 131072);
  const int64_t k = EnvInt("FG_BENCH_CLASSES", 40);
  // Forward of a 3-layer GCN (128 -> 256 -> 256 -> k), then the backward products of a layer
  // [n, 256] x [256, 256]: dW = X^T dY and dX = dY W^T, and the first layer's dW (128 deep).
  const GemmShape shapes[] = {
      {"fwd_n128x128x256", false, false, n, 256, 128},
      {"fwd_n256x256x256", false, false, n, 256, 256},
      {"fwd_n256x256xk", false, false, n, k, 256},
      {"bwd_dW_256xn_x_nx256", true, false, 256, 256, n},
      {"bwd_dW_128xn_x_nx256", true, false, 128, 256, n},
      {"bwd_dX_n256_x_256x256T", false, true, n, 256, 256},
      {"bwd_dW_256xn_x_nxk", true, false, 256, k, n},
      {"bwd_dX_nk_x_kx256T", false, true, n, 256, k},
  };
  for (const GemmShape& s : shapes) {
    auto* b = benchmark::RegisterBenchmark((std::string("Gemm/") + s.name).c_str(), BM_Gemm, s);
    for (int64_t t : thread_counts) b->Arg(t);
    b->ArgNames({"threads"})->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.2);
  }
}

}  // namespace
}  // namespace fg

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  fg::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
