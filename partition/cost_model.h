// CostModel: estimated seconds per training epoch for the vertices a partition owns.
//
//   compute(v) = kEpochFactor * (a * entry_floats(v) + b * row_floats(v) + c * gemm_flops(v))
//     from the HDGs of the layers where v is a root (entries x width, nodes x width per level) and
//     the dense transforms of its rows (partition/workload.h);
//   comm(p)    = 2 * max(bytes p sends, bytes p receives) / bandwidth + g * (floats p packs), for a
//     forward and a mirrored backward exchange on a full-duplex link, where per peer pair and layer
//     the exchange sends min(row fetch, partial aggregation) vectors (DESIGN.md, step 4).
//
// The coefficients a, b, c, g are fitted on this machine by Calibrate(): least-squares fits (on
// relative error) over measured SpMM (a, b), GEMM (c) and row-gather (g) kernel times (ops/ops.h). LoadOrCalibrate() stores them in a
// small text file and reuses them. The network bandwidth cannot be measured on one machine; it is a
// setting (default 10 Gbit/s). Thread-safety: CostModel is immutable after Create(), safe to share.
//
//   FG_ASSIGN_OR_RETURN(CostCoefficients k, LoadOrCalibrate(""));
//   FG_ASSIGN_OR_RETURN(CostModel cost, CostModel::Create(dataset, {.model = config.model().name()}, k));
//   PartitionStats s = ComputeStats(dataset, owners, 4, cost);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"
#include "partition/workload.h"

namespace fg::partition {

struct CostCoefficients {
  double entry_float_seconds = 2.5e-10;  // per HDG entry x feature (SpMM-like)
  double row_float_seconds = 5e-10;      // per HDG node x feature
  double gemm_flop_seconds = 1.1e-11;    // per GEMM flop
  double gather_float_seconds = 2.5e-10; // per float packed for a peer
  double network_bytes_per_second = 1.25e9;  // 10 Gbit/s
  // Provenance.
  std::string host;
  int threads = 0;
  int64_t created_unix_seconds = 0;
  double fit_relative_rms = 0;
};

struct CalibrationOptions {
  double network_bytes_per_second = 1.25e9;
  // Kernel sizes scale with this (tests use a small value).
  double size_scale = 1.0;
  int repeats = 5;  // the fastest run counts
};

// Times SpMM, GEMM and GatherRows kernels for a few sizes on the current thread count and fits
// the coefficients by (non-negative) least squares on relative error. Takes a second or two.
absl::StatusOr<CostCoefficients> Calibrate(const CalibrationOptions& options);

// Non-negative least squares on relative error: coefficients c >= 0 minimising
// sum_i ((features[i] . c - seconds[i]) / seconds[i])^2 (exact: tries every support set; for a
// handful of coefficients). `relative_rms` (optional) receives the fit's relative RMS error.
std::vector<double> FitNonNegative(const std::vector<std::vector<double>>& features,
                                   const std::vector<double>& seconds, double* relative_rms);

// Text file I/O (a flexgraph.CostCalibration text proto). Errors name the file.
absl::Status SaveCalibration(const CostCoefficients& k, const std::string& path);
absl::StatusOr<CostCoefficients> LoadCalibration(const std::string& path);
// $XDG_CACHE_HOME/flexgraph/calibration-<host>-t<threads>.txt (~/.cache when unset).
std::string DefaultCalibrationPath();
// Loads `path` ("" = DefaultCalibrationPath()) when it exists, was made on this host with this
// thread count and `recalibrate` is false; otherwise calibrates and writes it. A non-positive
// `network_bytes_per_second` keeps the stored (or default) bandwidth.
absl::StatusOr<CostCoefficients> LoadOrCalibrate(const std::string& path, bool recalibrate = false,
                                                 double network_bytes_per_second = 0);

class CostModel {
 public:
  // Forward plus backward: backward costs about twice the forward pass.
  static constexpr double kEpochFactor = 3.0;

  // Builds the union graph and the workload of `options.model` on `dataset` (BuildWorkload).
  static absl::StatusOr<CostModel> Create(const graph::Dataset& dataset,
                                          const WorkloadOptions& options,
                                          const CostCoefficients& coefficients);
  CostModel(Csr union_graph, std::shared_ptr<const Workload> workload,
            const CostCoefficients& coefficients);

  int64_t num_vertices() const { return union_graph_.num_rows; }
  const Csr& union_graph() const { return union_graph_; }
  const Workload& workload() const { return *workload_; }
  const CostCoefficients& coefficients() const { return k_; }

  // Estimated compute seconds per epoch of vertex v (its roots' HDGs and its rows' transforms).
  double VertexCompute(int64_t v) const { return compute_[v]; }
  const std::vector<double>& vertex_compute() const { return compute_; }
  // Estimated communication seconds per epoch of a part that sends and receives these floats.
  double CommSeconds(double send_floats, double recv_floats) const;
  // Seconds per float crossing between two parts (both directions, forward and backward): the
  // marginal cost the rebalancer uses for one more or one fewer ghost vector.
  double SecondsPerExchangedFloat() const;

 private:
  Csr union_graph_;
  std::shared_ptr<const Workload> workload_;
  CostCoefficients k_;
  std::vector<double> compute_;
};

// Per-part numbers of a partition, estimated on the actual graph.
struct PartStats {
  int64_t owned_vertices = 0;
  int64_t edges = 0;  // union-graph adjacency entries of owned vertices
  std::vector<int64_t> ghosts;             // per peer: distinct peer vertices this part references
  std::vector<int64_t> row_fetch_vectors;  // per peer, summed over layers (received)
  std::vector<int64_t> partial_vectors;    // per peer, summed over layers (received)
  double send_floats = 0, recv_floats = 0;  // with the cheaper choice per peer pair and layer
  double compute_seconds = 0, comm_seconds = 0;
  double cost() const { return compute_seconds + comm_seconds; }
};

struct PartitionStats {
  int num_parts = 0;
  std::vector<PartStats> parts;
  int64_t edge_cut = 0;      // union-graph edges between parts
  int64_t ghosts_total = 0;  // sum of ghosts over parts and peers
  double max_cost = 0, mean_cost = 0;
  double imbalance = 0;      // max_cost / mean_cost (1 when mean is 0)

  // One row per part: owned, edges, ghosts per peer, compute, comm, total; then the totals.
  std::string ToTable() const;
};

// Checks owners: one entry per vertex of `cost`, each in [0, num_parts). Errors say which.
absl::Status ValidateOwners(const std::vector<int32_t>& owners, int num_parts,
                            const CostModel& cost);
// Estimates every part's numbers. `owners` must pass ValidateOwners (checked). Deterministic for
// any thread count.
PartitionStats ComputeStats(const graph::Dataset& dataset, const std::vector<int32_t>& owners,
                            int num_parts, const CostModel& cost);

}  // namespace fg::partition
