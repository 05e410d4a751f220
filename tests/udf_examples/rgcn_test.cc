// R-GCN: the relation-directions of a typed graph, the relation mix (hand computation and finite
// differences), the HDG its NeighborSelection builds on a hand-drawn graph, the whole layer against
// a reference with explicit per-relation weights W_r = Σ_b a_rb V_b (and its gradient), option
// errors, and DBLP accuracy.
#include "udf_examples/rgcn/rgcn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "hdg/builder.h"
#include "nau/executor.h"
#include "runtime/train/trainer.h"
#include "tests/core/gradcheck.h"
#include "tests/udf_examples/tiny_imdb.h"

namespace fg::udf::rgcn {
namespace {

using testing::ExpectGradientsMatch;
using testing::RandomTensor;
using testing::Rows;

// TinyImdb (tests/udf_examples/tiny_imdb.h): movies m0..m2 = 0..2, directors d0, d1 = 3, 4,
// actors a0..a2 = 5..7; directed_by m0 -> d0, m1 -> d0, m2 -> d1; starring m0 -> a0, m0 -> a1,
// m1 -> a1, m2 -> a1, m2 -> a2. Its relation-directions, and each root's neighbours along them:
//   0 director <-directed_by- movie   d0: m0 m1   d1: m2
//   1 movie -directed_by-> director   m0: d0      m1: d0       m2: d1
//   2 actor <-starring- movie         a0: m0      a1: m0 m1 m2  a2: m2
//   3 movie -starring-> actor         m0: a0 a1   m1: a1       m2: a1 a2
const std::vector<std::map<int, std::vector<int>>> kTinyNeighbours = {
    {{3, {0, 1}}, {4, {2}}},
    {{0, {3}}, {1, {3}}, {2, {4}}},
    {{5, {0}}, {6, {0, 1, 2}}, {7, {2}}},
    {{0, {5, 6}}, {1, {6}}, {2, {6, 7}}},
};

TEST(Rgcn, RelationDirectionsCoverEveryRelationBothWays) {
  const graph::Dataset ds = testing::TinyImdb();
  const std::vector<nau::Metapath> r = RelationDirections(ds.graph);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].name, "director <-directed_by- movie");
  EXPECT_EQ(r[1].name, "movie -directed_by-> director");
  EXPECT_EQ(r[2].name, "actor <-starring- movie");
  EXPECT_EQ(r[3].name, "movie -starring-> actor");
  EXPECT_EQ(r[0].node_types, (std::vector<int>{1, 0}));
  EXPECT_FALSE(r[0].steps[0].forward);
  EXPECT_EQ(r[3].node_types, (std::vector<int>{0, 2}));
  EXPECT_TRUE(r[3].steps[0].forward);
  EXPECT_EQ(r[3].steps[0].relation, 1);
  EXPECT_EQ(EffectiveBases(2, 4), 2);
  EXPECT_EQ(EffectiveBases(0, 4), 4);
  EXPECT_EQ(EffectiveBases(9, 4), 4);
}

TEST(Rgcn, MixRelationsMatchesHandComputation) {
  // R = 2 relations, n = 2 roots, out = 2, B = 2 bases; columns (o, b) = o * B + b.
  //   relation 0: root 0 [1 2 | 3 4], root 1 [0 1 | 1 0]
  //   relation 1: root 0 [5 6 | 7 8], root 1 [0 0 | 0 0]
  //   a_0 = (1, -1), a_1 = (0.5, 2)
  const ag::Var means(Rows({1, 2, 3, 4, 0, 1, 1, 0, 5, 6, 7, 8, 0, 0, 0, 0}, 4));
  const ag::Var a(Rows({1, -1, 0.5f, 2}, 2));
  const std::vector<float> got = MixRelations(means, a, 2).value().ToVector<float>();
  // root 0, o 0: (1 - 2) + (2.5 + 12) = 13.5;  o 1: (3 - 4) + (3.5 + 16) = 18.5
  // root 1, o 0: (0 - 1) + 0 = -1;             o 1: (1 - 0) + 0 = 1
  EXPECT_EQ(got, (std::vector<float>{13.5f, 18.5f, -1, 1}));
  ExpectGradientsMatch([](const std::vector<ag::Var>& in) { return MixRelations(in[0], in[1], 3); },
                       {RandomTensor({3 * 4, 3 * 2}, 1), RandomTensor({3, 2}, 2)}, 1e-3f, 1e-2f);
}

// --- the registered model on the hand-drawn graph -----------------------------------------------

// R-GCN on the hand-drawn graph: hidden 3, two layers unless told.
struct Tiny : testing::Tiny {
  nau::ModelSpec Spec(std::map<std::string, std::string> options, int layers = 2) const {
    nau::ModelSpec spec = testing::Tiny::Spec(std::move(options), layers, "rgcn");
    spec.hidden = 3;
    return spec;
  }
};

std::unique_ptr<nau::Model> BuildModel(const nau::ModelSpec& spec) {
  return testing::BuildModel(spec, "rgcn");
}
using testing::BuildHdg;

const std::vector<int32_t> kAll = {0, 1, 2, 3, 4, 5, 6, 7};

TEST(Rgcn, SelectionBuildsOneGroupPerRootAndRelationDirection) {
  Tiny t;
  const nau::ModelSpec spec = t.Spec({});
  auto model = BuildModel(spec);
  const nau::Layer& layer = model->layer(0);
  ASSERT_NE(layer.Instances(), nullptr);
  EXPECT_EQ(layer.Instances()->by_type, (std::vector<std::vector<int>>{{1, 3}, {0}, {2}}));
  hdg::Hdg hdg = BuildHdg(layer, spec, kAll);
  ASSERT_EQ(hdg.num_levels(), 3);
  // Level 1: (root, neighbour) pairs blocked by relation-direction, roots in order.
  EXPECT_EQ(hdg.level(1).type_offsets, (std::vector<int64_t>{0, 3, 6, 11, 16}));
  const Csr& pairs = hdg.level(1).csr();
  std::vector<int32_t> first(pairs.col(), pairs.col() + 12);
  EXPECT_EQ(first, (std::vector<int32_t>{3, 0, 3, 1, 4, 2, 0, 3, 1, 3, 2, 4}));
  // Level 2: group (relation r, root i) at r * 8 + i holds |N_i^r| pairs.
  for (int r = 0; r < 4; ++r) {
    for (int32_t i : kAll) {
      auto it = kTinyNeighbours[r].find(i);
      const int64_t want = it == kTinyNeighbours[r].end() ? 0 : it->second.size();
      EXPECT_EQ(hdg.level(2).csr().degree(r * 8 + i), want) << "relation " << r << " root " << i;
    }
  }
  EXPECT_EQ(hdg.level(3).block_arity, (std::vector<int64_t>{4}));
  // The last layer: movies and the two relation-directions into them.
  EXPECT_EQ(model->layer(1).Schema().num_types(), 2);
  nau::HybridExecutor ex;
  const std::string explain = nau::HybridExecutor::Explain(ex.Plan(hdg, layer));
  EXPECT_NE(explain.find("level 2 (mean): sparse"), std::string::npos) << explain;
  EXPECT_NE(explain.find("relation mix of 4 relation-directions over 2 bases"), std::string::npos)
      << explain;
}

// The layer's parameter `name` as a tensor.
Tensor Param(const nau::Layer& layer, const std::string& name) {
  for (const nn::NamedParameter& p : layer.parameters()) {
    if (p.name == name) return p.var.value();
  }
  ADD_FAILURE() << "no parameter " << name;
  return Tensor();
}

// h_i' = ReLU(h_i W_0 + b + Σ_r mean_{j ∈ N_i^r} h_j W_r), with explicit W_r from the parameters:
// W_r = Σ_b a_rb V_b (a = identity for full weights).
std::vector<float> Reference(const nau::Layer& layer, const Tensor& h, int64_t bases) {
  const Tensor v = Param(layer, "bases"), w0 = Param(layer, "self.weight"),
               b = Param(layer, "self.bias");
  const int64_t in = h.dim(1), out = w0.dim(1), r = 4;
  std::vector<float> a(r * bases, 0.0f);
  if (bases < r) {
    a = Param(layer, "coefficients").ToVector<float>();
  } else {
    for (int64_t k = 0; k < r; ++k) a[k * bases + k] = 1.0f;
  }
  auto weight = [&](int64_t rel, int64_t k, int64_t o) {  // W_rel[k, o]
    double s = 0;
    for (int64_t q = 0; q < bases; ++q)
      s += a[rel * bases + q] * v.f32()[k * out * bases + o * bases + q];
    return s;
  };
  std::vector<float> y;
  for (int32_t i : kAll) {
    for (int64_t o = 0; o < out; ++o) {
      double s = b.f32()[o];
      for (int64_t k = 0; k < in; ++k) s += h.f32()[i * in + k] * w0.f32()[k * out + o];
      for (int64_t rel = 0; rel < r; ++rel) {
        auto it = kTinyNeighbours[rel].find(i);
        if (it == kTinyNeighbours[rel].end()) continue;
        for (int j : it->second) {
          for (int64_t k = 0; k < in; ++k) {
            s += h.f32()[j * in + k] * weight(rel, k, o) / static_cast<double>(it->second.size());
          }
        }
      }
      y.push_back(static_cast<float>(std::max(0.0, s)));
    }
  }
  return y;
}

TEST(Rgcn, BasisMixEqualsExplicitPerRelationWeights) {
  Tiny t;
  // One basis shared by four relation-directions, two, and full per-relation weights.
  for (const auto& [bases, want_bases] :
       std::vector<std::pair<std::string, int64_t>>{{"1", 1}, {"2", 2}, {"0", 4}, {"7", 4}}) {
    SCOPED_TRACE("num_bases=" + bases);
    const nau::ModelSpec spec = t.Spec({{"num_bases", bases}});
    auto model = BuildModel(spec);
    nau::Layer& layer = model->layer(0);
    EXPECT_EQ(Param(layer, "bases").dim(1), 3 * want_bases);
    hdg::Hdg hdg = BuildHdg(layer, spec, kAll);
    nau::HybridExecutor ex;
    const Tensor h = RandomTensor({8, 3}, 31);
    nau::LayerContext ctx;
    const std::vector<float> got =
        ex.Run(hdg, ex.Plan(hdg, layer), layer, ag::Var(h), ctx).value().ToVector<float>();
    const std::vector<float> want = Reference(layer, h, want_bases);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-5) << k;
  }
}

TEST(Rgcn, WholeLayerGradients) {
  Tiny t;
  for (const char* bases : {"2", "0"}) {
    SCOPED_TRACE(bases);
    const nau::ModelSpec spec = t.Spec({{"num_bases", bases}});
    auto model = BuildModel(spec);
    for (int i : {0, 1}) {
      nau::Layer& layer = model->layer(i);
      hdg::Hdg hdg = BuildHdg(layer, spec, i == 0 ? kAll : std::vector<int32_t>{0, 1, 2});
      nau::HybridExecutor ex;
      auto plan = ex.Plan(hdg, layer);
      ExpectGradientsMatch(
          [&](const std::vector<ag::Var>& in) {
            nau::LayerContext ctx;
            return ex.Run(hdg, plan, layer, in[0], ctx);
          },
          {RandomTensor({8, 3}, 40 + i)}, 1e-3f, 2e-2f);
    }
  }
}

TEST(Rgcn, TwoLayersRunOnEveryNodeTypeThenTheTarget) {
  Tiny t;
  const nau::ModelSpec spec = t.Spec({{"featureless", "onehot"}});
  auto model = BuildModel(spec);
  nau::LayerContext ctx;
  ag::Var h = model->Input(ctx, spec);
  EXPECT_EQ(h.value().shape(), (Shape{8, 3}));
  nau::HybridExecutor ex;
  hdg::Hdg all = BuildHdg(model->layer(0), spec, kAll);
  h = ex.Run(all, ex.Plan(all, model->layer(0)), model->layer(0), h, ctx);
  EXPECT_EQ(h.value().shape(), (Shape{8, 3}));
  hdg::Hdg movies = BuildHdg(model->layer(1), spec, {0, 1, 2});
  h = ex.Run(movies, ex.Plan(movies, model->layer(1)), model->layer(1), h, ctx);
  EXPECT_EQ(h.value().shape(), (Shape{3, 2}));
  for (float v : h.value().ToVector<float>()) EXPECT_TRUE(std::isfinite(v));
  // The last layer has two relation-directions: num_bases=2 means full weights there.
  EXPECT_EQ(Param(model->layer(1), "bases").dim(1), 2 * 2);
}

TEST(Rgcn, OptionErrorsNameTheOption) {
  Tiny t;
  auto error = [&](std::map<std::string, std::string> options, std::string target = "movie") {
    nau::ModelSpec spec = t.Spec(std::move(options));
    spec.target_type = target;
    auto model = nau::ModelRegistry::Get().Find("rgcn")->factory();
    absl::Status s = model->Build(spec);
    EXPECT_FALSE(s.ok());
    return std::string(s.message());
  };
  EXPECT_NE(error({{"num_bases", "-1"}}).find("model option 'num_bases': must be 0"),
            std::string::npos);
  EXPECT_NE(error({{"num_bases", "few"}}).find("'num_bases' expects an integer"),
            std::string::npos);
  EXPECT_NE(error({{"featureless", "zeros"}})
                .find("model option 'featureless': unknown encoding 'zeros'"),
            std::string::npos);
  EXPECT_NE(error({}, "studio").find("target type 'studio' is not a node type"), std::string::npos);
  // A node type that no relation reaches cannot be classified.
  t.ds.graph.node_types.push_back("studio");
  t.ds.graph.num_nodes.push_back(2);
  t.space = nau::VertexSpace(t.ds.graph);
  EXPECT_NE(error({}, "studio").find("no relation joins the target type 'studio'"),
            std::string::npos);
}

// --- accuracy on DBLP
// ------------------------------------------------------------------------------

TEST(Rgcn, DblpAuthorAreaMacroF1) {
  flexgraph::RunConfig o;
  o.mutable_model()->set_name("rgcn");
  o.mutable_dataset()->set_path(std::string(FG_SHARED_DATA_DIR) + "/dblp");
  o.mutable_dataset()->set_split("heco20");
  o.mutable_output()->set_quiet(true);
  // The defaults; a few epochs already pass the features-only baseline by far.
  o.mutable_train()->set_seed(1);
  o.mutable_train()->set_epochs(6);
  o.mutable_train()->set_patience(0);
  auto trainer = runtime::Trainer::Create(o);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  auto r = (*trainer)->Run();
  ASSERT_TRUE(r.ok()) << r.status();
  // Softmax regression on author features alone reaches 0.697 Macro-F1 (the dataset's README).
  EXPECT_GE(r->test_macro_f1, 0.75) << "micro-F1 " << r->test_micro_f1;
}

}  // namespace
}  // namespace fg::udf::rgcn
