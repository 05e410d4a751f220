// `flexgraph partition`: computes a PartitionPlan (partition/plan.h) for a dataset and a model's
// cost model, prints per part the owned vertices, edges, ghosts per peer and the estimated compute
// and communication cost, then the imbalance (max / mean estimated cost), and writes the
// partitioned dataset (partition/partitioned_dataset.h) that workers load one part each.
//
//   flexgraph partition --dataset ../shared/data/cora --parts 4 --method balanced --model gcn --out cora-4
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/graph/dataset.h"
#include "nau/model.h"
#include "flexgraph/graph/io/file.h"
#include "partition/partitioned_dataset.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/train_flags.h"
#include "runtime/train/config.h"
#include "runtime/train/dataset_view.h"

namespace fg::cli {
namespace {

struct Invocation {
  std::string dataset, out, summary_json, calibration;
  flexgraph::DatasetConfig data;
  bool recalibrate = false, quiet = false;
  double network_bytes_per_second = 0;
  graph::LoadOptions load;
  partition::WorkloadOptions workload;
  partition::PartitionRequest request;
};

void AddFlags(FlagSet* f) {
  // The dataset and the model whose HDGs and layer costs weigh the vertices, as `train` takes them
  // (the seed also keys hashing and METIS).
  AddModelFlags(f);
  f->AddString("parts", "2", "number of parts (workers, or a process grid's row blocks); over --config's partition.parts");
  f->AddString("method", "balanced",
               "hash, range, metis or balanced (METIS + cost-model rebalancing); over --config's "
               "partition.method");
  f->AddString("out", "", "directory of the partitioned dataset to write, new or empty (default: <dataset>-<method>-<parts>)");
  f->AddString("summary_json", "", "also write a JSON summary to this file");
  f->AddString("calibration", "",
               "cost model calibration file (default: $XDG_CACHE_HOME/flexgraph/calibration-<host>-t<threads>.txt)");
  f->AddBool("recalibrate", false, "re-measure the cost model coefficients");
  f->AddString("network_gbps", "", "network bandwidth per worker in Gbit/s (default: stored, else 10)");
  f->AddString("metis_memory_gib", "", "refuse METIS above this estimated memory (default: available)");
  f->AddString("max_rounds", "", "rebalancer: maximum exact cost evaluations (default 40)");
  f->AddString("threads", "", "threads (default: all cores)");
  f->AddBool("quiet", false, "no progress output");
}

absl::StatusOr<Invocation> FromFlags(const FlagSet& f) {
  FG_ASSIGN_OR_RETURN(const flexgraph::RunConfig config, RunConfigFromFlags(f));
  Invocation inv;
  inv.dataset = config.dataset().path();
  inv.data = config.dataset();
  inv.load.split = config.dataset().split();
  inv.load.cache_dir = config.dataset().cache_dir();
  inv.workload = runtime::WorkloadOptionsFrom(config);
  inv.request.seed = config.train().seed();
  auto positive = [&](const char* name, int64_t min) -> absl::StatusOr<int64_t> {
    FG_ASSIGN_OR_RETURN(int64_t v, f.GetInt(name));
    if (v < min) return absl::InvalidArgumentError(absl::StrCat("--", name, " must be at least ", min, ", got ", v));
    return v;
  };
  // --parts and --method, else the --config file's partition section (checked with the rest of
  // the configuration), else the flags' defaults.
  flexgraph::PartitionConfig from_file;
  if (f.IsSet("config")) {
    FG_ASSIGN_OR_RETURN(const flexgraph::RunConfig file, runtime::ReadConfigFile(f.Get("config")));
    from_file = file.partition();
  }
  int64_t parts = from_file.parts();
  if (f.IsSet("parts") || !from_file.has_parts()) {
    FG_ASSIGN_OR_RETURN(parts, f.GetInt("parts"));
  }
  if (parts < 1) return absl::InvalidArgumentError(absl::StrCat("--parts must be at least 1, got ", parts));
  inv.request.num_parts = static_cast<int>(parts);
  const std::string method =
      f.IsSet("method") || !from_file.has_method() ? f.Get("method") : from_file.method();
  FG_ASSIGN_OR_RETURN(inv.request.method, partition::ParseMethod(method));
  if (f.IsSet("network_gbps")) {
    FG_ASSIGN_OR_RETURN(double gbps, f.GetDouble("network_gbps"));
    if (!(gbps > 0)) return absl::InvalidArgumentError("--network_gbps must be positive");
    inv.network_bytes_per_second = gbps * 1e9 / 8;
  }
  if (f.IsSet("metis_memory_gib")) {
    FG_ASSIGN_OR_RETURN(double gib, f.GetDouble("metis_memory_gib"));
    if (!(gib > 0)) return absl::InvalidArgumentError("--metis_memory_gib must be positive");
    inv.request.metis_memory_limit_bytes = static_cast<int64_t>(gib * 1073741824.0);
  }
  if (f.IsSet("max_rounds")) {
    FG_ASSIGN_OR_RETURN(int64_t r, positive("max_rounds", 0));
    inv.request.rebalance.max_rounds = static_cast<int>(r);
  }
  if (f.IsSet("threads")) {
    FG_ASSIGN_OR_RETURN(int64_t t, positive("threads", 1));
    SetNumThreads(static_cast<int>(t));
  }
  inv.out = f.Get("out");
  // Refused before any work, as generate and convert refuse a filled directory.
  if (!inv.out.empty()) FG_RETURN_IF_ERROR(graph::io::RequireNewOrEmptyDirectory("--out", inv.out));
  inv.summary_json = f.Get("summary_json");
  inv.calibration = f.Get("calibration");
  inv.recalibrate = f.GetBool("recalibrate");
  inv.quiet = f.GetBool("quiet");
  return inv;
}

absl::Status Run(Invocation& inv) {
  Progress::SetQuiet(inv.quiet);
  graph::Dataset ds;
  {
    Progress progress(absl::StrCat("load ", inv.dataset), 0);
    FG_ASSIGN_OR_RETURN(ds, graph::LoadDataset(inv.dataset, inv.load));
  }
  FG_RETURN_IF_ERROR(ds.graph.ToInt32Indices());
  FG_ASSIGN_OR_RETURN(ds, runtime::ApplyView(std::move(ds), inv.data));
  const std::string calibration =
      inv.calibration.empty() ? partition::DefaultCalibrationPath() : inv.calibration;
  partition::CostCoefficients k;
  {
    Progress progress("cost model calibration", 0);
    FG_ASSIGN_OR_RETURN(k, partition::LoadOrCalibrate(calibration, inv.recalibrate,
                                                      inv.network_bytes_per_second));
  }
  std::optional<partition::CostModel> cost_model;
  {
    Progress progress(absl::StrCat("HDGs of ", inv.workload.model), 0);
    FG_ASSIGN_OR_RETURN(cost_model, partition::CostModel::Create(ds, inv.workload, k));
  }
  const partition::CostModel& cost = *cost_model;
  partition::PartitionPlan plan;
  {
    Progress progress(absl::StrCat("partition (", partition::MethodName(inv.request.method), ")"), 0);
    FG_ASSIGN_OR_RETURN(plan, partition::Partition(ds, cost, inv.request));
  }
  const partition::Workload& w = cost.workload();
  std::printf("%s: %lld vertices, %lld union-graph edges; model %s (%zu layers, %lld HDG entries)\n",
              ds.name.c_str(), static_cast<long long>(cost.num_vertices()),
              static_cast<long long>(cost.union_graph().nnz() / 2), w.model.c_str(),
              w.layers.size(), static_cast<long long>(w.hdg_entries));
  std::printf("cost model (%s): %.3g ns per entry-float, %.3g ns per row-float, %.3g GFLOP/s GEMM, "
              "%.3g ns per gathered float, network %.3g Gbit/s\n",
              calibration.c_str(), k.entry_float_seconds * 1e9, k.row_float_seconds * 1e9,
              k.gemm_flop_seconds > 0 ? 1e-9 / k.gemm_flop_seconds : 0.0,
              k.gather_float_seconds * 1e9, k.network_bytes_per_second * 8 / 1e9);
  std::printf("%d parts, method %s (%.2f s)\n%s", plan.num_parts,
              partition::MethodName(plan.method), plan.seconds, plan.stats.ToTable().c_str());
  std::string out = inv.out;
  if (out.empty()) {
    out = absl::StrCat(ds.name.empty() ? "dataset" : ds.name, "-",
                       partition::MethodName(plan.method), "-", plan.num_parts);
    for (char& c : out) {
      if (c == '/' || c == ':' || c == ',' || c == '=') c = '_';
    }
  }
  {
    Progress progress(absl::StrCat("write ", out), 0);
    FG_RETURN_IF_ERROR(partition::WritePartitionedDataset(ds, plan, inv.dataset, out));
  }
  std::printf("partitioned dataset written to %s (train on it: flexgraph launch --workers %d -- "
              "train --dataset %s)\n", out.c_str(), plan.num_parts, out.c_str());
  if (!inv.summary_json.empty()) {
    FG_RETURN_IF_ERROR(graph::io::WriteFileAtomically(inv.summary_json, partition::SummaryJson(plan)));
  }
  return absl::OkStatus();
}

int PartitionMain(const std::vector<std::string>& args) {
  FlagSet flags("partition",
                "Partitions a dataset for distributed training: writes one part per worker (or per row block of a process grid).");
  AddFlags(&flags);
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    std::fprintf(stderr, "flexgraph partition: %s\n\n%s", std::string(s.message()).c_str(),
                 flags.Usage().c_str());
    return 2;
  }
  if (flags.help_requested()) {
    std::printf("%s", flags.Usage().c_str());
    return 0;
  }
  auto inv = FromFlags(flags);
  if (!inv.ok()) {
    std::fprintf(stderr, "flexgraph partition: %s\n", std::string(inv.status().message()).c_str());
    return 2;
  }
  if (absl::Status s = Run(*inv); !s.ok()) {
    std::fprintf(stderr, "flexgraph partition: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}

CommandRegistrar partition_command("partition", "partition a dataset into parts, one per worker",
                                   PartitionMain);

}  // namespace
}  // namespace fg::cli
