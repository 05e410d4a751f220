// Training over a process grid (--exchange 1.5d | 2d | 3d): P in-process workers running the
// registered models (dropout, biases and Adam included) with the grid products as their
// aggregations must give the single process's loss at every epoch (within 1e-4 relative) and its
// test accuracy, at P = 4, 8 and 9.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "absl/strings/str_cat.h"
#include "flexgraph/graph/dataset.h"
#include "partition/partitioner.h"
#include "runtime/grid/grid_spec.h"
#include "runtime/plan/planner.h"
#include "runtime/train/exchange_choice.h"
#include "runtime/train/trainer.h"
#include "tests/runtime/in_process_workers.h"
#include "tests/runtime/write_parts.h"

namespace fg::runtime {
namespace {

const std::string kCora = std::string(FG_SHARED_DATA_DIR) + "/cora";
constexpr int64_t kCoraVertices = 2708;

flexgraph::RunConfig Options(const std::string& model, int epochs, const std::string& dataset = kCora) {
  flexgraph::RunConfig config;
  config.mutable_model()->set_name(model);
  config.mutable_dataset()->set_path(dataset);
  config.mutable_train()->set_epochs(epochs);
  config.mutable_train()->set_threads(1);
  config.mutable_output()->set_quiet(true);
  return config;
}

TrainResult SingleProcess(const flexgraph::RunConfig& o) {
  auto single = Trainer::Create(o);
  EXPECT_TRUE(single.ok()) << single.status();
  if (!single.ok()) return {};
  auto r = (*single)->Run();
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : TrainResult();
}

void ExpectGridMatches(const std::string& model, const std::string& exchange, int workers) {
  const flexgraph::RunConfig o = Options(model, 4);
  const TrainResult base = SingleProcess(o);
  ASSERT_EQ(base.losses.size(), 4u);
  auto spec = grid::ParseGridSpec(exchange);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto results = fg::testing::RunWorkers(o, workers, ExchangeMode::kAuto,
                                               fg::testing::StridedOwners(kCoraVertices, workers), *spec);
  for (int r = 0; r < workers; ++r) {
    ASSERT_EQ(results[r].losses.size(), base.losses.size()) << model << " " << exchange << " worker " << r;
    for (size_t e = 0; e < base.losses.size(); ++e) {
      EXPECT_NEAR(results[r].losses[e], base.losses[e], 1e-4 * std::fabs(base.losses[e]))
          << model << " " << exchange << " P=" << workers << " worker " << r << " epoch " << e + 1;
    }
    EXPECT_DOUBLE_EQ(results[r].test_accuracy, base.test_accuracy) << model << " " << exchange << " worker " << r;
    EXPECT_EQ(results[r].traffic.world_size, workers);
    EXPECT_EQ(results[r].traffic.exchange,
              grid::DescribeGrid(*grid::ResolveGridSpec(*spec, workers)));
  }
  EXPECT_GT(results[0].traffic.bytes_features, 0) << model << " " << exchange;
  EXPECT_GT(results[0].traffic.bytes_gradients, 0) << model << " " << exchange;
}

TEST(GridTraining, GcnMatchesSingleProcessOn2D) {
  ExpectGridMatches("gcn", "2d", 4);  // 2 x 2
  ExpectGridMatches("gcn", "2d", 9);  // 3 x 3
  ExpectGridMatches("gcn", "2d:2x2,oblivious", 4);
}

TEST(GridTraining, GcnMatchesSingleProcessOn15DAnd3D) {
  ExpectGridMatches("gcn", "1.5d:c=2", 4);
  ExpectGridMatches("gcn", "1.5d:c=2", 8);
  ExpectGridMatches("gcn", "3d:2x2x2", 8);
}

TEST(GridTraining, SageAndGinMatchSingleProcess) {
  ExpectGridMatches("sage", "2d", 4);
  ExpectGridMatches("sage", "1.5d:c=2", 8);
  ExpectGridMatches("gin", "3d:2x2x2", 8);
  ExpectGridMatches("gin", "2d", 9);
}

// Over a partitioned dataset the grid's row blocks are its parts: each block's workers read only
// their part, gather the rows of A^T they lack from the owners, and train to one process's losses
// on the source dataset (2D and 3D over 2 METIS parts, 1.5D c = 2 over 4 hash parts). A part count
// other than the grid's row blocks is refused, naming both.
TEST(GridTraining, PartitionedDatasetMatchesSingleProcess) {
  const TrainResult base = SingleProcess(Options("gcn", 4));
  ASSERT_EQ(base.losses.size(), 4u);
  struct Case {
    const char* exchange;
    int workers, parts;
    partition::Method method;
  };
  for (const Case& c : {Case{"2d:2x2", 4, 2, partition::Method::kMetis}, Case{"3d:2x2x2", 8, 2, partition::Method::kMetis},
                        Case{"1.5d:c=2", 8, 4, partition::Method::kHash}}) {
    const std::string dir = WriteParts(Options("gcn", 4), c.parts, c.method);
    const auto spec = grid::ParseGridSpec(c.exchange);
    ASSERT_TRUE(spec.ok());
    const auto results = fg::testing::RunWorkers(Options("gcn", 4, dir), c.workers, ExchangeMode::kAuto, {}, *spec);
    for (int r = 0; r < c.workers; ++r) {
      ASSERT_EQ(results[r].losses.size(), base.losses.size()) << c.exchange << " worker " << r;
      for (size_t e = 0; e < base.losses.size(); ++e) {
        EXPECT_NEAR(results[r].losses[e], base.losses[e], 1e-4 * std::fabs(base.losses[e]))
            << c.exchange << " over " << c.parts << " parts, worker " << r << " epoch " << e + 1;
      }
      EXPECT_GT(results[r].traffic.bytes_setup, 0) << c.exchange << " worker " << r;
    }
    EXPECT_NEAR(results[0].test_accuracy, base.test_accuracy, 1e-9) << c.exchange;
    std::filesystem::remove_all(dir);
  }
  const std::string four = WriteParts(Options("gcn", 1), 4, partition::Method::kHash);
  auto group = MakeInProcessGroup(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      DistributedSetup setup{group[r].get(), {}, ExchangeMode::kAuto, true, *grid::ParseGridSpec("2d:2x2")};
      auto t = Trainer::Create(Options("gcn", 1, four), setup);
      errors[r] = t.ok() ? "" : std::string(t.status().message());
    });
  }
  for (auto& t : threads) t.join();
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("a partitioned dataset of 4 parts needs one per row block of --exchange 2d 2x2 aware over 4 "
                     "workers (2)"), std::string::npos) << e;
  }
  std::filesystem::remove_all(four);
}

// PinSage's random-walk neighbourhoods (importance-weighted sums) are drawn again every period:
// each draw gets its own product.
TEST(GridTraining, PinSageMatchesSingleProcess) { ExpectGridMatches("pinsage", "2d", 4); }

// Bytes each worker sent per epoch, mean over the workers, every kind.
double BytesPerWorker(const std::vector<TrainResult>& results) {
  double sum = 0;
  for (const TrainResult& r : results) {
    const Traffic& t = r.traffic;
    sum += static_cast<double>(t.bytes_features + t.bytes_partials + t.bytes_gradients + t.bytes_allreduce + t.bytes_control);
  }
  return sum / static_cast<double>(results.size());
}

// --exchange auto (auto_grid) runs the scheme the plan predicts to send least; measured, it sends
// no more than the 1D exchange and every grid run on their own, and equals the one it chose (its
// setup's agreement on memory aside).
void ExpectAutoIsTheLeast(const std::string& dataset, int workers, const std::string& expected) {
  const flexgraph::RunConfig o = Options("gcn", 2, dataset);
  auto loaded = graph::LoadDataset(dataset, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  partition::PartitionInput in{.graph = &loaded->Adjacency()};
  auto owners = partition::MakePartitioner(partition::Method::kMetis)->Assign(in, workers);  // as launch does
  ASSERT_TRUE(owners.ok()) << owners.status();
  std::map<std::string, double> bytes;
  bytes["1d auto"] = BytesPerWorker(fg::testing::RunWorkers(o, workers, ExchangeMode::kAuto, *owners));
  std::vector<std::string> schemes = {"1.5d:c=2"};  // and every 2D and 3D shape with sides of 2 or more
  for (int pr = 2; pr <= workers / 2; ++pr) {
    if (workers % pr != 0) continue;
    schemes.push_back(absl::StrCat("2d:", pr, "x", workers / pr));
    for (int pc = 2; pc <= workers / pr / 2; ++pc) {
      if ((workers / pr) % pc == 0) schemes.push_back(absl::StrCat("3d:", pr, "x", pc, "x", workers / pr / pc));
    }
  }
  for (const std::string& exchange : schemes) {
    const auto spec = grid::ResolveGridSpec(*grid::ParseGridSpec(exchange), workers);
    ASSERT_TRUE(spec.ok()) << spec.status();
    bytes[grid::DescribeGrid(*spec)] =
        BytesPerWorker(fg::testing::RunWorkers(o, workers, ExchangeMode::kAuto, *owners, *spec));
  }
  const auto results = fg::testing::RunWorkers(o, workers, ExchangeMode::kAuto, *owners, {}, /*auto_grid=*/true);
  std::string chosen = results[0].traffic.exchange;
  if (const size_t at = chosen.find(" (auto)"); at != std::string::npos) chosen.erase(at);
  EXPECT_EQ(chosen, expected) << dataset << " P=" << workers;
  ASSERT_TRUE(bytes.count(chosen)) << chosen;
  // Auto adds, once, the workers' agreement on memory: 2P doubles (host, bytes) to every peer.
  const double setup = 16.0 * workers * (workers - 1);
  const double automatic = BytesPerWorker(results) - setup;
  EXPECT_EQ(automatic, bytes[chosen]) << dataset << " P=" << workers << ": auto chose " << chosen;
  for (const auto& [scheme, b] : bytes) {
    std::printf("%s P=%d %s: %.0f bytes per worker and epoch\n", dataset.c_str(), workers, scheme.c_str(), b);
    EXPECT_LE(automatic, b) << dataset << " P=" << workers << ": auto (" << chosen << ") against " << scheme;
  }
}

// --exchange auto does not choose a grid the plan predicts not to fit the workers' memory: the
// SBM's 1.5D (the least bytes at P = 8) without a limit, the 1D exchange under a limit below every
// grid's predicted memory, and the reason says why.
TEST(GridTraining, AutoSkipsGridsThatDoNotFit) {
  auto loaded = graph::LoadDataset("sbm:nodes=4096,classes=8,features=64,avg_degree=32,seed=3", {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  partition::PartitionInput part{.graph = &loaded->Adjacency()};
  auto owners = partition::MakePartitioner(partition::Method::kMetis)->Assign(part, 8);
  ASSERT_TRUE(owners.ok()) << owners.status();
  ExchangeChoiceInput in{.adjacency = &loaded->Adjacency(), .owners = *owners, .workers = 8, .model = "gcn",
                         .features = 64, .hidden = 16, .classes = 8, .layers = 2};
  const ExchangeChoice free = ChooseExchange(in);
  EXPECT_EQ(grid::DescribeGrid(free.grid), "1.5d c=2 aware") << free.reason;
  EXPECT_EQ(free.reason.find("skipped"), std::string::npos) << free.reason;
  in.memory_bytes = 1e5;
  const ExchangeChoice tight = ChooseExchange(in);
  EXPECT_FALSE(tight.grid.active()) << tight.reason;
  EXPECT_NE(tight.reason.find("grid(s) sending less skipped"), std::string::npos) << tight.reason;
  EXPECT_NE(tight.reason.find("0.1 MB available per worker"), std::string::npos) << tight.reason;
  // The set-up's HDG and matrix rows count: memory for 1.5D's blocks alone is not enough. They
  // shrink with the blocks (each worker gathers only its block's rows of A and A^T).
  plan::PlanInput p;
  p.graph = plan::CountsOf(loaded->Adjacency());
  p.model = {.kind = plan::ModelKind::kGcn, .features = 64, .hidden = 16, .classes = 8, .layers = 2};
  p.workers = 8;
  p.device = *plan::DeviceByName("cpu");
  const double blocks = plan::Predict(p, {.scheme = plan::Scheme::kOnePointFiveD, .aware = true, .c = 2}, nullptr).memory_bytes;
  const double setup = GridSetupBytes(loaded->Adjacency(), true, 4, 1);
  EXPECT_GT(setup, 88.0 * loaded->Adjacency().nnz() / 4);
  EXPECT_LT(GridSetupBytes(loaded->Adjacency(), true, 8, 1), setup);
  EXPECT_LT(GridSetupBytes(loaded->Adjacency(), true, 4, 2), setup);
  in.memory_bytes = blocks + 0.5 * setup;
  EXPECT_NE(grid::DescribeGrid(ChooseExchange(in).grid), "1.5d c=2 aware") << ChooseExchange(in).reason;
  in.memory_bytes = blocks + setup + 1;
  EXPECT_EQ(grid::DescribeGrid(ChooseExchange(in).grid), "1.5d c=2 aware") << ChooseExchange(in).reason;
}

// The memory auto plans with: a host's available bytes shared by its workers, the least share.
TEST(GridTraining, MemoryPerWorkerSharesEachHostAmongItsWorkers) {
  EXPECT_EQ(MemoryPerWorker({5}, {8e9}), 8e9);
  // Host 1 holds workers 0, 1 and 3 (they read 9, 7 and 8 GB); host 2 worker 2 (4 GB).
  EXPECT_EQ(MemoryPerWorker({1, 1, 2, 1}, {9e9, 7e9, 4e9, 8e9}), 7e9 / 3);
  EXPECT_EQ(MemoryPerWorker({1, 1, 2, 1}, {9e9, 7e9, 2e9, 8e9}), 2e9);
}

TEST(GridTraining, AutoSendsNoMoreThanTheBestScheme) {
  // Under METIS parts: Cora at P = 4, the 1D exchange; an SBM (communities) at P = 8, 1.5D.
  ExpectAutoIsTheLeast(kCora, 4, "1d auto");
  ExpectAutoIsTheLeast("sbm:nodes=4096,classes=8,features=64,avg_degree=32,seed=3", 8, "1.5d c=2 aware");
}

// What a grid cannot run is refused before training, naming the flag and the reason.
TEST(GridTraining, RefusesWhatItCannotRun) {
  auto expect_refused = [](flexgraph::RunConfig o, const std::string& exchange, const std::string& why) {
    auto spec = grid::ParseGridSpec(exchange);
    ASSERT_TRUE(spec.ok());
    auto group = MakeInProcessGroup(2);
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        DistributedSetup setup{group[r].get(), fg::testing::StridedOwners(kCoraVertices, 2), ExchangeMode::kAuto, true,
                               *spec};
        auto t = Trainer::Create(o, setup);
        errors[r] = t.ok() ? "" : std::string(t.status().message());
      });
    }
    for (auto& t : threads) t.join();
    for (const std::string& e : errors) {
      EXPECT_NE(e.find("--exchange"), std::string::npos) << exchange << " " << o.model().name() << ": " << e;
      EXPECT_NE(e.find(why), std::string::npos) << e;
    }
  };
  flexgraph::RunConfig batches = Options("gcn", 1);
  batches.mutable_train()->set_batch_size(64);
  expect_refused(batches, "2d:2x1", "batch_size");
  expect_refused(Options("rgcn", 1), "2d:2x1", "not a sparse-dense product");
  expect_refused(Options("gcn", 1), "1.5d:c=2", "c^2 = 4 does not divide the 2 workers");
}

TEST(GridSpec, ParsesResolvesAndNamesBadInput) {
  auto two = grid::ResolveGridSpec(*grid::ParseGridSpec("2d"), 6);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->pr * two->pc, 6);
  EXPECT_EQ(grid::DescribeGrid(*two), "2d 2x3 aware");  // as runtime/plan shapes it
  auto three = grid::ResolveGridSpec(*grid::ParseGridSpec("3d"), 8);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(grid::DescribeGrid(*three), "3d 2x2x2 aware");
  EXPECT_EQ(grid::DescribeGrid(*grid::ResolveGridSpec(*grid::ParseGridSpec("3d"), 16)), "3d 2x2x4 aware");
  EXPECT_EQ(grid::DescribeGrid(*grid::ParseGridSpec("1.5d:c=2,oblivious")), "1.5d c=2 oblivious");
  EXPECT_FALSE(grid::ResolveGridSpec(*grid::ParseGridSpec("1.5d:c=3"), 4).ok());
  EXPECT_FALSE(grid::ResolveGridSpec(*grid::ParseGridSpec("2d:3x2"), 4).ok());
  for (const char* bad : {"2d:2x", "3d:2x2", "1.5d", "1.5d:c=0", "2d:fast", "4d", "2d:99999x99999", "1.5d:c=5000"}) {
    ExchangeMode mode;
    grid::GridSpec spec;
    const absl::Status s = ParseExchange(bad, &mode, &spec);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(std::string(s.message()).find(std::string("--exchange ") + bad), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace fg::runtime
