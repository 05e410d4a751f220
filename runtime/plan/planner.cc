// The performance model's predictions and choice (runtime/plan/planner.h).
#include "runtime/plan/planner.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fg::plan {
namespace {

constexpr double kGiB = 1073741824.0;

double Roofline(const Device& d, double bytes, double flops) {
  return std::max(bytes / d.memory_bytes_per_s, flops / d.gemm_flops_per_s);
}

// This worker's share of one SpMM: entries, output rows and the width it multiplies.
struct Share {
  double entries = 0, rows = 0, width_div = 1, gemm_rows = 0;
};

Share ShareOf(const PlanInput& in, const StrategySpec& s, const Cut* cut, bool self_loops) {
  const double P = in.workers, n = static_cast<double>(in.graph.vertices);
  const double E = static_cast<double>(in.graph.entries) + (self_loops ? n : 0.0);
  Share sh;
  sh.entries = E / P;
  switch (s.scheme) {
    case Scheme::kOneD:
      sh.entries = cut ? *std::max_element(cut->entries.begin(), cut->entries.end()) : E / P;
      sh.rows = cut ? *std::max_element(cut->owned.begin(), cut->owned.end()) : n / P;
      sh.gemm_rows = sh.rows;
      break;
    case Scheme::kOnePointFiveD:
      sh.rows = n * s.c / P;
      sh.gemm_rows = sh.rows;  // the replicas repeat the dense product on their block row
      break;
    case Scheme::kTwoD:
      sh.rows = n / s.grid[0];
      sh.width_div = s.grid[1];
      sh.gemm_rows = n / P;
      break;
    case Scheme::kThreeD:
      sh.rows = n / s.grid[0];
      sh.width_div = s.grid[1];
      sh.gemm_rows = n / P;
      break;
  }
  return sh;
}

std::string Bytes(double b) {
  if (b >= 1e12) return absl::StrFormat("%.2f TB", b / 1e12);
  if (b >= 1e9) return absl::StrFormat("%.2f GB", b / 1e9);
  if (b >= 1e6) return absl::StrFormat("%.2f MB", b / 1e6);
  if (b >= 1e3) return absl::StrFormat("%.2f kB", b / 1e3);
  return absl::StrFormat("%.0f B", b);
}

std::string Seconds(double s) {
  if (s >= 1) return absl::StrFormat("%.3f s", s);
  if (s >= 1e-3) return absl::StrFormat("%.2f ms", s * 1e3);
  return absl::StrFormat("%.1f us", s * 1e6);
}

}  // namespace

absl::StatusOr<Device> DeviceByName(const std::string& name) {
  // GPU rates: this project's GPU checks (bench/results/README.md, 2026-11-26): device-to-device
  // copy (read + written) and float32 GEMM without TF32, measured with the bundle's own kernels.
  if (name == "h100") return Device{"h100", 52.0e12, 3007e9, 80.0 * kGiB, "NVIDIA H100 80GB HBM3, measured 2026-11-26"};
  if (name == "h200") return Device{"h200", 51.1e12, 4229e9, 140.4 * kGiB, "NVIDIA H200, measured 2026-11-26"};
  // DESIGN.md's ceilings of this 2-core machine (OpenBLAS sgemm on two threads, STREAM triad).
  if (name == "cpu") return Device{"cpu", 180e9, 40e9, 16.0 * kGiB, "DESIGN.md machine ceilings (2 cores)"};
  return absl::InvalidArgumentError(absl::StrCat("--device ", name, ": expected cpu, h100 or h200"));
}

absl::StatusOr<Device> DeviceFromCeilingsJson(const std::string& json, double memory_bytes) {
  auto field = [&](const std::string& key) -> absl::StatusOr<double> {
    const size_t at = json.find("\"" + key + "\"");
    if (at == std::string::npos) return absl::InvalidArgumentError(absl::StrCat("ceilings JSON: no field ", key));
    const size_t colon = json.find(':', at);
    if (colon == std::string::npos) return absl::InvalidArgumentError(absl::StrCat("ceilings JSON: field ", key, " has no value"));
    char* end = nullptr;
    const double v = std::strtod(json.c_str() + colon + 1, &end);
    if (end == json.c_str() + colon + 1 || !(v > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("ceilings JSON: field ", key, " is not a positive number"));
    }
    return v;
  };
  Device d{"cpu", 0, 0, memory_bytes, "bench/machine_ceilings"};
  auto gemm = field("gemm_flops_per_s");
  if (!gemm.ok()) return gemm.status();
  auto triad = field("triad_bytes_per_s");
  if (!triad.ok()) return triad.status();
  d.gemm_flops_per_s = *gemm;
  d.memory_bytes_per_s = *triad;
  return d;
}

Prediction Predict(const PlanInput& in, const StrategySpec& spec, const Cut* cut) {
  Prediction pr;
  pr.spec = spec;
  pr.name = spec.Name();
  const std::vector<LayerDims> layers = Layers(in.model);
  const bool self_loops = in.model.kind == ModelKind::kGcn || in.model.kind == ModelKind::kSgc;
  const Share sh = ShareOf(in, spec, cut, self_loops);
  const double P = in.workers, n = static_cast<double>(in.graph.vertices);
  auto spmm = [&](const Spmm& s) {
    const Volume v = SpmmVolume(spec, in.graph, self_loops, cut, in.workers, s.width,
                                std::min(layers[s.layer].in, layers[s.layer].out), s.backward);
    pr.bytes_sent += v.bytes_sent;
    pr.bytes_received += v.bytes_received;
    pr.bytes_received_max += v.bytes_received_max;
    pr.sparse_bytes += v.sparse_bytes;
    pr.messages += v.messages;
    pr.comm_s += v.bytes_received_max / in.link.bytes_per_s + v.messages * in.link.latency_s;
    const double w = static_cast<double>(s.width) / sh.width_div;
    pr.compute_s += Roofline(in.device, sh.entries * (8.0 + 4.0 * w) + sh.rows * w * 4.0, 2.0 * sh.entries * w);
  };
  auto gemm = [&](int l, double times) {
    const LayerDims& d = layers[l];
    if (d.update_flops_per_row <= 0) return;
    const double bytes = 4.0 * sh.gemm_rows * static_cast<double>(d.in + d.out) + 4.0 * d.parameters;
    pr.compute_s += times * Roofline(in.device, bytes, d.update_flops_per_row * sh.gemm_rows);
  };
  // Elementwise ops (dropout, bias, activation, and their backward), memory-bound: `accesses`
  // passes over each of the layer's rows' activation widths.
  auto elementwise = [&](int l, double accesses) {
    pr.compute_s += accesses * 4.0 * sh.gemm_rows * static_cast<double>(layers[l].activation_width) /
                    in.device.memory_bytes_per_s;
  };
  for (const Spmm& s : TrainingSpmms(in.model)) spmm(s);
  for (int l = 0; l < in.model.layers; ++l) {
    gemm(l, l == 0 ? 2.0 : 3.0);  // forward, dW, dX
    elementwise(l, kElementwiseAccessesTraining);
  }
  for (int e = 0; e < in.evaluations_per_epoch; ++e) {
    for (const Spmm& s : EvaluationSpmms(in.model)) spmm(s);
    for (int l = 0; l < in.model.layers; ++l) {
      gemm(l, 1.0);
      elementwise(l, kElementwiseAccessesForward);
    }
  }
  const double params = static_cast<double>(Parameters(in.model));
  if (in.workers > 1) {
    pr.allreduce_bytes = 2.0 * (P - 1.0) / P * params * 4.0;
    pr.bytes_sent += pr.allreduce_bytes;
    pr.bytes_received += pr.allreduce_bytes;
    pr.bytes_received_max += pr.allreduce_bytes;
    pr.messages += 2.0 * (P - 1.0);
    pr.comm_s += pr.allreduce_bytes / in.link.bytes_per_s + 2.0 * (P - 1.0) * in.link.latency_s;
  }
  pr.epoch_s = pr.compute_s + pr.comm_s;

  // Memory: this worker's blocks, features, kept activations, receive buffers and parameters.
  double widest = 0, activations = 0;
  for (const LayerDims& d : layers) {
    widest = std::max(widest, static_cast<double>(d.message));
    activations += static_cast<double>(d.message + d.out) * 4.0;
  }
  const double F = static_cast<double>(in.model.features);
  double m = params * 16.0;  // value, gradient, Adam's two moments
  switch (spec.scheme) {
    case Scheme::kOneD: {
      m += sh.entries * 8.0 + sh.rows * 8.0 + sh.rows * (F * 4.0 + activations);
      double ghosts = spec.mode == OneDMode::kOblivious ? n - n / P : 0;
      if (spec.mode != OneDMode::kOblivious && cut != nullptr) {
        const OneDVectors v = CountVectors(*cut, spec.mode);
        ghosts = *std::max_element(v.received.begin(), v.received.end());
      }
      m += ghosts * widest * 4.0;
      break;
    }
    case Scheme::kOnePointFiveD:
      m += sh.entries * spec.c * 8.0 + sh.rows * 8.0 + sh.rows * (F * 4.0 + activations) + 2.0 * sh.rows * widest * 4.0;
      break;
    case Scheme::kTwoD:
    case Scheme::kThreeD: {
      const double rows = n / P;
      m += 2.0 * sh.entries * 8.0 + rows * (F * 4.0 + activations);
      m += sh.rows * widest / sh.width_div * 4.0 * 2.0;  // a received dense block and the partial output
      m += (spec.scheme == Scheme::kTwoD ? n / spec.grid[0] : n / (spec.grid[0] * spec.grid[2])) * widest * 4.0;
      break;
    }
  }
  pr.memory_bytes = m;
  pr.fits = m <= in.device.memory_bytes;
  return pr;
}

absl::StatusOr<Plan> MakePlan(const PlanInput& in) {
  if (in.workers < 1) return absl::InvalidArgumentError(absl::StrCat("--workers must be at least 1, got ", in.workers));
  if (auto s = Validate(in.model); !s.ok()) return s;
  if (in.graph.vertices < in.workers) {
    return absl::InvalidArgumentError(absl::StrCat("--workers ", in.workers, " exceeds the graph's ",
                                                   in.graph.vertices, " vertices"));
  }
  if (!(in.link.bytes_per_s > 0)) return absl::InvalidArgumentError("--bandwidth_gbps must be positive");
  if (!(in.link.latency_s >= 0)) return absl::InvalidArgumentError("--latency_us must not be negative");
  if (!(in.device.gemm_flops_per_s > 0 && in.device.memory_bytes_per_s > 0)) {
    return absl::InvalidArgumentError("device rates must be positive");
  }
  const bool self_loops = in.model.kind == ModelKind::kGcn || in.model.kind == ModelKind::kSgc;
  const int P = in.workers;
  Plan plan;
  StrategySpec s;
  const Cut expected = ExpectedCut(in.graph, P, self_loops);
  s.mode = OneDMode::kOblivious;
  s.aware = false;
  plan.predictions.push_back(Predict(in, s, &expected));
  s.aware = true;
  auto one_d = [&](const std::string& name, const Cut& cut) {
    for (OneDMode m : {OneDMode::kRows, OneDMode::kPartial}) {
      s.mode = m;
      s.partition = name;
      plan.predictions.push_back(Predict(in, s, &cut));
    }
  };
  one_d("random", expected);
  for (const auto& [name, cut] : in.cuts) {
    if (cut.parts != P) return absl::InvalidArgumentError(absl::StrCat("partition ", name, " has ", cut.parts, " parts, not ", P));
    one_d(name, cut);
  }
  s = StrategySpec{};
  s.scheme = Scheme::kOnePointFiveD;
  for (int c = 2; c * c <= P; ++c) {
    if (P % c != 0) continue;
    s.c = c;
    for (bool aware : {false, true}) {
      s.aware = aware;
      plan.predictions.push_back(Predict(in, s, nullptr));
    }
  }
  for (int k : {2, 3}) {
    if (P < (k == 2 ? 4 : 8)) continue;
    const std::vector<int> grid = NearCubicGrid(P, k);
    if (grid.front() == 1) continue;  // a prime P: no grid
    s = StrategySpec{};
    s.scheme = k == 2 ? Scheme::kTwoD : Scheme::kThreeD;
    for (int i = 0; i < k; ++i) s.grid[i] = grid[i];
    for (bool aware : {false, true}) {
      s.aware = aware;
      plan.predictions.push_back(Predict(in, s, nullptr));
    }
  }
  // The best: the fastest predicted epoch among those that fit.
  for (size_t i = 0; i < plan.predictions.size(); ++i) {
    const Prediction& p = plan.predictions[i];
    if (p.fits && (plan.best < 0 || p.epoch_s < plan.predictions[plan.best].epoch_s)) plan.best = static_cast<int>(i);
  }
  if (plan.best < 0) {
    plan.reason = absl::StrCat("no scheme fits ", Bytes(in.device.memory_bytes), " per worker: use more workers");
    return plan;
  }
  const Prediction& b = plan.predictions[plan.best];
  int second = -1;
  for (size_t i = 0; i < plan.predictions.size(); ++i) {
    const Prediction& p = plan.predictions[i];
    if (static_cast<int>(i) == plan.best || !p.fits || p.spec.scheme == b.spec.scheme) continue;
    if (second < 0 || p.epoch_s < plan.predictions[second].epoch_s) second = static_cast<int>(i);
  }
  const bool comm_bound = b.comm_s > b.compute_s;
  plan.reason = absl::StrCat(b.name, ": ", Seconds(b.epoch_s), " per epoch, ",
                             comm_bound ? "communication" : "compute", "-bound (",
                             Bytes(b.bytes_received_max), " received by the busiest worker)");
  if (second >= 0) {
    const Prediction& o = plan.predictions[second];
    absl::StrAppend(&plan.reason, absl::StrFormat("; %.2fx faster than the best other scheme, %s (%s)",
                                                  o.epoch_s / b.epoch_s, o.name, Seconds(o.epoch_s)));
  }
  return plan;
}

std::string FormatPlan(const PlanInput& in, const Plan& plan) {
  std::string out = absl::StrFormat(
      "model %s, %d layers (features %d, hidden %d, classes %d); %d vertices, %d adjacency entries; "
      "%d workers of %s (%s); link %.1f Gbit/s, %.1f us\n",
      ModelName(in.model.kind), in.model.layers, in.model.features, in.model.hidden, in.model.classes,
      in.graph.vertices, in.graph.entries, in.workers, in.device.name, in.device.source,
      in.link.bytes_per_s * 8 / 1e9, in.link.latency_s * 1e6);
  absl::StrAppend(&out, absl::StrFormat("%-30s %12s %12s %12s %12s %11s %11s %11s\n", "strategy", "sent/worker",
                                        "recv/worker", "recv max", "memory", "compute", "comm", "epoch"));
  for (size_t i = 0; i < plan.predictions.size(); ++i) {
    const Prediction& p = plan.predictions[i];
    absl::StrAppend(&out, absl::StrFormat("%-30s %12s %12s %12s %12s %11s %11s %11s%s\n", p.name, Bytes(p.bytes_sent),
                                          Bytes(p.bytes_received), Bytes(p.bytes_received_max), Bytes(p.memory_bytes),
                                          Seconds(p.compute_s), Seconds(p.comm_s), Seconds(p.epoch_s),
                                          static_cast<int>(i) == plan.best ? "  <- best"
                                          : p.fits                       ? ""
                                                                         : "  (does not fit)"));
  }
  absl::StrAppend(&out, "chosen: ", plan.reason, "\n");
  absl::StrAppend(&out, "(model predictions; `launch --exchange 1d | 1.5d:c=C | 2d | 3d` runs a scheme, `--exchange auto` the one "
                        "sending the fewest bytes)\n");
  return out;
}

std::string PlanJson(const PlanInput& in, const Plan& plan) {
  std::string out = absl::StrFormat(
      "{\"model\": \"%s\", \"layers\": %d, \"features\": %d, \"hidden\": %d, \"classes\": %d, "
      "\"vertices\": %d, \"entries\": %d, \"workers\": %d, \"device\": \"%s\", \"device_memory_bytes\": %.6g, "
      "\"bandwidth_bytes_per_s\": %.6g, "
      "\"latency_s\": %.6g, \"evaluations_per_epoch\": %d, \"strategies\": [",
      ModelName(in.model.kind), in.model.layers, in.model.features, in.model.hidden, in.model.classes,
      in.graph.vertices, in.graph.entries, in.workers, in.device.name, in.device.memory_bytes, in.link.bytes_per_s,
      in.link.latency_s,
      in.evaluations_per_epoch);
  for (size_t i = 0; i < plan.predictions.size(); ++i) {
    const Prediction& p = plan.predictions[i];
    absl::StrAppend(&out, i ? ", " : "",
                    absl::StrFormat("{\"name\": \"%s\", \"bytes_sent_per_worker\": %.6g, "
                                    "\"bytes_received_per_worker\": %.6g, \"bytes_received_max\": %.6g, "
                                    "\"allreduce_bytes\": %.6g, \"messages\": %.6g, \"memory_bytes\": %.6g, "
                                    "\"compute_seconds\": %.6g, \"comm_seconds\": %.6g, \"epoch_seconds\": %.6g, "
                                    "\"fits\": %s}",
                                    p.name, p.bytes_sent, p.bytes_received, p.bytes_received_max, p.allreduce_bytes,
                                    p.messages, p.memory_bytes, p.compute_s, p.comm_s, p.epoch_s,
                                    p.fits ? "true" : "false"));
  }
  absl::StrAppend(&out, "], \"best\": ", plan.best >= 0 ? absl::StrCat("\"", plan.predictions[plan.best].name, "\"") : "null",
                  ", \"reason\": \"", plan.reason, "\"}\n");
  return out;
}

}  // namespace fg::plan
