// The Interaction Network on a small generated TrackML-like sample, sized for CI: trained on batches
// of whole events (GraphBatchTraining), judged on held-out test events at cut 0.5 against the
// particle-tracking targets (edge efficiency >= 0.97, purity >= 0.95). Also: the model's options
// and what it refuses.
#include <chrono>
#include <cstdio>

#include <gtest/gtest.h>

#include "flexgraph/graph/dataset.h"
#include "nau/model.h"
#include "runtime/tasks/graph_tasks.h"
#include "runtime/train/graph_batches.h"

namespace fg::runtime {
namespace {

struct Setup {
  graph::Dataset ds;
  std::unique_ptr<GraphSetTask> task;
  std::unique_ptr<nau::Model> model;
  nau::VertexSpace space;
  nau::ModelSpec spec;
};

std::unique_ptr<Setup> Make(const std::string& data, int hidden, int layers,
                            std::map<std::string, std::string> opts) {
  auto s = std::make_unique<Setup>();
  auto ds = graph::LoadDataset(data, {});
  EXPECT_TRUE(ds.ok()) << ds.status();
  s->ds = std::move(ds).value();
  const nau::ModelInfo* info = nau::ModelRegistry::Get().Find("interaction");
  EXPECT_NE(info, nullptr);
  auto task = MakeGraphSetTask(&s->ds, nau::OptionValues(EdgeClassificationTask::Options(), opts));
  EXPECT_TRUE(task.ok()) << task.status();
  s->task = std::move(task).value();
  s->space = nau::VertexSpace(s->ds.graph);
  s->spec.dataset = &s->ds;
  s->spec.vertices = &s->space;
  s->spec.target_type = "node";
  s->spec.num_classes = s->task->num_classes();
  s->spec.hidden = hidden;
  s->spec.layers = layers;
  s->spec.seed = 1;
  s->spec.options = nau::OptionValues(info->options, opts);
  s->model = info->factory();
  return s;
}

TEST(Interaction, RefusesADatasetWithoutEdgeFeaturesAndABadAggregation) {
  auto s = Make("trackml:events=3,particles=10,seed=2", 8, 1, {{"aggregation", "sum,median"}});
  absl::Status st = s->model->Build(s->spec);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("median"), std::string::npos);
  graph::Dataset sbm = *graph::LoadDataset("sbm:nodes=50,classes=2,features=4", {});
  s->spec.dataset = &sbm;
  s->spec.options = nau::OptionValues(nau::ModelRegistry::Get().Find("interaction")->options, {});
  EXPECT_FALSE(s->model->Build(s->spec).ok());
}

TEST(Interaction, ReachesTheTrackingTargetsOnHeldOutEvents) {
  // 40 events of about 60 particles (plus 10% noise hits): 32 train, 4 valid, 4 test.
  auto s = Make("trackml:events=40,particles=60,noise=0.1,seed=11", 32, 4,
                {{"aggregation", "sum,max"}});
  ASSERT_TRUE(s->model->Build(s->spec).ok());
  nn::OptimizerOptions oo;
  oo.lr = 0.003f;
  nn::Optimizer opt(nn::OptimizerKind::kAdam, s->model->parameters(), oo);
  GraphBatchTraining training({s->model.get(), &s->spec, s->task.get(), &opt}, 4, 5);
  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, double> test;
  double first = 0, last = 0;
  for (int epoch = 0; epoch < 30; ++epoch) {
    auto loss = training.RunEpoch(epoch);
    ASSERT_TRUE(loss.ok()) << loss.status();
    if (epoch == 0) first = *loss;
    last = *loss;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto m = training.Evaluate(2);
  ASSERT_TRUE(m.ok()) << m.status();
  test = *m;
  std::printf("interaction: loss %.4f -> %.4f, test efficiency %.4f purity %.4f auc %.4f over %.0f "
              "edges, %.1f s training\n",
              first, last, test["efficiency"], test["purity"], test["auc"], test["items"], seconds);
  EXPECT_LT(last, first);
  EXPECT_GE(test["efficiency"], 0.97);
  EXPECT_GE(test["purity"], 0.95);
}

}  // namespace
}  // namespace fg::runtime
