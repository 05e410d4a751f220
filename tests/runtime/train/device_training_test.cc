// Whole-graph training on a CUDA device against the same run on the CPU: every model's losses
// agree within 1e-4 relative over 5 epochs (dropout masks and walks are counter-based, so both
// devices draw the same ones), the GPU run reports its peak device memory, and its training steps
// wait for the device only to read the loss back; two workers sharing one GPU (in-process
// communicator), mini-batches and batches of whole graphs equal the CPU runs too. Skips where no GPU
// is usable. Data: $FLEXGRAPH_DATA when set (a relocated bundle), else ../shared/data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "flexgraph/tensor/device_alloc.h"
#include "runtime/train/trainer.h"
#include "tests/graph/test_util.h"
#include "tests/runtime/in_process_workers.h"
#include "tests/udf_examples/graph_classification_set.h"

namespace fg::runtime {
namespace {

std::string DataDir(const std::string& name) {
  const char* root = std::getenv("FLEXGRAPH_DATA");
  return std::string(root != nullptr ? root : FG_SHARED_DATA_DIR) + "/" + name;
}

// Trains `config` to the end; *num_vertices (when given) gets the dataset's vertex count.
TrainResult TrainCounting(const flexgraph::RunConfig& config, int64_t* num_vertices = nullptr) {
  auto trainer = Trainer::Create(config);
  EXPECT_TRUE(trainer.ok()) << trainer.status();
  if (!trainer.ok()) return {};
  if (num_vertices != nullptr) {
    *num_vertices = 0;
    for (int64_t n : (*trainer)->dataset().graph.num_nodes) *num_vertices += n;
  }
  auto r = (*trainer)->Run();
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : TrainResult{};
}

struct Case {
  const char* model;
  const char* dataset;
};

class DeviceTraining : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason();
  }
  static flexgraph::RunConfig Config(const Case& c, const std::string& device) {
    flexgraph::RunConfig config;
    config.mutable_model()->set_name(c.model);
    config.mutable_dataset()->set_path(DataDir(c.dataset));
    config.mutable_output()->set_quiet(true);
    config.mutable_output()->set_epoch0_loss(true);
    config.mutable_train()->set_epochs(5);
    config.mutable_train()->set_device(device);
    auto resolved = ResolveConfig(config);
    EXPECT_TRUE(resolved.ok()) << resolved.status();
    return resolved.ok() ? *resolved : config;
  }
  static TrainResult Train(const Case& c, const std::string& device, int64_t* num_vertices = nullptr) {
    return TrainCounting(Config(c, device), num_vertices);
  }
};

TEST_P(DeviceTraining, LossesEqualTheCpuRun) {
  const TrainResult cpu = Train(GetParam(), "cpu");
  const TrainResult gpu = Train(GetParam(), "cuda");
  ASSERT_EQ(cpu.losses.size(), 5u);
  ASSERT_EQ(gpu.losses.size(), 5u);
  EXPECT_NEAR(gpu.epoch0_loss, cpu.epoch0_loss, 1e-4 * std::fabs(cpu.epoch0_loss));
  for (size_t e = 0; e < cpu.losses.size(); ++e) {
    EXPECT_NEAR(gpu.losses[e], cpu.losses[e], 1e-4 * std::fabs(cpu.losses[e])) << "epoch " << e + 1;
  }
  EXPECT_NEAR(gpu.test_accuracy, cpu.test_accuracy, 0.01);
  EXPECT_GT(gpu.peak_device_bytes, 0);
  // After the first epoch (which places the graph's index arrays), a training step waits for the
  // GPU only to read the loss and at its end, not op by op.
  ASSERT_EQ(gpu.epoch_host_syncs.size(), 5u);
  for (size_t e = 1; e < gpu.epoch_host_syncs.size(); ++e) {
    EXPECT_LE(gpu.epoch_host_syncs[e], 3) << "epoch " << e + 1;
  }
  EXPECT_EQ(cpu.epoch_host_syncs, std::vector<double>(5, 0.0));
}

// Two workers sharing the one GPU, each exchanging through pinned host buffers, train as the
// single-process CPU run does: row fetch and partial aggregation where the model allows it.
TEST_P(DeviceTraining, TwoWorkersOnOneGpuEqualTheCpuRun) {
  int64_t vertices = 0;
  const TrainResult cpu = Train(GetParam(), "cpu", &vertices);
  ASSERT_EQ(cpu.losses.size(), 5u);
  for (ExchangeMode mode : {ExchangeMode::kAuto, ExchangeMode::kRowFetch}) {
    const std::vector<TrainResult> gpu = testing::RunWorkers(Config(GetParam(), "cuda"), 2, mode, vertices);
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(gpu[r].losses.size(), 5u) << "worker " << r;
      EXPECT_EQ(gpu[r].traffic.world_size, 2);
      for (size_t e = 0; e < cpu.losses.size(); ++e) {
        EXPECT_NEAR(gpu[r].losses[e], cpu.losses[e], 1e-4 * std::fabs(cpu.losses[e]))
            << "worker " << r << " epoch " << e + 1 << " mode " << static_cast<int>(mode);
      }
      EXPECT_NEAR(gpu[r].test_accuracy, cpu.test_accuracy, 0.01) << "worker " << r;
      EXPECT_GT(gpu[r].peak_device_bytes, 0);
      EXPECT_GT(gpu[r].traffic.bytes_features + gpu[r].traffic.bytes_partials, 0) << "worker " << r;
    }
  }
}

// Mini-batches train on the GPU as on the CPU, sampled on the host or on the device: the same
// batches, masks and losses (node classification with GraphSAGE and GCN, node-wise, LADIES and
// ShaDow (sampled on the host only); PinSage link prediction); and over two workers sharing the GPU.
TEST(DeviceMiniBatches, LossesEqualTheCpuRun) {
  if (!CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason();
  struct Run {
    const char* model;
    const char* dataset;
    int batch_size;
    const char* sampler = "neighbor";
  };
  for (const Run& c : {Run{"sage", "cora", 64}, Run{"gcn", "cora", 64}, Run{"pinsage", "lastfm", 16384},
                       Run{"sage", "cora", 64, "ladies"}, Run{"gcn", "cora", 64, "ladies"},
                       Run{"gcn", "cora", 64, "shadow"}}) {
    const bool shadow = std::string(c.sampler) == "shadow";
    auto config = [&](const std::string& device, const std::string& sample_on) {
      flexgraph::RunConfig config;
      config.mutable_model()->set_name(c.model);
      config.mutable_dataset()->set_path(DataDir(c.dataset));
      config.mutable_output()->set_quiet(true);
      config.mutable_train()->set_epochs(3);
      config.mutable_train()->set_batch_size(c.batch_size);
      if (std::string(c.sampler) == "ladies") {
        config.mutable_train()->set_sampler("ladies");
        config.mutable_train()->set_layer_size(256);
      } else {
        config.mutable_train()->set_fanouts("10,5");
        if (shadow) config.mutable_train()->set_sampler("shadow");
      }
      config.mutable_train()->set_device(device);
      config.mutable_train()->set_sample_on(sample_on);
      return config;
    };
    int64_t vertices = 0;
    auto train = [&](const std::string& device, const std::string& sample_on) {
      auto resolved = ResolveConfig(config(device, sample_on));
      EXPECT_TRUE(resolved.ok()) << resolved.status();
      return resolved.ok() ? TrainCounting(*resolved, &vertices) : TrainResult{};
    };
    const TrainResult cpu = train("cpu", "");
    ASSERT_EQ(cpu.losses.size(), 3u) << c.model;
    auto expect_cpu_losses = [&](const TrainResult& gpu, const std::string& what) {
      ASSERT_EQ(gpu.losses.size(), 3u) << c.model << " " << what;
      for (size_t e = 0; e < cpu.losses.size(); ++e) {
        EXPECT_NEAR(gpu.losses[e], cpu.losses[e], 1e-4 * std::fabs(cpu.losses[e]))
            << c.model << " " << c.sampler << " " << what << ", epoch " << e + 1;
      }
      EXPECT_GT(gpu.peak_device_bytes, 0) << c.model << " " << what;
    };
    for (const char* sample_on : {"host", "device"}) {
      if (shadow && std::string(sample_on) == "device") continue;  // ShaDow samples on the host
      expect_cpu_losses(train("cuda", sample_on), std::string("sampled on the ") + sample_on);
    }
    // Two workers on the one GPU, each training its share of every batch: node-wise batches sampled
    // on the device by each worker, LADIES batches drawn whole by their leaders on the host.
    if (std::string(c.dataset) != "cora") continue;
    auto resolved = ResolveConfig(config("cuda", ""));
    ASSERT_TRUE(resolved.ok()) << resolved.status();
    const std::vector<TrainResult> workers = testing::RunWorkers(*resolved, 2, ExchangeMode::kAuto, vertices);
    for (int r = 0; r < 2; ++r) expect_cpu_losses(workers[r], "worker " + std::to_string(r) + " of 2");
  }
}

// Batches of whole graphs (generated tracking events, edge classification) train on the GPU as
// on the CPU: the Interaction Network with every activation kept and with recomputation, with
// one state per edge (edges=once) and several aggregations (sum, max, std), and the edge filter;
// two data-parallel workers sharing the GPU too. Vertex sharding is refused there.
TEST(DeviceGraphSets, LossesAndMetricsEqualTheCpuRun) {
  if (!CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason();
  struct Run {
    const char* model;
    std::map<std::string, std::string> options;
  };
  auto config = [](const Run& c, const std::string& device) {
    flexgraph::RunConfig config;
    config.mutable_dataset()->set_path("trackml:events=10,particles=40,noise=0.1,seed=5");
    config.mutable_model()->set_name(c.model);
    config.mutable_model()->set_hidden(16);
    config.mutable_model()->set_layers(3);
    for (const auto& [k, v] : c.options) (*config.mutable_model()->mutable_options())[k] = v;
    config.mutable_train()->set_epochs(3);
    config.mutable_train()->set_batch_size(2);
    config.mutable_train()->set_lr(0.005f);
    config.mutable_train()->set_device(device);
    config.mutable_output()->set_quiet(true);
    config.mutable_output()->set_epoch0_loss(true);
    auto resolved = ResolveConfig(config);
    EXPECT_TRUE(resolved.ok()) << resolved.status();
    return resolved.ok() ? *resolved : config;
  };
  int64_t vertices = 0;
  auto train = [&vertices](const flexgraph::RunConfig& config) { return TrainCounting(config, &vertices); };
  auto expect_cpu = [](const TrainResult& gpu, const TrainResult& cpu, const std::string& what) {
    ASSERT_EQ(gpu.losses.size(), 3u) << what;
    ASSERT_EQ(cpu.losses.size(), 3u) << what;
    EXPECT_NEAR(gpu.epoch0_loss, cpu.epoch0_loss, 1e-4 * std::fabs(cpu.epoch0_loss)) << what;
    for (size_t e = 0; e < cpu.losses.size(); ++e) {
      EXPECT_NEAR(gpu.losses[e], cpu.losses[e], 5e-4 * std::fabs(cpu.losses[e])) << what << ", epoch " << e + 1;
    }
    ASSERT_TRUE(cpu.extra.count("test_auc")) << what;
    EXPECT_NEAR(gpu.extra.at("test_auc"), cpu.extra.at("test_auc"), 0.01) << what;
    EXPECT_GT(gpu.peak_device_bytes, 0) << what;
  };
  const std::vector<Run> runs = {{"interaction", {{"recompute", "0"}}},
                                 {"interaction", {{"recompute", "1"}}},
                                 {"interaction", {{"edges", "once"}, {"aggregation", "sum,max,std"}}},
                                 {"filter", {}}};
  for (const Run& c : runs) {
    std::string what = c.model;
    for (const auto& [k, v] : c.options) what += " " + k + "=" + v;
    expect_cpu(train(config(c, "cuda")), train(config(c, "cpu")), what);
  }
  // Two data-parallel workers on the one GPU: the single process's losses.
  const Run& first = runs[0];
  const TrainResult cpu = train(config(first, "cpu"));
  const std::vector<TrainResult> workers = testing::RunWorkers(config(first, "cuda"), 2, ExchangeMode::kAuto, vertices);
  for (int r = 0; r < 2; ++r) expect_cpu(workers[r], cpu, "worker " + std::to_string(r) + " of 2");
  // Vertex sharding stays on the CPU, and says so.
  flexgraph::RunConfig sharded = config(first, "cuda");
  sharded.mutable_train()->set_batch_sharding("vertices");
  const std::vector<absl::Status> refused = testing::RunWorkerStatuses(sharded, 2, vertices);
  for (const absl::Status& s : refused) {
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
    EXPECT_NE(s.message().find("batch_sharding: vertices runs on the CPU"), std::string::npos) << s;
  }
}

// GIN with a graph readout (sum, max), dropout on, on batches of whole graphs: the CPU run's
// losses and test accuracy on the GPU.
TEST(DeviceGraphSets, GraphClassificationEqualsTheCpuRun) {
  if (!CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason();
  graph::testing::TempDir dir;
  const std::string path = testing::WriteChordedPaths(dir);
  for (const char* readout : {"sum", "max"}) {
    auto config = [&](const std::string& device) {
      flexgraph::RunConfig c;
      c.mutable_dataset()->set_path(path);
      c.mutable_model()->set_name("gin");
      c.mutable_model()->set_hidden(32);
      c.mutable_model()->set_layers(3);
      c.mutable_model()->set_dropout(0.2f);
      (*c.mutable_model()->mutable_options())["readout"] = readout;
      c.mutable_train()->set_epochs(3);
      c.mutable_train()->set_batch_size(8);
      c.mutable_train()->set_lr(0.01f);
      c.mutable_train()->set_device(device);
      c.mutable_output()->set_quiet(true);
      c.mutable_output()->set_epoch0_loss(true);
      return c;
    };
    const TrainResult cpu = TrainCounting(config("cpu")), gpu = TrainCounting(config("cuda"));
    ASSERT_EQ(cpu.losses.size(), 3u) << readout;
    ASSERT_EQ(gpu.losses.size(), 3u) << readout;
    EXPECT_NEAR(gpu.epoch0_loss, cpu.epoch0_loss, 1e-4 * std::fabs(cpu.epoch0_loss)) << readout;
    for (size_t e = 0; e < cpu.losses.size(); ++e) {
      EXPECT_NEAR(gpu.losses[e], cpu.losses[e], 5e-4 * std::fabs(cpu.losses[e])) << readout << ", epoch " << e + 1;
    }
    EXPECT_NEAR(gpu.test_accuracy, cpu.test_accuracy, 0.05) << readout;
    EXPECT_GT(gpu.peak_device_bytes, 0) << readout;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, DeviceTraining,
                         ::testing::Values(Case{"gcn", "cora"}, Case{"sage", "cora"},
                                           Case{"gin", "cora"}, Case{"pinsage", "cora"},
                                           Case{"pinsage", "lastfm"}, Case{"magnn", "imdb"}),
                         [](const auto& info) {
                           return std::string(info.param.model) + "_" + info.param.dataset;
                         });

}  // namespace
}  // namespace fg::runtime
