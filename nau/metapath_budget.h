// Sizing metapath selections before building them: how many instances each metapath gives
// (capped per root), and the automatic choice that keeps what fits a memory budget. INHA models
// (MAGNN, HAN) call it from Build, before any HDG exists.
//
//   auto est = EstimateMetapaths(candidates, *spec.dataset, /*max_instances=*/128);
//   MetapathBudget b = ChooseMetapaths(candidates, est, bytes_of, 2.0 * (1 << 30), target);
//   std::vector<Metapath> kept = b.Kept();
//
// Estimates are exact where the whole graph is held (instance counts per root from suffix
// counts); on one part of a partitioned dataset they are products of average degrees over the
// whole graph's relation sizes (PartInfo::relation_edges), the same on every worker.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "flexgraph/graph/dataset.h"
#include "nau/metapath.h"

namespace fg::nau {

struct MetapathEstimate {
  int64_t roots = 0;       // vertices of the start type
  double instances = 0;    // sum over roots of min(instances at the root, max_instances)
  double per_root_max = 0; // the most instances at one root, uncapped (exact estimates only)
  bool exact = false;
};

// One estimate per metapath; max_instances 0 means uncapped.
std::vector<MetapathEstimate> EstimateMetapaths(const std::vector<Metapath>& metapaths,
                                                const graph::Dataset& dataset,
                                                int64_t max_instances);

struct BudgetedMetapath {
  Metapath metapath;
  MetapathEstimate estimate;
  double bytes = 0;  // what its instances take over the layers that expand it
  bool kept = true;
};

struct MetapathBudget {
  std::vector<BudgetedMetapath> candidates;  // in candidate order
  double budget_bytes = 0;
  double kept_bytes = 0;
  std::vector<Metapath> Kept() const;
  // One line per candidate (instances, memory, kept or dropped) and the total against the budget.
  std::string Describe() const;
};

// Keeps every candidate when their bytes fit `budget_bytes`; otherwise drops until they fit: the
// metapaths of other types than `keep_type` (the target) first, largest first, then the target's,
// always keeping the target's smallest.
// `bytes_of` sizes one metapath from its estimate.
MetapathBudget ChooseMetapaths(
    const std::vector<Metapath>& candidates, const std::vector<MetapathEstimate>& estimates,
    const std::function<double(const Metapath&, const MetapathEstimate&)>& bytes_of,
    double budget_bytes, int keep_type);

}  // namespace fg::nau
