#include "partition/plan.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/graph/io/file.h"
#include "partition/union_graph.h"
#include "proto/partition.pb.h"

namespace fg::partition {

std::vector<int32_t> PartitionPlan::OwnedVertices(int part) const {
  std::vector<int32_t> mine;
  for (size_t v = 0; v < owners.size(); ++v) {
    if (owners[v] == part) mine.push_back(static_cast<int32_t>(v));
  }
  return mine;
}

absl::StatusOr<PartitionPlan> Partition(const graph::Dataset& dataset, const CostModel& cost,
                                        const PartitionRequest& request) {
  Stopwatch watch;
  const int64_t n = cost.num_vertices();
  if (TypeOffsets(dataset.graph).back() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("cost model was built for another dataset than ", dataset.name));
  }
  if (request.num_parts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("parts must be at least 1, got ", request.num_parts));
  }
  if (request.num_parts > n) {
    return absl::InvalidArgumentError(absl::StrCat("cannot split ", n, " vertices of ", dataset.name,
                                                   " into ", request.num_parts, " parts"));
  }
  PartitionInput input;
  input.graph = &cost.union_graph();
  input.seed = request.seed;
  input.memory_limit_bytes = request.metis_memory_limit_bytes;
  const bool metis = request.method == Method::kMetis || request.method == Method::kBalanced;
  if (metis) {
    input.vertex_weights = MetisVertexWeights(cost);
    input.memory_weights = MetisMemoryWeights(cost);
    input.edge_weights = MetisEdgeWeights(cost);
  }
  FG_ASSIGN_OR_RETURN(std::vector<int32_t> owners,
                      MakePartitioner(request.method)->Assign(input, request.num_parts));

  PartitionPlan plan;
  plan.num_parts = request.num_parts;
  plan.method = request.method;
  plan.dataset = dataset.name;
  plan.model = cost.workload().model;
  plan.seed = request.seed;
  plan.node_types = dataset.graph.node_types;
  plan.type_sizes = dataset.graph.num_nodes;
  if (request.method == Method::kBalanced) {
    RebalanceResult r =
        Rebalance(dataset, cost, std::move(owners), request.num_parts, request.rebalance);
    plan.owners = std::move(r.owners);
    plan.stats = std::move(r.stats);
  } else {
    plan.owners = std::move(owners);
    plan.stats = ComputeStats(dataset, plan.owners, plan.num_parts, cost);
  }
  plan.seconds = watch.Seconds();
  return plan;
}

absl::Status CheckPlanMatches(const PartitionPlan& plan, const graph::Dataset& dataset) {
  const graph::HeteroGraph& g = dataset.graph;
  if (plan.node_types != g.node_types || plan.type_sizes != g.num_nodes) {
    std::vector<std::string> want, have;
    for (size_t t = 0; t < g.node_types.size(); ++t) {
      want.push_back(absl::StrCat(g.node_types[t], ":", g.num_nodes[t]));
    }
    for (size_t t = 0; t < plan.node_types.size() && t < plan.type_sizes.size(); ++t) {
      have.push_back(absl::StrCat(plan.node_types[t], ":", plan.type_sizes[t]));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "partition plan for dataset '", plan.dataset, "' has node types {",
        absl::StrJoin(have, ", "), "} but dataset '", dataset.name, "' has {",
        absl::StrJoin(want, ", "), "}"));
  }
  for (size_t v = 0; v < plan.owners.size(); ++v) {
    if (plan.owners[v] < 0 || plan.owners[v] >= plan.num_parts) {
      return absl::InvalidArgumentError(absl::StrCat("partition plan: vertex ", v, " has owner ",
                                                     plan.owners[v], ", outside [0, ",
                                                     plan.num_parts, ")"));
    }
  }
  return absl::OkStatus();
}

flexgraph::PartitionPlan ToProto(const PartitionPlan& plan) {
  flexgraph::PartitionPlan p;
  p.set_num_parts(plan.num_parts);
  p.set_method(MethodName(plan.method));
  p.set_dataset(plan.dataset);
  p.set_model(plan.model);
  p.set_seed(plan.seed);
  for (const std::string& t : plan.node_types) p.add_node_types(t);
  for (int64_t s : plan.type_sizes) p.add_type_sizes(s);
  p.mutable_owner()->Add(plan.owners.begin(), plan.owners.end());
  for (const PartStats& ps : plan.stats.parts) {
    flexgraph::PartSummary* s = p.add_parts();
    s->set_owned_vertices(ps.owned_vertices);
    s->set_edges(ps.edges);
    s->mutable_ghosts_per_peer()->Add(ps.ghosts.begin(), ps.ghosts.end());
    s->mutable_row_fetch_vectors()->Add(ps.row_fetch_vectors.begin(), ps.row_fetch_vectors.end());
    s->mutable_partial_vectors()->Add(ps.partial_vectors.begin(), ps.partial_vectors.end());
    s->set_compute_seconds(ps.compute_seconds);
    s->set_comm_seconds(ps.comm_seconds);
  }
  p.set_imbalance(plan.stats.imbalance);
  p.set_edge_cut(plan.stats.edge_cut);
  p.set_ghosts_total(plan.stats.ghosts_total);
  return p;
}

std::string SummaryJson(const PartitionPlan& plan) {
  const PartitionStats& s = plan.stats;
  auto quote = [](const std::string& x) {
    std::string out = "\"";
    for (char c : x) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  };
  std::vector<std::string> parts;
  for (const PartStats& ps : s.parts) {
    parts.push_back(absl::StrFormat(
        "{\"owned_vertices\": %d, \"edges\": %d, \"ghosts_per_peer\": [%s], "
        "\"compute_seconds\": %.9g, \"comm_seconds\": %.9g}",
        ps.owned_vertices, ps.edges, absl::StrJoin(ps.ghosts, ", "), ps.compute_seconds,
        ps.comm_seconds));
  }
  return absl::StrFormat(
      "{\"dataset\": %s, \"model\": %s, \"method\": %s, \"parts\": %d, \"num_vertices\": %d, "
      "\"edge_cut\": %d, \"ghosts_total\": %d, \"imbalance\": %.6f, \"max_cost_seconds\": %.9g, "
      "\"mean_cost_seconds\": %.9g, \"seconds\": %.3f, \"per_part\": [%s]}\n",
      quote(plan.dataset), quote(plan.model), quote(MethodName(plan.method)), plan.num_parts,
      plan.num_vertices(), s.edge_cut, s.ghosts_total, s.imbalance, s.max_cost, s.mean_cost,
      plan.seconds, absl::StrJoin(parts, ", "));
}

}  // namespace fg::partition
