// Trainer::StartGrid: whether this run trains over a process grid (--exchange 1.5d|2d|3d, or
// --exchange auto's choice, runtime/train/exchange_choice.h), and starting it.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/progress.h"
#include "runtime/train/exchange_choice.h"
#include "runtime/train/trainer.h"

namespace fg::runtime {
namespace {

// This machine's key among the workers' hosts: its host name hashed (FNV-1a) to 52 bits, exact
// as a double.
double HostKey() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  uint64_t h = 1469598103934665603ull;
  for (const char* c = name; *c != 0; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  return static_cast<double>(h & ((1ull << 52) - 1));
}

// The workers' hosts and memory, summed at setup (epoch 0); trainer_run.cc names the other steps.
constexpr int kStepWorkerMemory = 7;

}  // namespace

absl::Status Trainer::StartGrid() {
  if (!distributed()) return absl::OkStatus();
  // Why this run cannot train over a grid (OK: it can); `flag` starts the message.
  const std::string& path = config_.dataset().path();
  auto refusal = [&](const std::string& flag) -> absl::Status {
    if (dataset_.IsGraphSet() || space_.num_types() != 1) {
      return absl::UnimplementedError(absl::StrCat(flag, "grids train on one homogeneous graph; ", path, " is ",
                                                   dataset_.IsGraphSet() ? std::string("a set of graphs")
                                                                         : absl::StrCat("a graph of ", space_.num_types(), " node types")));
    }
    if (config_.train().batch_size() > 0) {
      return absl::UnimplementedError(absl::StrCat(flag, "grids train on the whole graph; leave --batch_size at 0"));
    }
    if (device_ != Device::kCpu) {
      return absl::UnimplementedError(absl::StrCat(flag, "grid products run on the CPU; leave --device at cpu"));
    }
    if (task_->NeedsAllRows()) {
      return absl::UnimplementedError(absl::StrCat(flag, "grids train node classification; ", path, " holds ",
                                                   task_->Describe()));
    }
    for (int i = 0; dataset_.part && i < model_->num_layers(); ++i) {
      if (!model_->layer(i).LocalSelection()) {
        return absl::UnimplementedError(absl::StrCat(
            flag, "over the parts of ", path, " a grid runs layers that select from their roots' own edges; layer ", i,
            " of ", config_.model().name(), " walks or follows metapaths: train on the source dataset"));
      }
    }
    return absl::OkStatus();
  };
  grid::GridSpec spec = exec_.setup().grid;
  bool automatic = false;
  // Auto plans from the whole graph: a part's run keeps the 1D exchange.
  if (!spec.active() && exec_.setup().auto_grid && exec_.setup().exchange == ExchangeMode::kAuto && !dataset_.part &&
      refusal("").ok()) {
    ExchangeChoiceInput in{.adjacency = &dataset_.Adjacency(), .owners = {}, .workers = exec_.setup().comm->size(),
                           .model = config_.model().name(), .features = spec_.FeatureDim(space_.type_name(0)),
                           .hidden = config_.model().hidden(), .classes = task_->num_classes(),
                           .layers = config_.model().layers(),
                           .evaluations_per_epoch = config_.train().eval_every() <= 1 ? 1 : 0};
    // Every worker must choose the same: the memory is agreed on, shared among a host's workers.
    const int P = exec_.setup().comm->size(), rank = exec_.rank();
    if (P >= kMinGridWorkers) {
      std::vector<double> shared(2 * static_cast<size_t>(P), 0.0);
      shared[2 * rank] = HostKey();
      shared[2 * rank + 1] = static_cast<double>(AvailableMemoryBytes());
      exec_.SumDoubles(&shared, 0, kStepWorkerMemory);
      FG_RETURN_IF_ERROR(exec_.status());
      std::vector<double> hosts(P), available(P);
      for (int r = 0; r < P; ++r) hosts[r] = shared[2 * r], available[r] = shared[2 * r + 1];
      in.memory_bytes = MemoryPerWorker(hosts, available);
    }
    in.owners.resize(exec_.ownership().num_vertices());
    for (size_t v = 0; v < in.owners.size(); ++v) in.owners[v] = exec_.ownership().Of(static_cast<int64_t>(v));
    const ExchangeChoice choice = ChooseExchange(in);
    if (!config_.output().quiet() && exec_.rank() == 0) std::fprintf(stderr, "exchange auto: %s\n", choice.reason.c_str());
    spec = choice.grid;
    automatic = spec.active();
  }
  if (!spec.active()) return absl::OkStatus();
  FG_RETURN_IF_ERROR(refusal(absl::StrCat("--exchange ", grid::DescribeGrid(spec), ": ")));
  // Over a partitioned dataset the grid's row blocks are its parts (LoadData read this block's).
  return exec_.StartGrid(spec, space_.size(), MixKey(config_.train().seed(), 0x6121D), automatic,
                         dataset_.part ? dataset_.part->bounds[0] : std::vector<int64_t>{});
}

}  // namespace fg::runtime
