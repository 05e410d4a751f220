// Training on a partitioned dataset: P workers (threads over the in-process communicator), each
// loading only its part, must match the single-process run on the source dataset (loss within
// 1e-4 relative at every epoch, same test accuracy) for GCN, GraphSAGE and GIN, with the parts
// written by every partitioning method for P = 2, 3, 4. Models whose selection needs remote
// topology, and a worker count other than the part count, are refused with clear errors.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "partition/partitioned_dataset.h"
#include "runtime/trainer.h"

namespace fg::runtime {
namespace {

using ::testing::HasSubstr;

const std::string kCora = std::string(FG_SHARED_DATA_DIR) + "/cora";

flexgraph::RunConfig Options(const std::string& model, const std::string& dataset) {
  flexgraph::RunConfig config;
  config.mutable_model()->set_name(model);
  config.mutable_dataset()->set_path(dataset);
  config.mutable_train()->set_epochs(6);
  config.mutable_train()->set_threads(1);
  config.mutable_output()->set_quiet(true);
  return config;
}

// Writes `source` partitioned by `method` into a fresh directory and returns it.
std::string WriteParts(const flexgraph::RunConfig& o, int parts, partition::Method method) {
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

std::vector<absl::StatusOr<TrainResult>> RunWorkers(const flexgraph::RunConfig& o, int workers) {
  auto group = MakeInProcessGroup(workers);
  std::vector<absl::StatusOr<TrainResult>> results(workers, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int r = 0; r < workers; ++r) {
    threads.emplace_back([&, r] {
      auto t = Trainer::Create(o, DistributedSetup{group[r].get()});
      if (!t.ok()) {
        group[r]->Abort(t.status());
        results[r] = t.status();
        return;
      }
      results[r] = (*t)->Run();
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

TEST(PartitionedTraining, DnfaModelsMatchTheSingleProcessRunForEveryMethodAndP2To4) {
  const std::vector<partition::Method> methods = {partition::Method::kHash, partition::Method::kMetis,
                                                  partition::Method::kBalanced};
  std::map<std::pair<partition::Method, int>, std::string> dirs;
  for (partition::Method m : methods) {
    for (int parts : {2, 3, 4}) dirs[{m, parts}] = WriteParts(Options("gcn", kCora), parts, m);
  }
  for (const std::string model : {"gcn", "sage", "gin"}) {
    auto single = Trainer::Create(Options(model, kCora));
    ASSERT_TRUE(single.ok()) << single.status();
    auto base = (*single)->Run();
    ASSERT_TRUE(base.ok()) << base.status();
    for (const auto& [key, dir] : dirs) {
      const int parts = key.second;
      const std::string what = absl::StrCat(model, " ", partition::MethodName(key.first), " P=", parts);
      auto results = RunWorkers(Options(model, dir), parts);
      for (int r = 0; r < parts; ++r) {
        ASSERT_TRUE(results[r].ok()) << what << ": " << results[r].status();
        const TrainResult& got = *results[r];
        ASSERT_EQ(got.losses.size(), base->losses.size()) << what;
        for (size_t e = 0; e < base->losses.size(); ++e) {
          EXPECT_NEAR(got.losses[e], base->losses[e], 1e-4 * std::fabs(base->losses[e]))
              << what << " worker " << r << " epoch " << e + 1;
        }
        EXPECT_EQ(got.test_accuracy, base->test_accuracy) << what;
        EXPECT_GT(got.bytes_features + got.bytes_partials, 0) << what;
      }
    }
  }
  for (const auto& [key, dir] : dirs) std::filesystem::remove_all(dir);
}

TEST(PartitionedTraining, RefusesRemoteSelectionAndAWrongWorkerCount) {
  const std::string dir = WriteParts(Options("gcn", kCora), 2, partition::Method::kHash);
  // PinSage's random walks leave a vertex's in-edges.
  auto walks = RunWorkers(Options("pinsage", dir), 2);
  ASSERT_FALSE(walks[0].ok());
  EXPECT_THAT(std::string(walks[0].status().message()),
              HasSubstr("train pinsage on the unpartitioned dataset"));
  // One worker for two parts.
  auto alone = Trainer::Create(Options("gcn", dir));
  ASSERT_FALSE(alone.ok());
  EXPECT_THAT(std::string(alone.status().message()),
              HasSubstr("a partitioned dataset of 2 parts needs as many workers, this run has 1"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fg::runtime
