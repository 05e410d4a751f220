// The Interaction Network on a small generated TrackML-like sample, sized for CI: trained on batches
// of whole events (the Trainer's GraphBatchTraining), judged on held-out test events at cut 0.5 against the
// particle-tracking targets (edge efficiency >= 0.97, purity >= 0.95). Also: the model's options
// and what it refuses, recomputation, and edges stored once (edges=once).
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "flexgraph/graph/dataset.h"
#include "nau/executor.h"
#include "nau/model.h"
#include "runtime/tasks/graph_batch.h"
#include "runtime/tasks/graph_tasks.h"
#include "runtime/train/trainer.h"
#include "tests/udf_examples/edge_model_setup.h"

namespace fg::runtime {
namespace {

using Setup = testing::EdgeModelSetup;

std::unique_ptr<Setup> Make(const std::string& data, int hidden, int layers,
                            const std::map<std::string, std::string>& opts) {
  return testing::MakeEdgeModel("interaction", data, hidden, layers, opts, opts);
}

// The edge scores of one forward pass over the whole set (`state_rows`: the edge-state rows).
Tensor ForwardScores(Setup& s, const GraphBatch& batch, int64_t* state_rows = nullptr) {
  nau::LayerContext ctx;
  ag::Var h = s.model->Input(ctx, s.spec);
  ctx.edge_state = s.model->InitialEdgeState(ctx, s.spec, batch.entry_features);
  for (int i = 0; i < s.model->num_layers(); ++i) {
    nau::Layer& layer = s.model->layer(i);
    auto hdg = nau::SelectHdg(layer, i, s.spec, 0, s.model->Roots(i, s.spec));
    EXPECT_TRUE(hdg.ok()) << hdg.status();
    nau::HybridExecutor executor;
    h = executor.Run(*hdg, executor.Plan(*hdg, layer), layer, h, ctx);
  }
  if (state_rows != nullptr) *state_rows = ctx.edge_state.rows();
  return s.model->Head(ctx, s.spec, h).value();
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
  // 40 events of about 60 particles (plus 10% noise hits): 32 train, 4 valid, 4 test; trained as
  // `flexgraph train --model interaction` trains it (the Trainer on batches of whole events).
  flexgraph::RunConfig c;
  c.mutable_dataset()->set_path("trackml:events=40,particles=60,noise=0.1,seed=11");
  c.mutable_model()->set_name("interaction");
  c.mutable_model()->set_hidden(32);
  c.mutable_model()->set_layers(4);
  (*c.mutable_model()->mutable_options())["aggregation"] = "sum,max";
  c.mutable_train()->set_lr(0.003f);
  c.mutable_train()->set_batch_size(4);
  c.mutable_train()->set_epochs(30);
  c.mutable_train()->set_seed(5);
  c.mutable_output()->set_quiet(true);
  auto trainer = Trainer::Create(c);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  auto r = (*trainer)->Run();
  ASSERT_TRUE(r.ok()) << r.status();
  std::printf("interaction: loss %.4f -> %.4f, test efficiency %.4f purity %.4f auc %.4f (best epoch "
              "%d), median %.2f s/epoch\n",
              r->losses.front(), r->losses.back(), r->extra["test_efficiency"],
              r->extra["test_purity"], r->extra["test_auc"], r->best_epoch, r->epoch_seconds_median);
  EXPECT_LT(r->losses.back(), r->losses.front());
  EXPECT_GE(r->extra["test_efficiency"], 0.97);
  EXPECT_GE(r->extra["test_purity"], 0.95);
}

TEST(Interaction, RecomputedIterationsTrainAsKeptOnes) {
  // The same run with every activation kept and with each iteration, the edge encoder and the
  // head recomputed in the backward pass (ag::Checkpoint): the losses of every epoch (each after
  // the previous epochs' steps) within 1e-6, and so the gradients that made those steps.
  auto run = [](const std::string& recompute) {
    flexgraph::RunConfig c;
    c.mutable_dataset()->set_path("trackml:events=6,particles=30,noise=0.1,seed=3");
    c.mutable_model()->set_name("interaction");
    c.mutable_model()->set_hidden(16);
    c.mutable_model()->set_layers(3);
    (*c.mutable_model()->mutable_options())["aggregation"] = "sum,max,std";
    (*c.mutable_model()->mutable_options())["recompute"] = recompute;
    c.mutable_train()->set_lr(0.01f);
    c.mutable_train()->set_batch_size(2);
    c.mutable_train()->set_epochs(4);
    c.mutable_train()->set_seed(5);
    c.mutable_output()->set_quiet(true);
    auto trainer = Trainer::Create(c);
    EXPECT_TRUE(trainer.ok()) << trainer.status();
    auto r = (*trainer)->Run();
    EXPECT_TRUE(r.ok()) << r.status();
    return r->losses;
  };
  const std::vector<double> kept = run("0"), recomputed = run("1");
  ASSERT_EQ(kept.size(), 4u);
  ASSERT_EQ(recomputed.size(), kept.size());
  for (size_t e = 0; e < kept.size(); ++e) {
    EXPECT_NEAR(recomputed[e], kept[e], 1e-6) << "epoch " << e + 1;
  }
  EXPECT_NE(kept[1], kept[0]);  // the steps changed the weights
}

TEST(Interaction, EdgesStoredOnceHoldHalfTheEdgeStatesAndLearn) {
  // edges=once: one state per edge as stored, aggregated into both hits; the output still has a
  // row per Csr entry (both entries of an edge take its score), from half the edge-state rows.
  auto both = Make("trackml:events=3,particles=20,noise=0.1,seed=2", 8, 2, {});
  auto once = Make("trackml:events=3,particles=20,noise=0.1,seed=2", 8, 2, {{"edges", "once"}});
  ASSERT_TRUE(both->model->Build(both->spec).ok());
  ASSERT_TRUE(once->model->Build(once->spec).ok());
  const GraphBatch batch = WholeSet(once->ds);
  int64_t rows_both = 0, rows_once = 0;
  const Tensor out_both = ForwardScores(*both, batch, &rows_both), out_once = ForwardScores(*once, batch, &rows_once);
  const graph::GraphSet& gs = *once->ds.graphs;
  EXPECT_EQ(rows_both, once->ds.Adjacency().nnz());
  EXPECT_EQ(rows_once, gs.num_edges());
  EXPECT_EQ(2 * rows_once, rows_both);
  ASSERT_EQ(out_once.rows(), out_both.rows());
  std::vector<float> first(gs.num_edges(), NAN);
  for (int64_t k = 0; k < out_once.rows(); ++k) {
    const int64_t e = gs.entry_edges.i64()[k] % gs.num_edges();
    if (std::isnan(first[e])) first[e] = out_once.f32()[k];
    EXPECT_EQ(out_once.f32()[k], first[e]) << "edge " << e;
  }
  auto bad = Make("trackml:events=3,particles=20,noise=0.1,seed=2", 8, 2, {{"edges", "one"}});
  absl::Status st = bad->model->Build(bad->spec);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("edges: 'one' is not both or once"), std::string::npos) << st;

  // Trained as `flexgraph train --model interaction --model_opt edges=once` trains it.
  flexgraph::RunConfig c;
  c.mutable_dataset()->set_path("trackml:events=12,particles=60,noise=0.1,seed=13");
  c.mutable_model()->set_name("interaction");
  c.mutable_model()->set_hidden(16);
  c.mutable_model()->set_layers(3);
  (*c.mutable_model()->mutable_options())["edges"] = "once";
  c.mutable_train()->set_lr(0.005f);
  c.mutable_train()->set_batch_size(2);
  c.mutable_train()->set_epochs(8);
  c.mutable_train()->set_seed(5);
  c.mutable_output()->set_quiet(true);
  auto trainer = Trainer::Create(c);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  auto r = (*trainer)->Run();
  ASSERT_TRUE(r.ok()) << r.status();
  std::printf("interaction, edges=once: loss %.4f -> %.4f, test auc %.4f\n", r->losses.front(),
              r->losses.back(), r->extra["test_auc"]);
  EXPECT_LT(r->losses.back(), r->losses.front());
  EXPECT_GE(r->extra["test_auc"], 0.9);
}

// Rotating every hit of the events about the beam axis (the node features' phi; the edges' dphi is
// unchanged) leaves the scores as they were by default, and changes them with absolute_phi=1.
TEST(Interaction, ScoresDoNotDependOnTheEventsRotationUnlessAsked) {
  for (const char* absolute : {"0", "1"}) {
    auto s = Make("trackml:events=3,particles=20,noise=0.1,seed=2", 8, 2, {{"absolute_phi", absolute}});
    ASSERT_TRUE(s->model->Build(s->spec).ok());
    const GraphBatch batch = WholeSet(s->ds);
    const Tensor before = ForwardScores(*s, batch);
    Tensor& x = s->ds.features.at("node");  // (r, phi / pi, z), phi / pi in (-1, 1]
    for (int64_t v = 0; v < x.rows(); ++v) {
      float& phi = x.f32()[3 * v + 1];
      phi += 0.7f;
      if (phi > 1) phi -= 2;
    }
    const Tensor after = ForwardScores(*s, batch);
    ASSERT_EQ(after.numel(), before.numel());
    int64_t differ = 0;
    for (int64_t k = 0; k < before.numel(); ++k) differ += before.f32()[k] != after.f32()[k];
    if (std::string(absolute) == "0") {
      EXPECT_EQ(differ, 0);
    } else {
      EXPECT_GT(differ, before.numel() / 2);
    }
  }
  auto bad = Make("trackml:events=3,particles=20,noise=0.1,seed=2", 8, 2, {{"absolute_phi", "2"}});
  absl::Status st = bad->model->Build(bad->spec);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("absolute_phi: 2"), std::string::npos) << st;
}

}  // namespace
}  // namespace fg::runtime
