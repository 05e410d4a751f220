// ShaDow mini-batches (--sampler shadow) in the trainer: GCN reaches Cora's accuracy with the
// sampler's defaults, GCN, SAGE and GIN learn on the subgraphs (pooled or not), runs are the same
// whatever the bulk size and thread count, and bad options are refused naming the field.
#include <gtest/gtest.h>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"
#include "runtime/train/trainer.h"

namespace fg::runtime {
namespace {

const std::string kCora = std::string(FG_SHARED_DATA_DIR) + "/cora";

flexgraph::RunConfig Shadow(const std::string& model) {
  flexgraph::RunConfig config;
  config.mutable_model()->set_name(model);
  config.mutable_dataset()->set_path(kCora);
  config.mutable_output()->set_quiet(true);
  config.mutable_train()->set_batch_size(32);
  config.mutable_train()->set_sampler("shadow");
  return config;
}

absl::StatusOr<TrainResult> Train(const flexgraph::RunConfig& config) {
  FG_ASSIGN_OR_RETURN(flexgraph::RunConfig resolved, ResolveConfig(config));
  FG_ASSIGN_OR_RETURN(auto trainer, Trainer::Create(resolved));
  return trainer->Run();
}

// The sampler's defaults (two hops, fanouts 10 and 5); the model's (two layers, hidden 16).
// Evaluation runs each vertex's subgraph too.
TEST(ShadowTraining, GcnOnCoraReachesTheDatasetsAccuracy) {
  flexgraph::RunConfig c = Shadow("gcn");
  c.mutable_train()->set_epochs(100);
  c.mutable_train()->set_eval_every(5);
  auto r = Train(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->batches_per_epoch, 5);
  EXPECT_GT(r->sampled_edges_per_epoch, 0);
  EXPECT_GE(r->test_accuracy, 0.80) << "GCN on ShaDow subgraphs, 2 hops of fanouts 10, 5";
}

TEST(ShadowTraining, GcnSageAndGinLearnOnTheSubgraphsPooledOrNot) {
  for (const char* model : {"gcn", "sage", "gin"}) {
    for (const char* pool : {"pool=none", "pool=mean"}) {
      SCOPED_TRACE(::testing::Message() << model << " " << pool);
      flexgraph::RunConfig c = Shadow(model);
      c.mutable_model()->set_layers(3);  // deeper than the two hops
      c.mutable_train()->set_sampler_opt(pool);
      c.mutable_train()->set_epochs(20);
      c.mutable_train()->set_eval_every(20);
      auto r = Train(c);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->losses.size(), 20u);
      EXPECT_LT(r->losses.back(), 0.75 * r->losses.front());
      EXPECT_GT(r->test_accuracy, 0.5);
    }
  }
}

TEST(ShadowTraining, DeterministicForAnyBulkSizeAndThreadCount) {
  flexgraph::RunConfig c = Shadow("gcn");
  c.mutable_train()->set_batch_size(20);
  c.mutable_train()->set_sampler_opt("pool=mean");
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
  EXPECT_EQ(one->losses, bulk->losses);
  EXPECT_EQ(one->sampled_edges_per_epoch, bulk->sampled_edges_per_epoch);
  EXPECT_EQ(one->test_accuracy, bulk->test_accuracy);
}

TEST(ShadowTraining, BadOptionsAreRefusedNamingTheField) {
  for (const auto& [fanouts, opt, error] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"10,x", "", "fanouts: expected non-negative integers separated by commas, got '10,x'"},
           {"", "pool=max", "--sampler_opt pool: expected none or mean, got 'max'"},
           {"", "hops=3", "--sampler_opt: unknown key 'hops'"}}) {
    flexgraph::RunConfig c = Shadow("gcn");
    c.mutable_train()->set_fanouts(fanouts);
    c.mutable_train()->set_sampler_opt(opt);
    auto r = ResolveConfig(c);
    ASSERT_FALSE(r.ok()) << fanouts << " " << opt;
    EXPECT_NE(r.status().message().find(error), std::string::npos) << r.status();
  }
  flexgraph::RunConfig c = Shadow("gcn");
  c.mutable_train()->set_sampler("neighbor");
  c.mutable_train()->set_sampler_opt("pool=mean");
  auto r = ResolveConfig(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("applies to the shadow sampler, not neighbor"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace fg::runtime
