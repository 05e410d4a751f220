// The edge filter (udf_examples/filter/filter.cc): its pieces computed under ag::Checkpoint give
// the loss and every gradient of one piece (chunk larger than the graph), the gradients match
// finite differences, the output is one logit per edge given to both its entries, the triplet
// features of a hand-made event, it learns the edges of a small generated sample, and what it
// refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/graph/dataset.h"
#include "nau/model.h"
#include "runtime/tasks/graph_tasks.h"
#include "runtime/train/trainer.h"
#include "tests/udf_examples/edge_model_setup.h"
#include "udf_examples/filter/triplets.h"

namespace fg::runtime {
namespace {

using Setup = testing::EdgeModelSetup;

std::unique_ptr<Setup> Make(const std::string& data, int hidden, int layers,
                            const std::map<std::string, std::string>& opts) {
  return testing::MakeEdgeModel("filter", data, hidden, layers, opts, {});
}

ag::Var Output(Setup& s) {
  nau::LayerContext ctx;
  ctx.training = true;
  const ag::Var h = s.model->Input(ctx, s.spec);
  return s.model->Head(ctx, s.spec, h);
}

// The training loss over every graph, its value and the gradients of all parameters.
struct LossAndGrads {
  double loss;
  std::vector<Tensor> grads;
};
LossAndGrads LossGrads(Setup& s) {
  for (const nn::NamedParameter& p : s.model->parameters()) p.var.ZeroGrad();
  const ag::Var loss = s.task->BatchLoss(Output(s), WholeSet(s.ds));
  loss.Backward();
  LossAndGrads r{loss.value().Item(), {}};
  for (const nn::NamedParameter& p : s.model->parameters()) {
    r.grads.push_back(p.var.grad().defined() ? p.var.grad().Clone() : Tensor::Zeros(p.var.shape()));
  }
  return r;
}

const char kEvents[] = "trackml:events=3,particles=8,noise=0.1,seed=2,train=0.67,valid=0.33";

TEST(Filter, PiecesUnderCheckpointGiveTheWholeGraphsLossAndGradients) {
  // chunk 5: the rounds in pieces of at most 5 entries (whole rows) and the head in pieces of 5
  // edges, each recomputed in the backward pass; chunk 1e9: one piece. Two rounds.
  auto small = Make(kEvents, 8, 3, {{"chunk", "5"}});
  auto whole = Make(kEvents, 8, 3, {{"chunk", "1000000000"}});
  ASSERT_TRUE(small->model->Build(small->spec).ok());
  ASSERT_TRUE(whole->model->Build(whole->spec).ok());
  ASSERT_GT(small->ds.Adjacency().nnz(), 50);
  const LossAndGrads a = LossGrads(*small), b = LossGrads(*whole);
  EXPECT_NEAR(a.loss, b.loss, 1e-6);
  ASSERT_EQ(a.grads.size(), b.grads.size());
  ASSERT_GT(a.grads.size(), 20u);  // encoders, two rounds' message and update MLPs, the head
  double norm = 0;
  for (size_t i = 0; i < a.grads.size(); ++i) {
    for (int64_t j = 0; j < a.grads[i].numel(); ++j) {
      EXPECT_NEAR(a.grads[i].f32()[j], b.grads[i].f32()[j], 1e-5)
          << small->model->parameters()[i].name;
      norm += std::fabs(a.grads[i].f32()[j]);
    }
  }
  EXPECT_GT(norm, 0);
  // Without gradients (inference, as `flexgraph filter` scores): the same output, no pieces kept.
  const Tensor with = Output(*small).value();
  ag::NoGradGuard guard;
  const Tensor without = Output(*small).value();
  ASSERT_EQ(with.numel(), without.numel());
  for (int64_t k = 0; k < with.numel(); ++k) EXPECT_EQ(with.f32()[k], without.f32()[k]);
}

TEST(Filter, GradientsMatchFiniteDifferences) {
  auto s = Make(kEvents, 6, 2, {{"chunk", "7"}});
  ASSERT_TRUE(s->model->Build(s->spec).ok());
  const LossAndGrads g = LossGrads(*s);
  auto loss = [&] {
    ag::NoGradGuard guard;
    return static_cast<double>(s->task->BatchLoss(Output(*s), WholeSet(s->ds)).value().Item());
  };
  int checked = 0;
  const std::vector<nn::NamedParameter> params = s->model->parameters();
  for (size_t i = 0; i < params.size(); i += 3) {  // every third parameter, two elements each
    Tensor& v = params[i].var.mutable_value();
    for (int64_t j : {int64_t{0}, v.numel() - 1}) {
      const float keep = v.f32()[j], eps = 1e-2f;
      v.f32()[j] = keep + eps;
      const double plus = loss();
      v.f32()[j] = keep - eps;
      const double minus = loss();
      v.f32()[j] = keep;
      const double numeric = (plus - minus) / (2 * eps), analytic = g.grads[i].f32()[j];
      EXPECT_NEAR(analytic, numeric, 2e-2 * std::max(1.0, std::fabs(numeric)) + 2e-4)
          << params[i].name << " [" << j << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 10);
}

TEST(Filter, OneLogitPerEdgeForBothEntries) {
  auto s = Make(kEvents, 8, 2, {});
  ASSERT_TRUE(s->model->Build(s->spec).ok());
  ag::NoGradGuard guard;
  const Tensor out = Output(*s).value();
  const graph::GraphSet& gs = *s->ds.graphs;
  ASSERT_EQ(out.rows(), s->ds.Adjacency().nnz());
  std::vector<float> first(gs.num_edges(), NAN);
  int both = 0;
  for (int64_t k = 0; k < out.rows(); ++k) {
    const int64_t e = gs.entry_edges.i64()[k] % gs.num_edges();
    if (std::isnan(first[e])) {
      first[e] = out.f32()[k];
    } else {
      EXPECT_EQ(out.f32()[k], first[e]) << "edge " << e;
      ++both;
    }
  }
  EXPECT_EQ(both, gs.num_edges());  // reverse edges stored: every edge has two entries
}

TEST(Filter, LearnsTheEdgesOfASmallSample) {
  // 24 events of about 100 particles; the filter at its defaults but fewer epochs and a smaller
  // width: the test events' true edges ranked well above the fake ones.
  flexgraph::RunConfig c;
  c.mutable_dataset()->set_path("trackml:events=24,particles=100,noise=0.1,seed=12");
  c.mutable_model()->set_name("filter");
  c.mutable_model()->set_hidden(16);
  c.mutable_train()->set_epochs(8);
  c.mutable_train()->set_batch_size(2);
  c.mutable_train()->set_lr(0.005f);
  c.mutable_train()->set_seed(3);
  c.mutable_output()->set_quiet(true);
  auto trainer = Trainer::Create(c);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  auto r = (*trainer)->Run();
  ASSERT_TRUE(r.ok()) << r.status();
  std::printf("filter: loss %.4f -> %.4f, test auc %.4f, %.2f s/epoch\n", r->losses.front(),
              r->losses.back(), r->extra["test_auc"], r->epoch_seconds_median);
  EXPECT_LT(r->losses.back(), r->losses.front());
  EXPECT_GE(r->extra["test_auc"], 0.85);
}

// Triplet features on a hand-made event: hits 0 -> 1 -> 2 and a branch 1 -> 3. Edge 0 (0, 1):
// phi slope 0.1 rad/m, dz/dr 0.5; edge 1 (1, 2): 0.13, 0.5; edge 2 (1, 3): 0.4, 0.9.
TEST(Filter, TripletFeaturesOfAHandMadeEvent) {
  using udf::kNoContinuation, udf::kTripletFeatures, udf::TripletFeatures;
  graph::Dataset ds;
  graph::GraphSet& gs = ds.graphs.emplace();
  gs.node_offsets = Tensor::FromVector(std::vector<int64_t>{0, 4});
  gs.edge_offsets = Tensor::FromVector(std::vector<int64_t>{0, 3});
  gs.edges = Tensor::FromVector(std::vector<int64_t>{0, 1, 1, 2, 1, 3}).Reshape({3, 2});
  // (dr, dphi, dz, deta, phi slope, r phi slope)
  gs.edge_feat = Tensor::FromVector(std::vector<float>{0.1f, 0, 0.05f, 0, 0.1f, 0,  //
                                                       0.2f, 0, 0.1f, 0, 0.13f, 0,  //
                                                       0.1f, 0, 0.09f, 0, 0.4f, 0})
                     .Reshape({3, 6});
  ASSERT_TRUE(graph::BuildGraphSetGraph(&ds, {}).ok());
  const Tensor t = TripletFeatures(gs, ds.Adjacency());
  ASSERT_EQ(t.shape(), (Shape{3, kTripletFeatures}));
  const std::vector<float> want = {
      // edge 0: nothing leads into hit 0; of 1 -> 2 and 1 -> 3, the first agrees (0.03 rad/m).
      kNoContinuation, kNoContinuation, 0, 1, 0, 1,
      // edge 1: 0 -> 1 before it (0.03 rad/m less); nothing after hit 2.
      -1, 0, 1, kNoContinuation, kNoContinuation, 0,
      // edge 2: 0 -> 1 before it, far off (-10 and -20 scaled, clipped to -10); nothing after 3.
      -kNoContinuation, -kNoContinuation, 1, kNoContinuation, kNoContinuation, 0};
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_NEAR(t.f32()[i], want[i], 1e-4) << "element " << i;
}

TEST(Filter, RefusesADatasetWithoutEdgeFeaturesAndBadOptions) {
  auto s = Make(kEvents, 8, 2, {{"chunk", "0"}});
  absl::Status st = s->model->Build(s->spec);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("chunk: 0"), std::string::npos) << st;
  s = Make(kEvents, 8, 2, {{"mlp_layers", "9"}});
  EXPECT_FALSE(s->model->Build(s->spec).ok());
  graph::Dataset sbm = *graph::LoadDataset("sbm:nodes=50,classes=2,features=4", {});
  s->spec.dataset = &sbm;
  s->spec.options = nau::OptionValues(nau::ModelRegistry::Get().Find("filter")->options, {});
  st = s->model->Build(s->spec);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not a set of graphs with edge features"), std::string::npos) << st;
}

}  // namespace
}  // namespace fg::runtime
