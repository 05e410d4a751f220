#include "runtime/train/exchange_choice.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/plan/planner.h"

namespace fg::runtime {

ExchangeChoice ChooseExchange(const ExchangeChoiceInput& in) {
  ExchangeChoice out;
  auto kind = plan::ParseModelKind(in.model);
  if (!kind.ok() || in.adjacency == nullptr) {
    out.reason = absl::StrCat("1d per peer: runtime/plan does not describe ", in.model);
    return out;
  }
  if (in.workers < kMinGridWorkers) {
    out.reason = absl::StrCat("1d per peer: no process grid of ", in.workers, " workers");
    return out;
  }
  plan::PlanInput p;
  p.graph = plan::CountsOf(*in.adjacency);
  p.model = {.kind = *kind, .features = in.features, .hidden = in.hidden, .classes = in.classes, .layers = in.layers};
  p.workers = in.workers;
  p.device = *plan::DeviceByName("cpu");  // bytes do not depend on the device; memory does not either
  p.device.memory_bytes = in.memory_bytes > 0 ? in.memory_bytes : std::numeric_limits<double>::infinity();
  p.evaluations_per_epoch = in.evaluations_per_epoch;
  const bool self_loops = *kind == plan::ModelKind::kGcn || *kind == plan::ModelKind::kSgc;
  const plan::Cut cut = plan::CountCut(*in.adjacency, in.owners, in.workers, self_loops);
  plan::StrategySpec one_d;
  one_d.mode = plan::OneDMode::kPartial;
  one_d.partition = "run";
  const double one_d_bytes = plan::Predict(p, one_d, &cut).bytes_sent;
  double best = one_d_bytes;
  const int P = in.workers;
  std::vector<std::pair<double, double>> too_big;  // (bytes sent, memory) of grids that do not fit
  auto consider = [&](const plan::StrategySpec& s, const grid::GridSpec& g) {
    const plan::Prediction pr = plan::Predict(p, s, nullptr);
    const double setup = g.scheme == grid::GridScheme::kOnePointFiveD
                             ? GridSetupBytes(*in.adjacency, self_loops, P / g.c, 1)
                             : GridSetupBytes(*in.adjacency, self_loops, g.pr, g.pf);
    if (pr.memory_bytes + setup > p.device.memory_bytes) {
      too_big.emplace_back(pr.bytes_sent, pr.memory_bytes + setup);
    } else if (pr.bytes_sent < best) {
      best = pr.bytes_sent, out.grid = g;
    }
  };
  for (int c = 2; c * c <= P; ++c) {
    if (P % (c * c) != 0) continue;
    plan::StrategySpec s{.scheme = plan::Scheme::kOnePointFiveD, .aware = true, .c = c};
    consider(s, {.scheme = grid::GridScheme::kOnePointFiveD, .c = c});
  }
  // Every 2D and 3D shape with sides of 2 or more (the grid's orientation changes what it sends).
  for (int pr = 2; pr <= P / 2; ++pr) {
    if (P % pr != 0) continue;
    plan::StrategySpec s{.scheme = plan::Scheme::kTwoD, .aware = true};
    s.grid[0] = pr, s.grid[1] = P / pr;
    consider(s, {.scheme = grid::GridScheme::kTwoD, .pr = pr, .pc = P / pr, .pf = 1});
    for (int pc = 2; pc <= P / pr / 2; ++pc) {
      if ((P / pr) % pc != 0) continue;
      plan::StrategySpec t{.scheme = plan::Scheme::kThreeD, .aware = true};
      t.grid[0] = pr, t.grid[1] = pc, t.grid[2] = P / pr / pc;
      consider(t, {.scheme = grid::GridScheme::kThreeD, .pr = pr, .pc = pc, .pf = P / pr / pc});
    }
  }
  out.reason = absl::StrFormat("%s: %.2f MB sent per worker and epoch predicted; 1d per peer %.2f MB",
                               out.grid.active() ? grid::DescribeGrid(out.grid) : std::string("1d per peer"),
                               best / 1e6, one_d_bytes / 1e6);
  int skipped = 0;
  double least = 0;
  for (const auto& [bytes, memory] : too_big) {
    if (bytes >= best) continue;
    least = skipped++ == 0 ? memory : std::min(least, memory);
  }
  if (skipped > 0) {
    absl::StrAppendFormat(&out.reason, "; %d grid(s) sending less skipped: %.1f MB per worker or more predicted, "
                          "%.1f MB available per worker", skipped, least / 1e6, in.memory_bytes / 1e6);
  }
  return out;
}

double GridSetupBytes(const Csr& adjacency, bool self_loops, int blocks, int slices) {
  const double n = static_cast<double>(adjacency.num_rows);
  const double entries = static_cast<double>(adjacency.nnz()) + (self_loops ? n : 0.0);
  return 24.0 * entries / (blocks * slices) + 64.0 * entries / blocks + 16.0 * n;
}

double MemoryPerWorker(const std::vector<double>& hosts, const std::vector<double>& available) {
  double least = std::numeric_limits<double>::infinity();
  for (size_t r = 0; r < hosts.size(); ++r) {
    const double sharing = static_cast<double>(std::count(hosts.begin(), hosts.end(), hosts[r]));
    least = std::min(least, available[r] / sharing);
  }
  return least;
}

}  // namespace fg::runtime
