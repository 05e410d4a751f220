#include "partition/cost_model.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <google/protobuf/text_format.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/ops/ops.h"
#include "flexgraph/graph/io/file.h"
#include "partition/union_graph.h"
#include "proto/partition.pb.h"

namespace fg::partition {
namespace {

constexpr double kBytesPerFloat = 4.0;
// A forward exchange and its mirrored backward exchange per epoch.
constexpr double kExchangesPerEpoch = 2.0;

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// Fastest of `repeats` runs of fn after one warm-up run (the minimum is the estimate least
// disturbed by other processes on a shared machine).
template <typename F>
double TimeKernel(int repeats, F&& fn) {
  fn();
  double best = -1;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    Stopwatch w;
    fn();
    const double t = w.Seconds();
    if (best < 0 || t < best) best = t;
  }
  return best;
}

Tensor RandomMatrix(int64_t rows, int64_t cols, uint64_t key) {
  Tensor x = Tensor::Empty({rows, cols});
  RandomStream rng(key, 0);
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.Uniform() - 0.5f;
  return x;
}

// A random n x n Csr with `degree` entries per row.
Csr RandomCsr(int64_t n, int64_t degree, uint64_t key) {
  RandomStream rng(key, 1);
  std::vector<int64_t> offsets(n + 1);
  std::vector<int32_t> indices(n * degree);
  for (int64_t i = 0; i <= n; ++i) offsets[i] = i * degree;
  for (int32_t& c : indices) c = static_cast<int32_t>(rng.Below(n));
  return Csr::FromVectors(n, n, offsets, indices);
}

// Solves the k x k system a x = b (Gaussian elimination, partial pivoting); false if singular.
bool Solve(std::vector<std::vector<double>> a, std::vector<double> b, std::vector<double>* x) {
  const size_t k = b.size();
  for (size_t c = 0; c < k; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < k; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    }
    if (std::abs(a[piv][c]) < 1e-300) return false;
    std::swap(a[c], a[piv]);
    std::swap(b[c], b[piv]);
    for (size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (size_t j = c; j < k; ++j) a[r][j] -= f * a[c][j];
      b[r] -= f * b[c];
    }
  }
  x->resize(k);
  for (size_t c = 0; c < k; ++c) (*x)[c] = b[c] / a[c][c];
  return true;
}

}  // namespace

std::vector<double> FitNonNegative(const std::vector<std::vector<double>>& features,
                                   const std::vector<double>& seconds, double* relative_rms) {
  const size_t k = features.empty() ? 0 : features[0].size();
  std::vector<double> best(k, 0.0);
  double best_err = -1;
  // Relative error: scale every row by 1 / t. Enumerate the subsets of free coefficients and keep
  // the best non-negative least-squares solution (k is small).
  for (uint32_t mask = 1; mask < (1u << k); ++mask) {
    std::vector<size_t> cols;
    for (size_t j = 0; j < k; ++j) {
      if (mask & (1u << j)) cols.push_back(j);
    }
    std::vector<std::vector<double>> ata(cols.size(), std::vector<double>(cols.size(), 0.0));
    std::vector<double> atb(cols.size(), 0.0);
    for (size_t i = 0; i < seconds.size(); ++i) {
      const double s = 1.0 / seconds[i];
      for (size_t a = 0; a < cols.size(); ++a) {
        atb[a] += features[i][cols[a]] * s;  // (f s) . (t s) with t s = 1
        for (size_t b = 0; b < cols.size(); ++b) {
          ata[a][b] += features[i][cols[a]] * features[i][cols[b]] * s * s;
        }
      }
    }
    std::vector<double> x;
    if (!Solve(ata, atb, &x)) continue;
    if (std::any_of(x.begin(), x.end(), [](double v) { return v < 0; })) continue;
    std::vector<double> coef(k, 0.0);
    for (size_t a = 0; a < cols.size(); ++a) coef[cols[a]] = x[a];
    double err = 0;
    for (size_t i = 0; i < seconds.size(); ++i) {
      double pred = 0;
      for (size_t j = 0; j < k; ++j) pred += coef[j] * features[i][j];
      err += std::pow((pred - seconds[i]) / seconds[i], 2);
    }
    if (best_err < 0 || err < best_err) {
      best_err = err;
      best = coef;
    }
  }
  if (relative_rms != nullptr) {
    *relative_rms = best_err < 0 ? 0 : std::sqrt(best_err / std::max<size_t>(1, seconds.size()));
  }
  return best;
}

absl::StatusOr<CostCoefficients> Calibrate(const CalibrationOptions& options) {
  if (options.size_scale <= 0 || options.network_bytes_per_second <= 0) {
    return absl::InvalidArgumentError("calibration: size scale and bandwidth must be positive");
  }
  auto scaled = [&](int64_t n) { return std::max<int64_t>(64, static_cast<int64_t>(n * options.size_scale)); };
  // One-coefficient relative least squares in closed form: argmin_c sum ((c f - t) / t)^2.
  auto fit_one = [](const std::vector<std::pair<double, double>>& ft) {
    double num = 0, den = 0;
    for (auto [f, t] : ft) {
      num += f / t;
      den += f * f / (t * t);
    }
    return den > 0 ? num / den : 0.0;
  };
  // SpMM: time = a * entries x width + b * rows x width (non-negative least squares).
  std::vector<std::vector<double>> features;
  std::vector<double> seconds;
  uint64_t key = 11;
  for (int64_t n : {scaled(16384), scaled(65536)}) {
    for (int64_t degree : {4, 16}) {
      const Csr a = RandomCsr(n, degree, ++key);
      for (int64_t width : {16, 64}) {
        const Tensor x = RandomMatrix(n, width, ++key);
        seconds.push_back(TimeKernel(options.repeats, [&] { ops::Spmm(a, x, ops::SpmmReduce::kSum); }));
        features.push_back({static_cast<double>(a.nnz() * width), static_cast<double>(n * width)});
      }
    }
  }
  CostCoefficients c;
  const std::vector<double> fit = FitNonNegative(features, seconds, &c.fit_relative_rms);
  c.entry_float_seconds = fit[0];
  c.row_float_seconds = fit[1];
  // GEMM: time = c * flops (fitted alone, so dense work never comes out free).
  std::vector<std::pair<double, double>> gemm;
  for (int64_t m : {scaled(8192), scaled(32768)}) {
    for (auto [k, n] : {std::pair<int64_t, int64_t>{16, 16}, {64, 16}, {256, 64}}) {
      const Tensor a = RandomMatrix(m, k, ++key), b = RandomMatrix(k, n, ++key);
      gemm.push_back({2.0 * static_cast<double>(m * k * n),
                      TimeKernel(options.repeats, [&] { ops::Matmul(a, b); })});
    }
  }
  c.gemm_flop_seconds = fit_one(gemm);
  // Gather: time = g * rows x width.
  std::vector<std::pair<double, double>> gather;
  for (int64_t rows : {scaled(32768), scaled(131072)}) {
    for (int64_t width : {16, 64}) {
      const Tensor x = RandomMatrix(rows, width, ++key);
      std::vector<int32_t> idx(rows);
      RandomStream rng(++key, 2);
      for (int32_t& i : idx) i = static_cast<int32_t>(rng.Below(rows));
      const Tensor t = Tensor::FromVector(idx);
      gather.push_back({static_cast<double>(rows * width),
                        TimeKernel(options.repeats, [&] { ops::GatherRows(x, t); })});
    }
  }
  c.gather_float_seconds = fit_one(gather);
  c.network_bytes_per_second = options.network_bytes_per_second;
  c.host = HostName();
  c.threads = NumThreads();
  c.created_unix_seconds = static_cast<int64_t>(std::time(nullptr));
  return c;
}

absl::Status SaveCalibration(const CostCoefficients& k, const std::string& path) {
  flexgraph::CostCalibration p;
  p.set_entry_float_seconds(k.entry_float_seconds);
  p.set_row_float_seconds(k.row_float_seconds);
  p.set_gemm_flop_seconds(k.gemm_flop_seconds);
  p.set_gather_float_seconds(k.gather_float_seconds);
  p.set_network_bytes_per_second(k.network_bytes_per_second);
  p.set_host(k.host);
  p.set_threads(k.threads);
  p.set_created_unix_seconds(k.created_unix_seconds);
  p.set_fit_relative_rms(k.fit_relative_rms);
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(p, &text)) {
    return absl::InternalError(absl::StrCat(path, ": cannot format the calibration"));
  }
  return graph::io::WriteFileAtomically(path, "# FlexGraph cost model calibration (flexgraph.CostCalibration)\n" + text);
}

absl::StatusOr<CostCoefficients> LoadCalibration(const std::string& path) {
  FG_ASSIGN_OR_RETURN(std::string text, graph::io::ReadFileToString(path));
  flexgraph::CostCalibration p;
  if (!google::protobuf::TextFormat::ParseFromString(text, &p)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a flexgraph.CostCalibration text proto"));
  }
  CostCoefficients k;
  k.entry_float_seconds = p.entry_float_seconds();
  k.row_float_seconds = p.row_float_seconds();
  k.gemm_flop_seconds = p.gemm_flop_seconds();
  k.gather_float_seconds = p.gather_float_seconds();
  k.network_bytes_per_second = p.network_bytes_per_second();
  k.host = p.host();
  k.threads = p.threads();
  k.created_unix_seconds = p.created_unix_seconds();
  k.fit_relative_rms = p.fit_relative_rms();
  for (double v : {k.entry_float_seconds, k.row_float_seconds, k.gemm_flop_seconds,
                   k.gather_float_seconds}) {
    if (!(v >= 0) || !std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": negative or invalid coefficient"));
    }
  }
  if (!(k.network_bytes_per_second > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": network_bytes_per_second must be positive"));
  }
  return k;
}

std::string DefaultCalibrationPath() {
  std::string dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg) {
    dir = xdg;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home) {
    dir = absl::StrCat(home, "/.cache");
  } else {
    dir = "/tmp";
  }
  return absl::StrCat(dir, "/flexgraph/calibration-", HostName(), "-t", NumThreads(), ".txt");
}

absl::StatusOr<CostCoefficients> LoadOrCalibrate(const std::string& path_or_empty, bool recalibrate,
                                                 double network_bytes_per_second) {
  const std::string path = path_or_empty.empty() ? DefaultCalibrationPath() : path_or_empty;
  std::error_code ec;
  if (!recalibrate && std::filesystem::exists(path, ec)) {
    FG_ASSIGN_OR_RETURN(CostCoefficients k, LoadCalibration(path));
    if (k.host == HostName() && k.threads == NumThreads()) {
      if (network_bytes_per_second > 0) k.network_bytes_per_second = network_bytes_per_second;
      return k;
    }
  }
  CalibrationOptions o;
  if (network_bytes_per_second > 0) o.network_bytes_per_second = network_bytes_per_second;
  FG_ASSIGN_OR_RETURN(CostCoefficients k, Calibrate(o));
  if (k.fit_relative_rms > 0.3) {
    FG_LOG(Warning) << "cost model calibration fits the kernel times poorly (relative RMS "
                    << k.fit_relative_rms << "); is the machine busy? Rerun with --recalibrate later";
  }
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (absl::Status s = SaveCalibration(k, path); !s.ok()) {
    FG_LOG(Warning) << "cost model calibration not stored: " << s.message();
  }
  return k;
}

// --- CostModel ---------------------------------------------------------------------------------

absl::StatusOr<CostModel> CostModel::Create(const graph::Dataset& dataset,
                                            const WorkloadOptions& options,
                                            const CostCoefficients& coefficients) {
  FG_ASSIGN_OR_RETURN(Csr g, BuildUnionGraph(dataset.graph));
  FG_ASSIGN_OR_RETURN(Workload w, BuildWorkload(dataset, options));
  return CostModel(std::move(g), std::make_shared<const Workload>(std::move(w)), coefficients);
}

CostModel::CostModel(Csr union_graph, std::shared_ptr<const Workload> workload,
                     const CostCoefficients& coefficients)
    : union_graph_(std::move(union_graph)), workload_(std::move(workload)), k_(coefficients) {
  FG_CHECK(workload_->num_vertices == union_graph_.num_rows)
      << "workload and union graph disagree on the vertex count";
  compute_.resize(workload_->num_vertices);
  for (int64_t v = 0; v < workload_->num_vertices; ++v) {
    compute_[v] = kEpochFactor * (k_.entry_float_seconds * workload_->entry_floats[v] +
                                  k_.row_float_seconds * workload_->row_floats[v] +
                                  k_.gemm_flop_seconds * workload_->gemm_flops[v]);
  }
}

double CostModel::CommSeconds(double send_floats, double recv_floats) const {
  return kExchangesPerEpoch * std::max(send_floats, recv_floats) * kBytesPerFloat /
             k_.network_bytes_per_second +
         k_.gather_float_seconds * (send_floats + recv_floats);
}

double CostModel::SecondsPerExchangedFloat() const {
  return kExchangesPerEpoch * kBytesPerFloat / k_.network_bytes_per_second + k_.gather_float_seconds;
}

// --- statistics --------------------------------------------------------------------------------

absl::Status ValidateOwners(const std::vector<int32_t>& owners, int num_parts,
                            const CostModel& cost) {
  if (static_cast<int64_t>(owners.size()) != cost.num_vertices()) {
    return absl::InvalidArgumentError(absl::StrCat("plan has ", owners.size(),
                                                   " owners but the graph has ",
                                                   cost.num_vertices(), " vertices"));
  }
  for (size_t v = 0; v < owners.size(); ++v) {
    if (owners[v] < 0 || owners[v] >= num_parts) {
      return absl::InvalidArgumentError(absl::StrCat("vertex ", v, " has owner ", owners[v],
                                                     ", outside [0, ", num_parts, ")"));
    }
  }
  return absl::OkStatus();
}

PartitionStats ComputeStats(const graph::Dataset& dataset, const std::vector<int32_t>& owners,
                            int num_parts, const CostModel& cost) {
  const absl::Status valid = ValidateOwners(owners, num_parts, cost);
  FG_CHECK(valid.ok()) << valid.message();
  FG_CHECK(TypeOffsets(dataset.graph).back() == cost.num_vertices())
      << "cost model built for another dataset";
  const int P = num_parts;
  const int64_t n = cost.num_vertices();
  const Csr& g = cost.union_graph();
  PartitionStats s;
  s.num_parts = P;
  s.parts.resize(P);
  for (PartStats& ps : s.parts) {
    ps.ghosts.assign(P, 0);
    ps.row_fetch_vectors.assign(P, 0);
    ps.partial_vectors.assign(P, 0);
  }
  // Owned vertices, edges and compute, in vertex order (deterministic sums).
  for (int64_t v = 0; v < n; ++v) {
    PartStats& ps = s.parts[owners[v]];
    ++ps.owned_vertices;
    ps.edges += g.degree(v);
    ps.compute_seconds += cost.VertexCompute(v);
  }
  {
    const int blocks = NumThreads();
    std::vector<int64_t> cut(blocks, 0);
    ParallelBlocks(n, blocks, [&](int block, int64_t begin, int64_t end) {
      for (int64_t v = begin; v < end; ++v) {
        for (int64_t e = g.row_ptr()[v]; e < g.row_ptr()[v + 1]; ++e) {
          const int32_t u = g.col()[e];
          if (u > v && owners[u] != owners[v]) ++cut[block];
        }
      }
    });
    for (int64_t c : cut) s.edge_cut += c;
  }

  // Communication: per layer, the roots of each part; per part, distinct remote leaves (row
  // fetch, ghosts) and distinct (bottom node, peer) pairs (partial aggregation).
  const Workload& w = cost.workload();
  const int L = static_cast<int>(w.layers.size());
  // chosen[l][p * P + q]: vectors p receives from q in layer l with the cheaper exchange.
  std::vector<std::vector<int64_t>> chosen(L, std::vector<int64_t>(static_cast<size_t>(P) * P, 0));
  std::vector<std::vector<std::vector<int32_t>>> part_roots(L, std::vector<std::vector<int32_t>>(P));
  for (int l = 0; l < L; ++l) {
    const auto& roots = w.layers[l].roots;
    for (size_t k = 0; k < roots.size(); ++k) part_roots[l][owners[roots[k]]].push_back(static_cast<int32_t>(k));
  }
  const int blocks = std::min(P, NumThreads());
  ParallelBlocks(P, blocks, [&](int, int64_t p_begin, int64_t p_end) {
    std::vector<int32_t> ghost_stamp(n, -1), layer_stamp(n, -1);
    std::vector<int64_t> node_stamp(P, -1);
    int64_t node_tag = 0;
    for (int64_t p = p_begin; p < p_end; ++p) {
      PartStats& ps = s.parts[p];
      for (int l = 0; l < L; ++l) {
        const LayerWorkload& lw = w.layers[l];
        const int32_t tag = static_cast<int32_t>(p * L + l);
        std::vector<int64_t> rf(P, 0), pa(P, 0);
        const int64_t* rp = lw.bottom.row_ptr();
        const int32_t* col = lw.bottom.col();
        for (int32_t k : part_roots[l][p]) {
          for (int64_t i = lw.root_nodes[k]; i < lw.root_nodes[k + 1]; ++i, ++node_tag) {
            for (int64_t e = rp[i]; e < rp[i + 1]; ++e) {
              const int32_t u = col[e];
              const int32_t q = owners[u];
              if (q == p) continue;
              if (layer_stamp[u] != tag) {
                layer_stamp[u] = tag;
                ++rf[q];
              }
              if (ghost_stamp[u] != p) {
                ghost_stamp[u] = static_cast<int32_t>(p);
                ++ps.ghosts[q];
              }
              if (node_stamp[q] != node_tag) {
                node_stamp[q] = node_tag;
                ++pa[q];
              }
            }
          }
        }
        for (int q = 0; q < P; ++q) {
          ps.row_fetch_vectors[q] += rf[q];
          ps.partial_vectors[q] += lw.decomposable ? pa[q] : rf[q];
          chosen[l][p * P + q] = lw.decomposable ? std::min(rf[q], pa[q]) : rf[q];
        }
      }
    }
  });
  for (int l = 0; l < L; ++l) {
    const double width = static_cast<double>(w.layers[l].message_width);
    for (int p = 0; p < P; ++p) {
      for (int q = 0; q < P; ++q) {
        const double floats = static_cast<double>(chosen[l][p * P + q]) * width;
        s.parts[p].recv_floats += floats;
        s.parts[q].send_floats += floats;
      }
    }
  }
  double total = 0;
  for (PartStats& ps : s.parts) {
    ps.comm_seconds = cost.CommSeconds(ps.send_floats, ps.recv_floats);
    for (int64_t gh : ps.ghosts) s.ghosts_total += gh;
    s.max_cost = std::max(s.max_cost, ps.cost());
    total += ps.cost();
  }
  s.mean_cost = total / P;
  s.imbalance = s.mean_cost > 0 ? s.max_cost / s.mean_cost : 1.0;
  return s;
}

std::string PartitionStats::ToTable() const {
  std::string out = absl::StrFormat("%4s %10s %11s %9s %11s %11s %11s  %s\n", "part", "owned",
                                    "edges", "ghosts", "compute_ms", "comm_ms", "total_ms",
                                    "ghosts per peer");
  for (int p = 0; p < num_parts; ++p) {
    const PartStats& ps = parts[p];
    int64_t ghosts_sum = 0;
    std::vector<std::string> peers;
    for (int q = 0; q < num_parts; ++q) {
      ghosts_sum += ps.ghosts[q];
      peers.push_back(q == p ? "-" : absl::StrCat(ps.ghosts[q]));
    }
    absl::StrAppendFormat(&out, "%4d %10d %11d %9d %11.3f %11.3f %11.3f  %s\n", p,
                          ps.owned_vertices, ps.edges, ghosts_sum, ps.compute_seconds * 1e3,
                          ps.comm_seconds * 1e3, ps.cost() * 1e3, absl::StrJoin(peers, " "));
  }
  absl::StrAppendFormat(&out,
                        "edge cut %d, ghosts %d, estimated cost per epoch: max %.3f ms, mean %.3f "
                        "ms, imbalance %.3f\n",
                        edge_cut, ghosts_total, max_cost * 1e3, mean_cost * 1e3, imbalance);
  return out;
}

}  // namespace fg::partition
