#include "runtime/cluster/leader.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/file.h"
#include "partition/partitioned_dataset.h"
#include "partition/partitioner.h"
#include "runtime/train/dataset_view.h"
#include "runtime/train/summary.h"

namespace fg::runtime {

absl::StatusOr<partition::CostModel> CostModelForRun(const graph::Dataset& ds, const flexgraph::RunConfig& train) {
  Progress progress("HDGs of " + train.model().name(), 0);
  return partition::CostModel::Create(ds, WorkloadOptionsFrom(train), partition::CostCoefficients{});
}

absl::StatusOr<partition::PartitionPlan> PartitionForRun(const graph::Dataset& ds, const partition::CostModel& cost,
                                                        const flexgraph::RunConfig& train, int workers,
                                                        partition::Method method) {
  Progress progress(absl::StrCat("partition (", partition::MethodName(method), ", ", workers, " parts)"), 0);
  return partition::Partition(ds, cost, {.num_parts = workers, .method = method, .seed = train.train().seed(), .rebalance = {}});
}

absl::StatusOr<OwnerPlan> PlanOwners(const flexgraph::RunConfig& train, int workers, const std::string& method_name,
                                     const grid::GridSpec& grid) {
  OwnerPlan out;
  const std::string& path = train.dataset().path();
  if (partition::IsPartitionedDataset(path)) {
    // The parts carry the partition; the leader reads only the metadata.
    FG_ASSIGN_OR_RETURN(const flexgraph::PartitionedDataset meta, partition::ReadPartitionMeta(path));
    if (grid.active()) {
      FG_ASSIGN_OR_RETURN(const grid::GridSpec g, grid::ResolveGridSpec(grid, workers));
      if (meta.part_files_size() != grid::GridRowBlocks(g, workers)) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": a partitioned dataset of ", meta.part_files_size(), " parts needs one per row block of --exchange ",
            grid::DescribeGrid(g), " over ", workers, " workers (", grid::GridRowBlocks(g, workers), ")"));
      }
    } else if (meta.part_files_size() != workers) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": a partitioned dataset of ",
                                                     meta.part_files_size(),
                                                     " parts needs as many workers, not ", workers));
    }
    out.summary = out.description = partition::DescribePartitioned(meta);
    return out;
  }
  if (grid.active()) {
    // An explicit process grid cuts the vertices into its own blocks: no partition to plan.
    FG_ASSIGN_OR_RETURN(const grid::GridSpec g, grid::ResolveGridSpec(grid, workers));
    out.summary = out.description =
        absl::StrCat("--exchange ", grid::DescribeGrid(g), ": no partition (the grid's blocks)\n");
    return out;
  }
  // A dataset every worker loads whole: partition it here; every worker gets the owner table.
  graph::LoadOptions load;
  load.split = train.dataset().split();
  std::optional<Progress> progress(std::in_place, "load " + path, 0);
  FG_ASSIGN_OR_RETURN(graph::Dataset loaded, graph::LoadDataset(path, load));
  FG_RETURN_IF_ERROR(loaded.graph.ToInt32Indices());
  FG_ASSIGN_OR_RETURN(graph::Dataset ds, ApplyView(std::move(loaded), train.dataset()));
  FG_ASSIGN_OR_RETURN(partition::Method method, partition::ParseMethod(method_name));
  progress.reset();
  FG_ASSIGN_OR_RETURN(const partition::CostModel cost, CostModelForRun(ds, train));
  FG_ASSIGN_OR_RETURN(partition::PartitionPlan plan, PartitionForRun(ds, cost, train, workers, method));
  out.owners = std::move(plan.owners);
  out.description = absl::StrFormat("%s partition into %d parts, imbalance %.3f, edge cut %lld\n",
                                    partition::MethodName(plan.method), plan.num_parts,
                                    plan.stats.imbalance, static_cast<long long>(plan.stats.edge_cut));
  out.summary = plan.stats.ToTable();
  return out;
}

flexgraph::MetricsRequest WorkerMetrics(int rank, const absl::StatusOr<TrainResult>& result) {
  flexgraph::MetricsRequest metrics;
  metrics.set_rank(rank);
  if (!result.ok()) {
    metrics.set_error(std::string(result.status().message()));
    return metrics;
  }
  metrics.set_final(true);
  if (rank == 0) metrics.set_summary_json(SummaryJson(*result));
  metrics.set_compute_seconds(result->traffic.compute_seconds);
  metrics.set_wait_seconds(result->traffic.wait_seconds);
  metrics.set_bytes_features(result->traffic.bytes_features);
  metrics.set_peak_rss_bytes(result->peak_rss_bytes);
  metrics.set_peak_tensor_bytes(result->peak_tensor_bytes);
  metrics.set_bytes_partials(result->traffic.bytes_partials);
  metrics.set_bytes_gradients(result->traffic.bytes_gradients);
  metrics.set_bytes_allreduce(result->traffic.bytes_allreduce);
  metrics.set_bytes_control(result->traffic.bytes_control);
  metrics.set_bytes_setup(result->traffic.bytes_setup);
  metrics.set_overlap(result->traffic.overlap);
  metrics.set_epochs(result->epochs);
  metrics.set_vectors_chosen(result->traffic.vectors_chosen);
  metrics.set_vectors_rows_only(result->traffic.vectors_rows_only);
  metrics.set_vectors_partial_only(result->traffic.vectors_partial_only);
  metrics.set_vectors_naive(result->traffic.vectors_naive);
  return metrics;
}

absl::Status WriteRunSummary(const flexgraph::RunConfig& train,
                             const std::vector<flexgraph::MetricsRequest>& metrics,
                             double leader_peak_rss_bytes) {
  const std::string& summary_path = train.output().summary_json();
  if (summary_path.empty()) return absl::OkStatus();
  FG_ASSIGN_OR_RETURN(google::protobuf::Struct summary,
                      StructFromJson(metrics[0].summary_json(), "summary of worker 0"));
  auto& fields = *summary.mutable_fields();
  fields["world_size"] = NumberValue(static_cast<double>(metrics.size()));
  fields["coordinator_peak_rss_bytes"] = NumberValue(leader_peak_rss_bytes);
  auto* workers = fields["workers"].mutable_list_value();
  double bytes_total = 0;
  for (size_t r = 0; r < metrics.size(); ++r) {
    const auto& m = metrics[r];
    const double epochs = std::max(1, m.epochs());
    bytes_total += m.bytes_features() + m.bytes_partials() + m.bytes_gradients() + m.bytes_allreduce() +
                   m.bytes_control() + m.bytes_setup();
    auto& w = *workers->add_values()->mutable_struct_value()->mutable_fields();
    w["rank"] = NumberValue(static_cast<double>(r));
    // Whole bytes per epoch.
    w["bytes_features_per_epoch"] = NumberValue(std::floor(m.bytes_features() / epochs));
    w["bytes_partials_per_epoch"] = NumberValue(std::floor(m.bytes_partials() / epochs));
    w["bytes_gradients_per_epoch"] = NumberValue(std::floor(m.bytes_gradients() / epochs));
    w["bytes_allreduce_per_epoch"] = NumberValue(std::floor(m.bytes_allreduce() / epochs));
    w["bytes_control_per_epoch"] = NumberValue(std::floor(m.bytes_control() / epochs));
    w["bytes_setup"] = NumberValue(static_cast<double>(m.bytes_setup()));  // once per run
    w["peak_rss_bytes"] = NumberValue(m.peak_rss_bytes());
    w["peak_tensor_bytes"] = NumberValue(m.peak_tensor_bytes());
    w["compute_seconds"] = NumberValue(m.compute_seconds());
    w["wait_seconds"] = NumberValue(m.wait_seconds());
    w["overlap"] = NumberValue(m.overlap());
    auto& v = *w["vectors_per_pass"].mutable_struct_value()->mutable_fields();
    v["chosen"] = NumberValue(m.vectors_chosen());
    v["rows_only"] = NumberValue(m.vectors_rows_only());
    v["partial_only"] = NumberValue(m.vectors_partial_only());
    v["naive"] = NumberValue(m.vectors_naive());
  }
  fields["bytes_total"] = NumberValue(bytes_total);
  return graph::io::WriteFileAtomically(summary_path, StructToJson(summary));
}

}  // namespace fg::runtime
