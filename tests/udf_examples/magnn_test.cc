// MAGNN: RotatE paths (the fused encoder against the gathered batch), attention aggregators (values against hand
// computation, gradients against finite differences), the HDG its NeighborSelection builds on a
// hand-drawn graph, the whole layer's gradient, option errors, and IMDB accuracy.
#include "udf_examples/magnn/magnn.h"

#include <gtest/gtest.h>

#include <cmath>

#include "flexgraph/autograd/instance_functions.h"
#include "hdg/builder.h"
#include "nau/executor.h"
#include "runtime/train/trainer.h"
#include "tests/core/gradcheck.h"
#include "tests/udf_examples/tiny_imdb.h"

namespace fg::udf::magnn {
namespace {

using testing::ExpectGradientsMatch;
using testing::RandomTensor;
using testing::Rows;
using testing::Tiny;
using testing::BuildHdg;
using testing::BuildModel;


TEST(Magnn, PathRotationsComposeTowardsTheRoot) {
  const graph::Dataset ds = testing::TinyImdb();
  auto mdm = nau::ParseMetapath("M-D-M", ds.graph);
  auto mamd = nau::ParseMetapath("M-A-M-D", ds.graph);
  ASSERT_TRUE(mdm.ok() && mamd.ok());
  // Relation 0 (directed_by) rotates by 0.6 + 0.8i, relation 1 (starring) by i.
  ag::Var unit = UnitRotations(ag::Var(Rows({3, 4, 0, 2}, 2)));
  EXPECT_NEAR(unit.value().f32()[0], 0.6f, 1e-6);
  EXPECT_NEAR(unit.value().f32()[1], 0.8f, 1e-6);
  // M-D-M: m0 as is, d rotated by conj(r) (m -directed_by-> d walked back), m2 by conj(r) r = 1.
  std::vector<float> r = PathRotations(unit, *mdm).value().ToVector<float>();
  const std::vector<float> want = {1, 0, 0.6f, -0.8f, 1, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(r[i], want[i], 1e-6) << i;
  // M-A-M-D: a: conj(i) = -i; m: -i * i = 1; d: 1 * conj(0.6 + 0.8i).
  r = PathRotations(unit, *mamd).value().ToVector<float>();
  const std::vector<float> want2 = {1, 0, 0, -1, 1, 0, 0.6f, -0.8f};
  for (size_t i = 0; i < want2.size(); ++i) EXPECT_NEAR(r[i], want2[i], 1e-6) << i;
}

TEST(Magnn, RotateEncoderGradients) {
  const graph::Dataset ds = testing::TinyImdb();
  auto mp = nau::ParseMetapath("M-A-M-D", ds.graph);  // forward, backward and forward steps
  ASSERT_TRUE(mp.ok());
  auto f = [&](const std::vector<ag::Var>& in) {
    return RotateEncode(in[0], PathRotations(UnitRotations(in[1]), *mp));
  };
  ExpectGradientsMatch(f, {RandomTensor({3, 4, 6}, 1), RandomTensor({2, 6}, 2, 0.5f, 1.5f)},
                       1e-3f, 2e-2f);
  // The mean encoder as well.
  ExpectGradientsMatch([](const std::vector<ag::Var>& in) { return MeanEncode(in[0]); },
                       {RandomTensor({3, 4, 6}, 3)});
}

TEST(Magnn, FusedEncoderEqualsTheGatheredBatchAndDifferentiates) {
  const graph::Dataset ds = testing::TinyImdb();
  auto mp = nau::ParseMetapath("M-A-M-D", ds.graph);
  ASSERT_TRUE(mp.ok());
  // Three instances over a table of 5 rows (row 1 repeats, row 4 is unused).
  const Tensor vertices = Tensor::FromVector(std::vector<int32_t>{0, 1, 2, 3, 1, 1, 0, 2, 3, 2, 1, 0},
                                             {3, 4});
  const Tensor table = RandomTensor({5, 6}, 14);
  const Tensor raw = RandomTensor({2, 6}, 15, 0.5f, 1.5f);
  for (bool rotate : {false, true}) {
    SCOPED_TRACE(rotate ? "rotate" : "mean");
    auto fused = [&](const std::vector<ag::Var>& in) {
      return ag::EncodeInstances(in[0], {vertices},
                                 {rotate ? PathRotations(UnitRotations(in[1]), *mp) : ag::Var()});
    };
    auto gathered = [&](const std::vector<ag::Var>& in) {
      ag::Var x = ag::Reshape(ag::GatherRows(in[0], vertices.Reshape({12})), {3, 4, 6});
      return rotate ? RotateEncode(x, PathRotations(UnitRotations(in[1]), *mp)) : MeanEncode(x);
    };
    const std::vector<ag::Var> in = {ag::Var(table), ag::Var(raw)};
    const std::vector<float> a = fused(in).value().ToVector<float>();
    const std::vector<float> b = gathered(in).value().ToVector<float>();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << i;
    ExpectGradientsMatch(fused, {table, raw}, 1e-3f, 2e-2f);
  }
  // Two blocks of different lengths in one call: the rows of each block's own encoding.
  auto mdm = nau::ParseMetapath("M-D-M", ds.graph);
  ASSERT_TRUE(mdm.ok());
  const Tensor short_block = Tensor::FromVector(std::vector<int32_t>{4, 0, 4, 2, 2, 3}, {2, 3});
  auto two = [&](const std::vector<ag::Var>& in) {
    ag::Var unit = UnitRotations(in[1]);
    return ag::EncodeInstances(in[0], {vertices, short_block},
                               {PathRotations(unit, *mp), PathRotations(unit, *mdm)});
  };
  const std::vector<ag::Var> in = {ag::Var(table), ag::Var(raw)};
  const ag::Var unit = UnitRotations(in[1]);
  const std::vector<float> a = two(in).value().ToVector<float>();
  std::vector<float> b = ag::EncodeInstances(in[0], {vertices}, {PathRotations(unit, *mp)})
                             .value()
                             .ToVector<float>();
  const std::vector<float> c = ag::EncodeInstances(in[0], {short_block}, {PathRotations(unit, *mdm)})
                                   .value()
                                   .ToVector<float>();
  b.insert(b.end(), c.begin(), c.end());
  EXPECT_EQ(a, b);
  ExpectGradientsMatch(two, {table, raw}, 1e-3f, 2e-2f);
}

// Groups (rows) over instances (columns):  g0 = {p0, p1},  g1 = {p2},  g2 = {}.
SparseMatrixPtr ThreeGroups() {
  return std::make_shared<SparseMatrix>(Csr::FromVectors(3, 3, {0, 2, 3, 3}, {0, 1, 2}));
}

TEST(Magnn, InstanceAttentionMatchesHandComputation) {
  // One head, slope 0.2: e = LeakyReLU(c + s) = {1.5, -0.3} for g0, α = softmax(e).
  ag::Var out = InstanceAttention(ThreeGroups(), ag::Var(Rows({1, 2, 3, -1, 5, 5}, 3)), true,
                                  ag::Var(Rows({0.5f, 0, 0}, 3)),
                                  ag::Var(Rows({1.0f, -2.0f, 7.0f}, 3)), 1, 0.2f, 0.0f, 0, false);
  const double a0 = std::exp(1.5) / (std::exp(1.5) + std::exp(-0.3)), a1 = 1 - a0;
  auto elu = [](double v) { return v > 0 ? v : std::expm1(v); };
  const std::vector<float> got = out.value().ToVector<float>();
  EXPECT_NEAR(got[0], elu(a0 * 1 + a1 * 3), 1e-5);
  EXPECT_NEAR(got[1], elu(a0 * 2 + a1 * -1), 1e-5);
  EXPECT_NEAR(got[2], 5, 1e-5);  // g1 has one instance: α = 1
  EXPECT_NEAR(got[3], 5, 1e-5);
  EXPECT_EQ(got[4], 0.0f);  // empty group
  EXPECT_EQ(got[5], 0.0f);
}

TEST(Magnn, InstanceAttentionGradients) {
  const SparseMatrixPtr groups = ThreeGroups();
  // Shared encodings [3, 4] scored by 2 heads, and per-head encodings [3, 2 * 4].
  for (bool shared : {true, false}) {
    auto f = [&](const std::vector<ag::Var>& in) {
      return InstanceAttention(groups, in[0], shared, in[1], in[2], 2, 0.2f, 0.0f, 0, false);
    };
    ExpectGradientsMatch(f, {RandomTensor({3, shared ? 4 : 8}, 4), RandomTensor({3, 2}, 5),
                             RandomTensor({3, 2}, 6)},
                         1e-3f, 2e-2f);
  }
}

TEST(Magnn, MetapathAttentionWeightsSumToOneAndDifferentiate) {
  nn::Linear fc(3, 5, true, nn::Init::kGlorot, 1);
  ag::Var q(RandomTensor({5, 1}, 7));
  Tensor beta;
  std::vector<ag::Var> h = {ag::Var(RandomTensor({4, 3}, 8)), ag::Var(RandomTensor({4, 3}, 9))};
  ag::Var out = MetapathAttention(h, fc, q, &beta);
  ASSERT_EQ(beta.numel(), 2);
  EXPECT_NEAR(beta.f32()[0] + beta.f32()[1], 1.0, 1e-6);
  // out = β0 h0 + β1 h1.
  for (int64_t i = 0; i < 12; ++i) {
    EXPECT_NEAR(out.value().f32()[i],
                beta.f32()[0] * h[0].value().f32()[i] + beta.f32()[1] * h[1].value().f32()[i],
                1e-5);
  }
  auto f = [&](const std::vector<ag::Var>& in) {
    return MetapathAttention({in[0], in[1], in[2]}, fc, in[3]);
  };
  ExpectGradientsMatch(f, {RandomTensor({4, 3}, 10), RandomTensor({4, 3}, 11),
                           RandomTensor({4, 3}, 12), RandomTensor({5, 1}, 13)},
                       1e-3f, 2e-2f);
}

// --- the registered model on the hand-drawn graph -----------------------------------------------

TEST(Magnn, SelectionBuildsTheMetapathHdg) {
  Tiny t;
  const nau::ModelSpec spec = t.Spec({});
  auto model = BuildModel(spec);
  nau::Layer& layer = model->layer(0);
  EXPECT_EQ(layer.Schema().ToString(), "root -> {M-D-M: instances[3], M-A-M: instances[3]}");
  hdg::Hdg hdg = BuildHdg(layer, spec, {0, 1, 2});
  ASSERT_EQ(hdg.num_levels(), 3);
  // Level 1: M-D-M instances (m0: 2, m1: 2, m2: 1), then M-A-M (m0: 4, m1: 3, m2: 4).
  EXPECT_EQ(hdg.level(1).type_offsets, (std::vector<int64_t>{0, 5, 16}));
  EXPECT_EQ(hdg.level(1).block_arity, (std::vector<int64_t>{3, 3}));
  const Csr& inst = hdg.level(1).csr();
  std::vector<int32_t> first(inst.col(), inst.col() + 15);
  EXPECT_EQ(first, (std::vector<int32_t>{0, 3, 0, 0, 3, 1, 1, 3, 0, 1, 3, 1, 2, 4, 2}));
  // Level 2: (root, metapath) groups; level 3: every root has one group per metapath.
  EXPECT_EQ(hdg.level(2).num_nodes(), 6);
  EXPECT_EQ(hdg.level(2).csr().degree(3), 4);  // (m0, M-A-M)
  EXPECT_EQ(hdg.level(3).block_arity, (std::vector<int64_t>{2}));
  // The executor plan: dense encoding, graph attention, dense fusion.
  nau::HybridExecutor ex;
  auto plan = ex.Plan(hdg, layer);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].strategy, nau::Strategy::kDense);
  EXPECT_EQ(plan[1].strategy, nau::Strategy::kGraph);
  EXPECT_EQ(plan[2].strategy, nau::Strategy::kDense);
  const std::string explain = nau::HybridExecutor::Explain(plan);
  EXPECT_NE(explain.find("rotate instance encoder over [instances, length, 4]"), std::string::npos)
      << explain;
  // A cap of 2 keeps at most two instances per (root, metapath).
  auto capped = BuildModel(t.Spec({{"max_instances", "2"}}));
  hdg::Hdg small = BuildHdg(capped->layer(0), spec, {0, 1, 2});
  EXPECT_EQ(small.level(1).type_offsets, (std::vector<int64_t>{0, 5, 11}));
}

TEST(Magnn, WholeLayerGradientsForEveryEncoder) {
  Tiny t;
  for (const char* encoder : {"mean", "linear", "rotate"}) {
    const nau::ModelSpec spec = t.Spec({{"encoder", encoder}});
    auto model = BuildModel(spec);
    nau::Layer& layer = model->layer(0);
    hdg::Hdg hdg = BuildHdg(layer, spec, {0, 1, 2});
    nau::HybridExecutor ex;
    auto plan = ex.Plan(hdg, layer);
    auto f = [&](const std::vector<ag::Var>& in) {
      nau::LayerContext ctx;
      return ex.Run(hdg, plan, layer, in[0], ctx);
    };
    SCOPED_TRACE(encoder);
    ExpectGradientsMatch(f, {RandomTensor({8, 4}, 21)}, 1e-3f, 3e-2f);
  }
}

TEST(Magnn, OptionErrorsNameTheOption) {
  Tiny t;
  auto error = [&](std::map<std::string, std::string> options, int hidden = 4) {
    nau::ModelSpec spec = t.Spec(std::move(options));
    spec.hidden = hidden;
    auto model = nau::ModelRegistry::Get().Find("magnn")->factory();
    absl::Status s = model->Build(spec);
    EXPECT_FALSE(s.ok());
    return std::string(s.message());
  };
  EXPECT_NE(error({{"encoder", "gru"}}).find("'encoder': unknown encoder 'gru' (choices: mean, "
                                             "linear, rotate)"),
            std::string::npos);
  EXPECT_NE(error({{"metapaths", "M-X-M"}})
                .find("model option 'metapaths': metapath 'M-X-M': 'X' names no node type"),
            std::string::npos);
  EXPECT_NE(error({{"metapaths", "D-M-D"}})
                .find("none of D-M-D starts at the target type 'movie'"),
            std::string::npos);
  EXPECT_NE(error({{"max_instances", "-1"}}).find("'max_instances'"), std::string::npos);
  EXPECT_NE(error({{"max_instances", "many"}}).find("'max_instances' expects an integer"),
            std::string::npos);
  EXPECT_NE(error({}, 5).find("even hidden width"), std::string::npos);
}

TEST(Magnn, TwoLayersRunOnEveryNodeTypeThenTheTarget) {
  Tiny t;
  const nau::ModelSpec spec = t.Spec({}, 2);
  auto model = BuildModel(spec);
  EXPECT_EQ(model->layer(0).Schema().num_types(), 6);  // all of "auto"
  EXPECT_EQ(model->layer(1).Schema().num_types(), 2);  // M-D-M, M-A-M
  nau::LayerContext ctx;
  ag::Var h = model->Input(ctx, spec);
  EXPECT_EQ(h.value().shape(), (Shape{8, 4}));
  nau::HybridExecutor ex;
  hdg::Hdg all = BuildHdg(model->layer(0), spec, {0, 1, 2, 3, 4, 5, 6, 7});
  h = ex.Run(all, ex.Plan(all, model->layer(0)), model->layer(0), h, ctx);
  EXPECT_EQ(h.value().shape(), (Shape{8, 4}));
  // The hidden layer fuses each root type's own metapaths: check its gradient too.
  ExpectGradientsMatch(
      [&](const std::vector<ag::Var>& in) {
        nau::LayerContext c;
        return ex.Run(all, ex.Plan(all, model->layer(0)), model->layer(0), in[0], c);
      },
      {RandomTensor({8, 4}, 22)}, 1e-3f, 3e-2f);
  hdg::Hdg movies = BuildHdg(model->layer(1), spec, {0, 1, 2});
  h = ex.Run(movies, ex.Plan(movies, model->layer(1)), model->layer(1), h, ctx);
  EXPECT_EQ(h.value().shape(), (Shape{3, 2}));
  for (float v : h.value().ToVector<float>()) EXPECT_TRUE(std::isfinite(v));
}

// --- accuracy on IMDB ------------------------------------------------------------------------------

TEST(Magnn, ImdbMovieGenreMacroF1) {
  flexgraph::RunConfig o;
  o.mutable_model()->set_name("magnn");
  o.mutable_dataset()->set_path(std::string(FG_SHARED_DATA_DIR) + "/imdb");
  o.mutable_dataset()->set_split("magnn");
  o.mutable_output()->set_quiet(true);
  // MAGNN's setup (2 layers, RotatE, 8 heads); seed 1 peaks on validation at epoch 8 of its
  // early-stopped run, so 10 epochs select the same model in a fraction of the time.
  o.mutable_train()->set_seed(1);
  o.mutable_train()->set_epochs(10);
  o.mutable_train()->set_patience(0);
  auto trainer = runtime::Trainer::Create(o);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  auto r = (*trainer)->Run();
  ASSERT_TRUE(r.ok()) << r.status();
  // Logistic regression on movie features alone reaches 0.50, with mean-aggregated M-D-M and
  // M-A-M neighbour features 0.56.
  EXPECT_GE(r->test_macro_f1, 0.58) << "micro-F1 " << r->test_micro_f1;
  EXPECT_GT(r->test_micro_f1, r->test_macro_f1 - 0.05);
}

}  // namespace
}  // namespace fg::udf::magnn
