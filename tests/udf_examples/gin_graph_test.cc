// GIN with a graph readout on a generated graph-classification set written in the OGB
// graph-property layout: paths (class 0) against paths with extra chords (class 1), told apart by
// their degrees. Trained through the Trainer on batches of whole graphs, it classifies held-out
// graphs; two data-parallel workers give the single process's losses; a bad readout is named.
#include <gtest/gtest.h>

#include <string>

#include "flexgraph/graph/dataset.h"
#include "runtime/train/trainer.h"
#include "tests/graph/test_util.h"
#include "tests/udf_examples/graph_classification_set.h"
#include "tests/runtime/in_process_workers.h"

namespace fg::runtime {
namespace {

flexgraph::RunConfig Config(const std::string& path, const std::string& readout, int epochs) {
  flexgraph::RunConfig c;
  c.mutable_dataset()->set_path(path);
  c.mutable_model()->set_name("gin");
  c.mutable_model()->set_hidden(32);
  c.mutable_model()->set_layers(3);
  c.mutable_model()->set_dropout(0);
  (*c.mutable_model()->mutable_options())["readout"] = readout;
  c.mutable_train()->set_epochs(epochs);
  c.mutable_train()->set_batch_size(8);
  c.mutable_train()->set_lr(0.01f);
  c.mutable_train()->set_weight_decay(0);
  c.mutable_train()->set_seed(2);
  c.mutable_output()->set_quiet(true);
  return c;
}

TEST(GinGraphs, ClassifiesHeldOutGraphsWithEachReadout) {
  graph::testing::TempDir d;
  const std::string path = testing::WriteChordedPaths(d);
  for (const char* readout : {"sum", "mean", "max"}) {
    SCOPED_TRACE(readout);
    auto t = Trainer::Create(Config(path, readout, 40));
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_NE((*t)->graph_batches(), nullptr);
    EXPECT_EQ((*t)->task().kind(), nau::Task::kGraphClassification);
    auto r = (*t)->Run();
    ASSERT_TRUE(r.ok()) << r.status();
    std::printf("gin readout %s: loss %.4f -> %.4f, test accuracy %.4f\n", readout, r->losses.front(),
                r->losses.back(), r->test_accuracy);
    EXPECT_LT(r->losses.back(), r->losses.front());
    EXPECT_GE(r->test_accuracy, 0.9);
  }
}

TEST(GinGraphs, DataParallelWorkersGiveTheSingleProcessLosses) {
  graph::testing::TempDir d;
  const flexgraph::RunConfig c = Config(testing::WriteChordedPaths(d), "sum", 3);
  auto single = Trainer::Create(c);
  ASSERT_TRUE(single.ok()) << single.status();
  auto want = (*single)->Run();
  ASSERT_TRUE(want.ok()) << want.status();
  const int64_t vertices = (*single)->dataset().graph.NumNodes("node");
  const auto results = testing::RunWorkers(c, 2, ExchangeMode::kAuto, vertices);
  for (const TrainResult& r : results) {
    ASSERT_EQ(r.losses.size(), want->losses.size());
    // Gradients summed in another order differ in the last bits, which Adam's steps amplify over
    // the 42 steps (the first epoch agrees to 1e-6).
    EXPECT_NEAR(r.losses[0], want->losses[0], 1e-6 * want->losses[0]);
    for (size_t e = 0; e < r.losses.size(); ++e) EXPECT_NEAR(r.losses[e], want->losses[e], 1e-3 * want->losses[e]) << e;
    EXPECT_EQ(r.test_accuracy, want->test_accuracy);
  }
}

TEST(GinGraphs, RefusesAnUnknownReadout) {
  graph::testing::TempDir d;
  auto t = Trainer::Create(Config(testing::WriteChordedPaths(d), "median", 1));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("readout: 'median'"), std::string::npos) << t.status();
}

}  // namespace
}  // namespace fg::runtime
