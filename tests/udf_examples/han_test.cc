// HAN (the MAGNN layers over metapath-based neighbours), the type-specific input projections with
// their featureless encodings (nau/typed_input.h), MAGNN's automatic metapath choice within a
// memory budget, and HAN's accuracy on DBLP.
#include <gtest/gtest.h>

#include <cmath>

#include "nau/executor.h"
#include "runtime/train/trainer.h"
#include "tests/core/gradcheck.h"
#include "tests/udf_examples/tiny_imdb.h"

namespace fg::udf {
namespace {

using testing::BuildHdg;
using testing::BuildModel;
using testing::ExpectGradientsMatch;
using testing::RandomTensor;
using testing::Tiny;

const Tensor* Parameter(const nau::Model& m, const std::string& name) {
  for (const auto& p : m.parameters()) {
    if (p.name == name) return &p.var.value();
  }
  return nullptr;
}

TEST(Han, SelectionWritesEachRootsNeighboursOncePerJoiningPathOrOnce) {
  Tiny t;
  const nau::ModelSpec spec = t.Spec({}, 1, "han");
  auto model = BuildModel(spec, "han");
  nau::Layer& layer = model->layer(0);
  EXPECT_EQ(layer.Schema().ToString(), "root -> {M-D-M: instances[1], M-A-M: instances[1]}");
  EXPECT_EQ(layer.Instances(), nullptr);  // not an instance selection the framework expands
  // M-D-M: m0 {m0, m1}, m1 {m0, m1}, m2 {m2}, one path each. M-A-M: m0 reaches m0 through a0 and
  // a1, m1 and m2 through a1; m1 each movie through a1; m2 m2 through a1 and a2, m0 and m1
  // through a1. By default a neighbour appears once per joining path.
  hdg::Hdg hdg = BuildHdg(layer, spec, {0, 1, 2});
  EXPECT_EQ(hdg.level(1).type_offsets, (std::vector<int64_t>{0, 5, 16}));
  const Csr& paths = hdg.level(1).csr();
  EXPECT_EQ(std::vector<int32_t>(paths.col(), paths.col() + 16),
            (std::vector<int32_t>{0, 1, 0, 1, 2, 0, 0, 1, 2, 0, 1, 2, 0, 1, 2, 2}));
  EXPECT_EQ(hdg.level(2).csr().degree(0), 2);  // (m0, M-D-M)
  EXPECT_EQ(hdg.level(2).csr().degree(3), 4);  // (m0, M-A-M)
  // weighting=distinct: each distinct neighbour once (HAN's paper).
  auto distinct = BuildModel(t.Spec({{"weighting", "distinct"}}, 1, "han"), "han");
  hdg::Hdg once = BuildHdg(distinct->layer(0), spec, {0, 1, 2});
  EXPECT_EQ(once.level(1).type_offsets, (std::vector<int64_t>{0, 5, 14}));
  const Csr& nbrs = once.level(1).csr();
  EXPECT_EQ(std::vector<int32_t>(nbrs.col(), nbrs.col() + 14),
            (std::vector<int32_t>{0, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
  // A cap of 1 keeps one neighbour per (root, metapath) either way.
  for (const char* w : {"paths", "distinct"}) {
    auto capped = BuildModel(t.Spec({{"max_neighbors", "1"}, {"weighting", w}}, 1, "han"), "han");
    EXPECT_EQ(BuildHdg(capped->layer(0), spec, {0, 1, 2}).level(1).type_offsets,
              (std::vector<int64_t>{0, 3, 6}))
        << w;
  }
}

TEST(Han, LayerGradientsAndOnlyTheTypesItReads) {
  Tiny t;
  const nau::ModelSpec spec = t.Spec({}, 1, "han");
  auto model = BuildModel(spec, "han");
  // Movie-to-movie metapaths read only movies: other types are zero rows without parameters.
  EXPECT_NE(Parameter(*model, "project.movie.weight"), nullptr);
  EXPECT_EQ(Parameter(*model, "project.director.weight"), nullptr);
  EXPECT_EQ(Parameter(*model, "embed.actor.table"), nullptr);
  nau::LayerContext ctx;
  const std::vector<float> in = model->Input(ctx, spec).value().ToVector<float>();
  ASSERT_EQ(in.size(), 8u * 4);
  for (size_t i = 3 * 4; i < in.size(); ++i) EXPECT_EQ(in[i], 0.0f) << i;
  hdg::Hdg hdg = BuildHdg(model->layer(0), spec, {0, 1, 2});
  nau::HybridExecutor ex;
  EXPECT_NE(nau::HybridExecutor::Explain(ex.Plan(hdg, model->layer(0))).find("metapath-based neighbours"),
            std::string::npos);
  ExpectGradientsMatch(
      [&](const std::vector<ag::Var>& x) {
        nau::LayerContext c;
        return ex.Run(hdg, ex.Plan(hdg, model->layer(0)), model->layer(0), x[0], c);
      },
      {RandomTensor({8, 4}, 31)}, 1e-3f, 3e-2f);
}

TEST(Han, RefusesOnePartOfSeveralAndNamesItsOptions) {
  Tiny t;
  t.ds.part.emplace();
  t.ds.part->bounds = {{0, 2, 3}, {0, 1, 2}, {0, 2, 3}};
  t.ds.part->relation_edges = {3, 5};
  const nau::ModelSpec spec = t.Spec({}, 1, "han");
  auto model = nau::ModelRegistry::Get().Find("han")->factory();
  absl::Status s = model->Build(spec);
  EXPECT_NE(s.message().find("train on the unpartitioned dataset"), std::string::npos) << s;
  Tiny whole;
  s = nau::ModelRegistry::Get().Find("han")->factory()->Build(whole.Spec({{"max_neighbors", "-1"}}, 1, "han"));
  EXPECT_NE(s.message().find("model option 'max_neighbors'"), std::string::npos) << s;
  s = nau::ModelRegistry::Get().Find("han")->factory()->Build(whole.Spec({{"weighting", "edges"}}, 1, "han"));
  EXPECT_NE(s.message().find("model option 'weighting': unknown weighting 'edges'"), std::string::npos) << s;
}

TEST(TypedInput, FeaturelessTypesTakeAnEmbeddingOrAOneHotProjection) {
  Tiny t;
  // Actors have no features.
  auto embedded = BuildModel(t.Spec({}), "magnn");
  const Tensor* table = Parameter(*embedded, "embed.actor.table");
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->shape(), (Shape{3, 4}));
  nau::LayerContext ctx;
  std::vector<float> h = embedded->Input(ctx, t.Spec({})).value().ToVector<float>();
  const std::vector<float> rows = table->ToVector<float>();
  EXPECT_EQ(std::vector<float>(h.begin() + 5 * 4, h.end()), rows);

  const nau::ModelSpec onehot_spec = t.Spec({{"featureless", "onehot"}});
  auto onehot = BuildModel(onehot_spec, "magnn");
  const Tensor* w = Parameter(*onehot, "project.actor.weight");
  const Tensor* b = Parameter(*onehot, "project.actor.bias");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(Parameter(*onehot, "embed.actor.table"), nullptr);
  EXPECT_EQ(w->shape(), (Shape{3, 4}));
  // e_v W + b: row v of W plus the bias (zero at initialisation; set it to see it added).
  b->f32()[1] = 0.5f;
  h = onehot->Input(ctx, onehot_spec).value().ToVector<float>();
  for (int v = 0; v < 3; ++v) {
    for (int c = 0; c < 4; ++c) {
      EXPECT_FLOAT_EQ(h[(5 + v) * 4 + c], w->f32()[v * 4 + c] + (c == 1 ? 0.5f : 0.0f));
    }
  }
  absl::Status s = nau::ModelRegistry::Get().Find("magnn")->factory()->Build(t.Spec({{"featureless", "zeros"}}));
  EXPECT_NE(s.message().find("model option 'featureless'"), std::string::npos) << s;
}

flexgraph::RunConfig Options(const std::string& model, const std::string& dataset,
                             const std::string& split) {
  flexgraph::RunConfig o;
  o.mutable_model()->set_name(model);
  o.mutable_dataset()->set_path(std::string(FG_SHARED_DATA_DIR) + "/" + dataset);
  o.mutable_dataset()->set_split(split);
  o.mutable_output()->set_quiet(true);
  return o;
}

TEST(Magnn, TheAutomaticChoiceFitsTheMemoryBudget) {
  // IMDB's six metapaths over two layers take ~1 GB: with 200 MB, one layer of the movies'
  // metapaths remains, and the choice says so.
  flexgraph::RunConfig o = Options("magnn", "imdb", "magnn");
  (*o.mutable_model()->mutable_options())["memory_budget_mb"] = "200";
  o.mutable_train()->set_epochs(1);
  auto trainer = runtime::Trainer::Create(o);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  const std::string explain = (*trainer)->model().Explain();
  EXPECT_EQ((*trainer)->model().num_layers(), 1) << explain;
  EXPECT_NE(explain.find("2 layers do not fit"), std::string::npos) << explain;
  EXPECT_NE(explain.find("M-A-M"), std::string::npos) << explain;
  EXPECT_EQ(explain.find("D-M-D"), std::string::npos) << explain;  // not a one-layer candidate
  EXPECT_EQ((*trainer)->model().layer(0).Schema().num_types(), 2);
  // The linear encoder keeps heads x hidden floats per instance where rotate keeps hidden: within
  // the same budget only the smaller metapath remains.
  (*o.mutable_model()->mutable_options())["encoder"] = "linear";
  trainer = runtime::Trainer::Create(o);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  const std::string linear = (*trainer)->model().Explain();
  EXPECT_EQ((*trainer)->model().layer(0).Schema().num_types(), 1) << linear;
  EXPECT_NE(linear.find("M-A-M"), std::string::npos) << linear;
  EXPECT_NE(linear.find("dropped"), std::string::npos) << linear;
  o.mutable_model()->mutable_options()->erase("encoder");
  // Named metapaths are kept whatever they take.
  (*o.mutable_model()->mutable_options())["memory_budget_mb"] = "1";
  (*o.mutable_model()->mutable_options())["metapaths"] = "M-D-M;M-A-M;D-M-D";
  trainer = runtime::Trainer::Create(o);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  EXPECT_EQ((*trainer)->model().num_layers(), 2);
  EXPECT_NE((*trainer)->model().Explain().find("exceed memory_budget_mb"), std::string::npos);
}

TEST(Han, DblpAuthorsAboveTheFeaturesOnlyBaseline) {
  // Softmax regression on author features alone reaches Macro-F1 0.697 on heco20 (the dataset's
  // README); HAN's default metapaths A-P-A, A-P-C-P-A, A-P-T-P-A carry the conferences, and with
  // path-weighted neighbours seeds 1 and 2 reach 0.89 and 0.91 by epoch 20 (0.93 when trained to
  // the end; at 12 epochs the result still swings by 0.1 with the seed).
  flexgraph::RunConfig o = Options("han", "dblp", "heco20");
  o.mutable_train()->set_seed(1);
  o.mutable_train()->set_epochs(20);
  o.mutable_train()->set_patience(0);
  auto trainer = runtime::Trainer::Create(o);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  auto r = (*trainer)->Run();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->test_macro_f1, 0.85) << "micro-F1 " << r->test_micro_f1;
}

}  // namespace
}  // namespace fg::udf
