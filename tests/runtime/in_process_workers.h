// Distributed training inside one test process: P workers as threads over the in-process
// communicator, vertices owned in blocks of 7 dealt round-robin (so every worker has boundary
// vertices).
#pragma once

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/train/trainer.h"

namespace fg::testing {

inline std::vector<int32_t> StridedOwners(int64_t n, int parts) {
  std::vector<int32_t> owners(n);
  for (int64_t v = 0; v < n; ++v) owners[v] = static_cast<int32_t>((v / 7) % parts);
  return owners;
}

// Every worker's result (default-constructed where it failed, which the test reports); vertex v
// is owned by worker owners[v] (or, with an active `grid`, the workers train over that grid;
// `auto_grid`: DistributedSetup::auto_grid).
inline std::vector<runtime::TrainResult> RunWorkers(const flexgraph::RunConfig& o, int parts,
                                                    runtime::ExchangeMode mode,
                                                    const std::vector<int32_t>& owners,
                                                    const grid::GridSpec& grid = {}, bool auto_grid = false) {
  auto group = runtime::MakeInProcessGroup(parts);
  std::vector<runtime::TrainResult> results(parts);
  std::vector<std::thread> threads;
  for (int r = 0; r < parts; ++r) {
    threads.emplace_back([&, r] {
      runtime::DistributedSetup setup{group[r].get(), owners, mode, true, grid, auto_grid};
      auto t = runtime::Trainer::Create(o, setup);
      ASSERT_TRUE(t.ok()) << t.status();
      auto res = (*t)->Run();
      ASSERT_TRUE(res.ok()) << res.status();
      results[r] = *res;
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

// The same with StridedOwners.
inline std::vector<runtime::TrainResult> RunWorkers(const flexgraph::RunConfig& o, int parts,
                                                    runtime::ExchangeMode mode, int64_t num_vertices) {
  return RunWorkers(o, parts, mode, StridedOwners(num_vertices, parts));
}

// Every worker's status (creation's error, else the run's), for runs expected to fail on each.
inline std::vector<absl::Status> RunWorkerStatuses(const flexgraph::RunConfig& o, int parts, int64_t num_vertices) {
  auto group = runtime::MakeInProcessGroup(parts);
  std::vector<absl::Status> out(parts);
  std::vector<std::thread> threads;
  for (int r = 0; r < parts; ++r) {
    threads.emplace_back([&, r] {
      runtime::DistributedSetup setup{group[r].get(), StridedOwners(num_vertices, parts)};
      auto t = runtime::Trainer::Create(o, setup);
      out[r] = t.ok() ? (*t)->Run().status() : t.status();
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

}  // namespace fg::testing
