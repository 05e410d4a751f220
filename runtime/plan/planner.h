// The performance model behind `flexgraph plan`: for a graph, a model, P workers, a device and a
// link, every training scheme's bytes per worker and epoch (runtime/plan/volumes.h), memory per
// worker and epoch time, and the scheme it picks. Thread-safe (pure functions).
//
// Epoch time = compute + communication, not overlapped (an upper bound on a pipelined run):
//   compute: per kernel a roofline max(bytes / memory bandwidth, flops / GEMM peak) — each SpMM
//     (2 E w flops; its entries (8 bytes), one gathered w-wide row per entry and its output rows
//     moved) and each layer's dense products (forward; backward twice: dX and dW, once at layer 0)
//     on the worker's share, the busiest worker for a measured 1D partition;
//     and the elementwise ops around them (dropout, bias, activation), memory-bound: per layer
//     kElementwiseAccesses* passes over its rows' activations (LayerDims::activation_width);
//   communication: per SpMM, the busiest worker's bytes received / link bandwidth + message steps
//     x latency, plus the gradient all-reduce (2 (P-1) steps).
// Memory per worker: its sparse blocks (8 bytes an entry, 8 a row), input features, the activations
// kept for backward (message and output rows per layer), receive buffers, and the parameters with
// their gradients and Adam's two moments. A scheme that does not fit the device is never picked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/plan/volumes.h"
#include "runtime/plan/workload.h"

namespace fg::plan {

// Passes over a layer's activations by its elementwise ops: forward, a read and a write; a training
// step adds the backward's gradient read and written, and the kept activation and dropout mask read.
inline constexpr double kElementwiseAccessesForward = 2.0;
inline constexpr double kElementwiseAccessesTraining = 6.0;

struct Device {
  std::string name;
  double gemm_flops_per_s = 0;  // float32 GEMM peak
  double memory_bytes_per_s = 0;  // device memory bandwidth (read + written)
  double memory_bytes = 0;        // capacity per worker
  // Rates and capacity are one worker's: `plan --workers_per_device K` divides a device's by K.
  std::string source;             // where the rates come from
};
// "cpu" (DESIGN.md's 2-core ceilings, or bench/machine_ceilings' JSON via --ceilings_json),
// "h100", "h200" (measured on this project's GPU checks, bench/results/README.md). Errors name --device.
absl::StatusOr<Device> DeviceByName(const std::string& name);
// A device from machine_ceilings' output ({"triad_bytes_per_s": ..., "gemm_flops_per_s": ...}).
absl::StatusOr<Device> DeviceFromCeilingsJson(const std::string& json, double memory_bytes);

struct Link {
  double bytes_per_s = 25e9;  // per worker, each direction
  double latency_s = 5e-6;    // per message step
};

struct PlanInput {
  GraphCounts graph;
  ModelShape model;
  int workers = 1;
  Device device;
  Link link;
  // Measured 1D partitions of the graph (CountCut), each named; empty: the expected random cut.
  std::vector<std::pair<std::string, Cut>> cuts;
  int evaluations_per_epoch = 0;  // forward-only passes added per epoch (0: training only)
};

struct Prediction {
  StrategySpec spec;
  std::string name;
  double bytes_sent = 0, bytes_received = 0, bytes_received_max = 0;  // per worker and epoch
  double sparse_bytes = 0;                                          // of bytes_received
  double allreduce_bytes = 0;                                       // gradients, per worker
  double messages = 0;
  double memory_bytes = 0;
  double compute_s = 0, comm_s = 0, epoch_s = 0;
  bool fits = true;
};

struct Plan {
  std::vector<Prediction> predictions;
  int best = -1;       // index into predictions; -1 when nothing fits
  std::string reason;  // one line: why the best wins
};

// Every scheme for input.workers: 1D (oblivious; rows and partial for each cut, or the expected
// random cut), 1.5D at each c >= 2 dividing P with c * c <= P, the most nearly square 2D grid and
// cubic 3D grid (P >= 4 and P >= 8), each aware and oblivious. Errors name the bad input.
absl::StatusOr<Plan> MakePlan(const PlanInput& input);

// One scheme's prediction (the contract a scheme's implementation is checked against).
Prediction Predict(const PlanInput& input, const StrategySpec& spec, const Cut* cut);

// The table `flexgraph plan` prints, and its JSON (plan, inputs echoed).
std::string FormatPlan(const PlanInput& input, const Plan& plan);
std::string PlanJson(const PlanInput& input, const Plan& plan);

}  // namespace fg::plan
