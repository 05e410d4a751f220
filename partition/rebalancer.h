// Rebalancer: application-driven workload balancing (FlexGraph, EuroSys '21). Starting from a
// partition (usually METIS, which balances vertex weights but not the communication each part
// ends up with), it moves boundary vertices off the part with the highest estimated cost to a
// cheaper neighbouring part — or to the cheapest part, which may have no edges to it (a part of
// isolated vertices) — while the estimated maximum cost falls.
//
// Each round moves a batch of vertices guided by a local model updated move by move — exact
// compute, and the row-fetch exchange tracked per (layer, part, vertex) reference counts, so the
// ghosts a move creates or removes on every part are counted — then recomputes the exact estimate
// (ComputeStats, which may also choose partial aggregation); a round that does not lower the exact
// maximum is undone and the batch size shrinks. Memory: layers x parts x vertices int32 counts.
// Deterministic (fixed scan order, ties broken by vertex id, no clocks) and bounded: at most
// max_rounds exact evaluations and max_moves moves.
// Thread-safety: a pure function of its arguments.
//
//   RebalanceResult r = Rebalance(dataset, cost, metis_owners, 8, {});
//   // r.stats.imbalance <= the METIS partition's imbalance
#pragma once

#include <cstdint>
#include <vector>

#include "partition/cost_model.h"

namespace fg::partition {

struct RebalanceOptions {
  int max_rounds = 40;            // exact evaluations
  int64_t max_moves = 0;          // total vertex moves (0: the number of vertices)
  // Stop once the estimated imbalance is at most this (saves rounds that gain under 0.5%).
  double target_imbalance = 1.005;
};

struct RebalanceResult {
  std::vector<int32_t> owners;
  PartitionStats stats;            // of `owners`
  double initial_max_cost = 0;     // estimated, of the input partition
  double initial_imbalance = 0;
  int rounds = 0;                  // exact evaluations made
  int accepted_rounds = 0;
  int64_t moves = 0;               // moves kept
};

RebalanceResult Rebalance(const graph::Dataset& dataset, const CostModel& cost,
                          std::vector<int32_t> owners, int num_parts,
                          const RebalanceOptions& options);

}  // namespace fg::partition
