// WriteParts: a dataset partitioned for a test, in a fresh directory under the test's temp dir.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "partition/partitioned_dataset.h"
#include "partition/partitioner.h"
#include "runtime/train/config.h"

namespace fg::runtime {

// Writes `source` partitioned by `method` into a fresh directory and returns it.
inline std::string WriteParts(const flexgraph::RunConfig& o, int parts, partition::Method method) {
  const std::string dir = ::testing::TempDir() + "/fg_train_parts_" +
                          partition::MethodName(method) + std::to_string(parts) + "_" +
                          std::to_string(getpid());
  std::filesystem::remove_all(dir);
  auto resolved = ResolveConfig(o);
  EXPECT_TRUE(resolved.ok()) << resolved.status();
  auto ds = graph::LoadDataset(o.dataset().path(), {});
  EXPECT_TRUE(ds.ok()) << ds.status();
  EXPECT_TRUE(ds->graph.ToInt32Indices().ok());
  auto cost = partition::CostModel::Create(*ds, WorkloadOptionsFrom(*resolved), {});
  EXPECT_TRUE(cost.ok()) << cost.status();
  auto plan = partition::Partition(*ds, *cost, {.num_parts = parts, .method = method, .rebalance = {}});
  EXPECT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(partition::WritePartitionedDataset(*ds, *plan, o.dataset().path(), dir).ok());
  return dir;
}

}  // namespace fg::runtime
