// Mini-batch training on Cora and LastFM (../shared/data): one batch of every training item with
// all neighbours is full-batch training, step for step; sampled mini-batches reach the datasets'
// accuracy; runs are deterministic whatever the bulk size and thread count (inputs and their
// dropouts drawn ahead or not); what mini-batch training cannot run is refused naming the field.
#include <gtest/gtest.h>

#include <tuple>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"
#include "runtime/train/trainer.h"

namespace fg::runtime {
namespace {

const std::string kData = FG_SHARED_DATA_DIR;

flexgraph::RunConfig Options(const std::string& model, const std::string& dataset = kData + "/cora") {
  flexgraph::RunConfig config;
  config.mutable_model()->set_name(model);
  config.mutable_dataset()->set_path(dataset);
  config.mutable_output()->set_quiet(true);
  return config;
}

absl::StatusOr<TrainResult> Train(const flexgraph::RunConfig& config) {
  FG_ASSIGN_OR_RETURN(flexgraph::RunConfig resolved, ResolveConfig(config));
  FG_ASSIGN_OR_RETURN(auto trainer, Trainer::Create(resolved));
  return trainer->Run();
}

TEST(MiniBatch, OneBatchOfAllNeighboursIsFullBatchTraining) {
  // PinSage on IMDB: typed walks, the input projected per node type (Model::InputRows).
  for (const char* model : {"gcn", "sage", "gin", "pinsage"}) {
    SCOPED_TRACE(model);
    const bool typed = std::string(model) == "pinsage";
    flexgraph::RunConfig full = Options(model, kData + (typed ? "/imdb" : "/cora"));
    if (typed) (*full.mutable_model()->mutable_options())["walk"] = "movie-director-movie";
    full.mutable_train()->set_epochs(6);
    auto expected = Train(full);
    ASSERT_TRUE(expected.ok()) << expected.status();
    flexgraph::RunConfig batch = full;
    batch.mutable_train()->set_batch_size(1 << 20);  // every training vertex
    batch.mutable_train()->set_fanouts("0,0");
    auto r = Train(batch);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->batches_per_epoch, 1);
    ASSERT_EQ(r->losses.size(), expected->losses.size());
    for (size_t e = 0; e < r->losses.size(); ++e) {
      EXPECT_NEAR(r->losses[e], expected->losses[e], 1e-5 * expected->losses[e]) << "epoch " << e + 1;
    }
    EXPECT_NEAR(r->test_accuracy, expected->test_accuracy, 2e-3);
  }
}

TEST(MiniBatch, SampledGraphSageOnCoraReachesTheDatasetsAccuracy) {
  flexgraph::RunConfig c = Options("sage");
  c.mutable_train()->set_batch_size(32);  // five batches of fanouts 25, 10
  c.mutable_train()->set_epochs(100);
  auto r = Train(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->batches_per_epoch, 5);
  EXPECT_GT(r->sampled_edges_per_epoch, 0);
  EXPECT_GE(r->test_accuracy, 0.80) << "GraphSAGE, mini-batches of 32, fanouts 25,10";
}

TEST(MiniBatch, LadiesTrainsGcnOnCora) {
  flexgraph::RunConfig c = Options("gcn");
  c.mutable_train()->set_batch_size(32);
  c.mutable_train()->set_sampler("ladies");
  c.mutable_train()->set_layer_size(256);
  c.mutable_train()->set_epochs(80);
  auto r = Train(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->test_accuracy, 0.78) << "GCN, LADIES with 256 vertices per layer";
}

// Bulks of train.bulk batches; 0 chooses 8, and with LADIES (one thread a batch) at least one batch
// a thread.
TEST(MiniBatch, AutomaticBulksFillTheThreadsWithLadies) {
  const int threads = NumThreads();
  for (const auto& [sampler, bulk, thread_count, expected] :
       {std::tuple<const char*, int, int, int>{"neighbor", 0, 12, 8}, {"ladies", 0, 12, 12}, {"ladies", 0, 2, 8},
        {"ladies", 3, 12, 3}, {"neighbor", 5, 1, 5}}) {
    SCOPED_TRACE(::testing::Message() << sampler << " bulk " << bulk << " threads " << thread_count);
    flexgraph::RunConfig c = Options("gcn");
    c.mutable_train()->set_batch_size(32);
    c.mutable_train()->set_sampler(sampler);
    c.mutable_train()->set_bulk(bulk);
    c.mutable_train()->set_threads(thread_count);
    c.mutable_train()->set_epochs(1);
    auto r = Train(c);
    SetNumThreads(threads);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->bulk, expected);
  }
}

// Also where the input rows, and with dense features layer 0's dropouts of them, are drawn ahead
// on the sampling thread: for other batches at bulk 1 than at bulk 3.
TEST(MiniBatch, DeterministicForAnyBulkSizeAndThreadCount) {
  for (const auto& [model, dataset] : {std::pair<std::string, std::string>{"gcn", kData + "/cora"},
                                       {"sage", "sbm:nodes=2000,classes=4,features=24"}}) {
    SCOPED_TRACE(model + " on " + dataset);
    flexgraph::RunConfig c = Options(model, dataset);
    c.mutable_train()->set_batch_size(20);
    c.mutable_train()->set_fanouts("5,5");
    c.mutable_train()->set_epochs(3);
    c.mutable_train()->set_bulk(1);
    auto one = Train(c);
    ASSERT_TRUE(one.ok()) << one.status();
    c.mutable_train()->set_bulk(3);
    c.mutable_train()->set_threads(1);
    const int threads = NumThreads();
    auto bulk = Train(c);
    SetNumThreads(threads);
    ASSERT_TRUE(bulk.ok()) << bulk.status();
    EXPECT_GE(one->batches_per_epoch, 7);
    EXPECT_EQ(one->losses, bulk->losses);
    EXPECT_EQ(one->sampled_edges_per_epoch, bulk->sampled_edges_per_epoch);
  }
}

TEST(MiniBatch, WhatItCannotRunIsRefusedNamingTheField) {
  auto message = [](const flexgraph::RunConfig& c) {
    auto r = Train(c);
    return r.ok() ? std::string("ok") : std::string(r.status().message());
  };
  flexgraph::RunConfig c = Options("sage");
  c.mutable_train()->set_batch_size(16);
  c.mutable_train()->set_fanouts("10");
  EXPECT_NE(message(c).find("fanouts: '10' gives 1 fanouts for a model of 2 layers"), std::string::npos)
      << message(c);
  c.mutable_train()->set_fanouts("10,x");
  EXPECT_NE(message(c).find("fanouts: expected non-negative integers"), std::string::npos) << message(c);
  c.mutable_train()->set_fanouts("");
  c.mutable_train()->set_sampler("fastgcn");
  EXPECT_NE(message(c).find("sampler: unknown sampler 'fastgcn'"), std::string::npos) << message(c);
  c.mutable_train()->set_sampler("neighbor");
  c.mutable_train()->set_sample_on("gpu");
  EXPECT_NE(message(c).find("sample_on: expected host or device, got 'gpu'"), std::string::npos) << message(c);
  c.mutable_train()->set_sample_on("device");  // training on the CPU
  EXPECT_NE(message(c).find("sample_on: device samples for training on a CUDA device (--device cuda), got --device cpu"),
            std::string::npos)
      << message(c);
  c.mutable_train()->set_sample_on("");
  c.mutable_train()->set_batch_size(-1);
  EXPECT_NE(message(c).find("batch_size: must not be negative"), std::string::npos) << message(c);

  flexgraph::RunConfig magnn = Options("magnn", kData + "/imdb");
  magnn.mutable_train()->set_batch_size(64);
  EXPECT_NE(message(magnn).find("mini-batch sampling takes flat neighbourhoods"), std::string::npos)
      << message(magnn);
}

TEST(MiniBatch, PinSageLinkPredictionInOneBatchIsFullBatchAndSampledBatchesLearn) {
  flexgraph::RunConfig full = Options("pinsage", kData + "/lastfm");
  full.mutable_train()->set_epochs(3);
  auto expected = Train(full);
  ASSERT_TRUE(expected.ok()) << expected.status();
  flexgraph::RunConfig one = full;
  one.mutable_train()->set_batch_size(1 << 20);  // every training pair, with its negatives
  one.mutable_train()->set_fanouts("0,0");
  auto r = Train(one);
  ASSERT_TRUE(r.ok()) << r.status();
  for (size_t e = 0; e < r->losses.size(); ++e) {
    EXPECT_NEAR(r->losses[e], expected->losses[e], 1e-5 * expected->losses[e]) << "epoch " << e + 1;
  }
  EXPECT_NEAR(r->extra["test_auc"], expected->extra["test_auc"], 1e-4);

  flexgraph::RunConfig sampled = full;
  sampled.mutable_train()->set_batch_size(8192);  // 8 batches of user-artist pairs
  sampled.mutable_train()->set_fanouts("5,5");
  sampled.mutable_train()->set_epochs(10);
  auto s = Train(sampled);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->batches_per_epoch, 8);
  EXPECT_GE(s->extra["test_auc"], 0.9) << "PinSage on LastFM, mini-batches of 8192 pairs";
}

}  // namespace
}  // namespace fg::runtime
