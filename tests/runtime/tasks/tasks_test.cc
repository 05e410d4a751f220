// Tasks on hand-made data whose answers are known: node classification's loss and metrics, the
// errors that name a split or vertex, and how metric counts are summed across workers.
#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "flexgraph/autograd/var.h"
#include "flexgraph/graph/dataset.h"
#include "proto/config.pb.h"
#include "runtime/tasks/node_classification.h"
#include "runtime/tasks/task.h"

namespace fg::runtime {
namespace {

// Six vertices of one type, three classes: train {0, 1, 2}, valid {3}, test {4, 5}.
graph::Dataset SixVertices() {
  graph::Dataset ds;
  ds.name = "six";
  ds.graph.node_types = {"node"};
  ds.graph.num_nodes = {6};
  ds.labels["node"] = Tensor::FromVector(std::vector<int64_t>{0, 1, 2, 0, 1, 2});
  ds.num_classes["node"] = 3;
  ds.splits["node"] = {Tensor::FromVector(std::vector<int64_t>{0, 1, 2}),
                       Tensor::FromVector(std::vector<int64_t>{3}),
                       Tensor::FromVector(std::vector<int64_t>{4, 5})};
  return ds;
}

// One row per vertex with the largest logit at `predicted[v]`.
Tensor Logits(const std::vector<int>& predicted) {
  std::vector<float> v(predicted.size() * 3, 0.0f);
  for (size_t r = 0; r < predicted.size(); ++r) v[r * 3 + predicted[r]] = 2.0f;
  return Tensor::FromVector(v).Reshape({static_cast<int64_t>(predicted.size()), 3});
}

const WorkerSum kAlone = [](std::vector<double>*) {};

TEST(NodeClassification, LossIsTheMeanCrossEntropyOfTheTrainingRows) {
  graph::Dataset ds = SixVertices();
  flexgraph::RunConfig config;
  auto task = MakeTask(&ds, config);
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*task)->kind(), nau::Task::kNodeClassification);
  EXPECT_EQ((*task)->num_classes(), 3);
  ASSERT_TRUE((*task)->SetOutputRows(Tensor::FromVector(std::vector<int64_t>{0, 1, 2, 3, 4, 5})).ok());
  // Rows 0 and 1 right, row 2 wrong: -log softmax at the label is log(e^2 + 2) - 2 when right and
  // log(e^2 + 2) - 0 when wrong.
  ag::Var out(Logits({0, 1, 0, 0, 1, 1}), false);
  const double z = std::log(std::exp(2.0) + 2.0);
  const double expected = ((z - 2) + (z - 2) + z) / 3;
  EXPECT_NEAR((*task)->Loss(out, 1).value().f32()[0], expected, 1e-5);
  EXPECT_EQ((*task)->NumTrainingItems(), 3);
}

TEST(NodeClassification, MetricsCountEachSplit) {
  graph::Dataset ds = SixVertices();
  auto task = NodeClassificationTask::Create(ds, "node", "six");
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_TRUE((*task)->SetOutputRows(Tensor::FromVector(std::vector<int64_t>{0, 1, 2, 3, 4, 5})).ok());
  // train: 2 of 3 right; valid: right; test: 4 right, 5 predicted 1 for class 2.
  EpochMetrics m = (*task)->Evaluate(Logits({0, 1, 0, 0, 1, 1}), kAlone);
  EXPECT_NEAR(m.train, 2.0 / 3, 1e-12);
  EXPECT_EQ(m.valid, 1.0);
  EXPECT_EQ(m.test, 0.5);
  EXPECT_EQ(m.test_micro_f1, 0.5);
  // Test classes: 1 has tp 1, fp 1 (F1 2/3); 2 has fn 1 (F1 0); 0 has no test vertex.
  EXPECT_GT(m.test_macro_f1, 0.0);
  EXPECT_LT(m.test_macro_f1, 2.0 / 3 + 1e-12);
}

TEST(NodeClassification, MetricsAreComputedFromTheSummedCounts) {
  // Two workers holding the same rows: every count doubles, the ratios stay.
  graph::Dataset ds = SixVertices();
  auto task = NodeClassificationTask::Create(ds, "node", "six");
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_TRUE((*task)->SetOutputRows(Tensor::FromVector(std::vector<int64_t>{0, 1, 2, 3, 4, 5})).ok());
  int calls = 0;
  EpochMetrics m = (*task)->Evaluate(Logits({0, 1, 0, 0, 1, 1}), [&](std::vector<double>* v) {
    ++calls;
    for (double& x : *v) x *= 2;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_NEAR(m.train, 2.0 / 3, 1e-12);
  EXPECT_EQ(m.test, 0.5);
  // A sum that loses the other worker's test counts changes the answer.
  m = (*task)->Evaluate(Logits({0, 1, 0, 0, 1, 1}), [](std::vector<double>* v) { (*v)[4] += 1; });
  EXPECT_EQ(m.test, 1.0);
}

TEST(NodeClassification, AnEmptySplitHasNoMetricsRatherThanZero) {
  // No validation vertices, no test split at all: NaN (null in the summary), which a reader cannot
  // take for an accuracy of 0 and model selection cannot take for a value to beat.
  graph::Dataset ds = SixVertices();
  ds.splits["node"].valid = Tensor::Empty({0}, DType::kInt64);
  ds.splits["node"].test = Tensor();
  auto task = NodeClassificationTask::Create(ds, "node", "six");
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_TRUE(
      (*task)->SetOutputRows(Tensor::FromVector(std::vector<int64_t>{0, 1, 2, 3, 4, 5})).ok());
  EpochMetrics m = (*task)->Evaluate(Logits({0, 1, 0, 0, 1, 1}), kAlone);
  EXPECT_NEAR(m.train, 2.0 / 3, 1e-12);
  for (double v : {m.valid, m.valid_macro_f1, m.test, m.test_macro_f1, m.test_micro_f1})
    EXPECT_TRUE(std::isnan(v)) << v;
}

TEST(NodeClassification, ErrorsNameTheSplitAndTheVertex) {
  graph::Dataset ds = SixVertices();
  ds.splits["node"].test = Tensor::FromVector(std::vector<int64_t>{4, 1});
  auto task = NodeClassificationTask::Create(ds, "node", "six");
  ASSERT_TRUE(task.ok()) << task.status();
  absl::Status s = (*task)->SetOutputRows(Tensor::FromVector(std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_NE(std::string(s.message()).find("node 1 is also in the train split"), std::string::npos) << s;

  graph::Dataset no_train = SixVertices();
  no_train.splits["node"].train = Tensor::FromVector(std::vector<int64_t>{});
  EXPECT_NE(std::string(NodeClassificationTask::Create(no_train, "node", "six").status().message())
                .find("empty training split in six"),
            std::string::npos);

  graph::Dataset one_class = SixVertices();
  one_class.num_classes["node"] = 1;
  EXPECT_NE(std::string(NodeClassificationTask::Create(one_class, "node", "six").status().message())
                .find("make 1 classes for 6 vertices"),
            std::string::npos);
}

TEST(MakeTask, NamesAnUnknownTargetType) {
  graph::Dataset ds = SixVertices();
  flexgraph::RunConfig config;
  config.mutable_dataset()->set_path("six");
  config.mutable_dataset()->set_target_type("paper");
  auto task = MakeTask(&ds, config);
  ASSERT_FALSE(task.ok());
  EXPECT_NE(std::string(task.status().message()).find("node type 'paper' not in dataset six"), std::string::npos)
      << task.status();
}

}  // namespace
}  // namespace fg::runtime
