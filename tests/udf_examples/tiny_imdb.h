// Test helper: a hand-drawn heterogeneous graph shaped like IMDB.
//
//   movies m0 m1 m2, directors d0 d1, actors a0 a1 a2
//
//        d0          d1            directed_by: m0 -> d0, m1 -> d0, m2 -> d1
//       /  \          |            starring:    m0 -> a0, m0 -> a1, m1 -> a1,
//     m0    m1       m2                         m2 -> a1, m2 -> a2
//     | \    |      /  |
//    a0   `--a1----'   a2
//
// Global ids (VertexSpace order movie, director, actor): m0..m2 = 0..2, d0, d1 = 3, 4,
// a0..a2 = 5..7. Features: 4 per movie, 3 per director, none for actors (learned embeddings).
// Tiny, BuildModel and BuildHdg build registered heterogeneous models (MAGNN, HAN) on it.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "flexgraph/base/rng.h"
#include "flexgraph/graph/builder.h"
#include "flexgraph/graph/dataset.h"
#include "hdg/builder.h"
#include "nau/model.h"

namespace fg::testing {

inline graph::Relation TinyRelation(const std::string& src, const std::string& name,
                                    const std::string& dst, int64_t ns, int64_t nd,
                                    std::vector<int64_t> s, std::vector<int64_t> d) {
  auto r = graph::BuildRelation(src, name, dst, ns, nd, s.data(), d.data(),
                                static_cast<int64_t>(s.size()), nullptr, Tensor(), {});
  EXPECT_TRUE(r.ok()) << r.status();
  return std::move(r).value();
}

inline graph::Dataset TinyImdb() {
  graph::Dataset ds;
  ds.name = "tiny-imdb";
  ds.graph.node_types = {"movie", "director", "actor"};
  ds.graph.num_nodes = {3, 2, 3};
  ds.graph.relations.push_back(
      TinyRelation("movie", "directed_by", "director", 3, 2, {0, 1, 2}, {0, 0, 1}));
  ds.graph.relations.push_back(
      TinyRelation("movie", "starring", "actor", 3, 3, {0, 0, 1, 2, 2}, {0, 1, 1, 1, 2}));
  RandomStream rng(5, 1);
  auto random = [&](int64_t n, int64_t f) {
    Tensor t = Tensor::Empty({n, f});
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = rng.Uniform();
    return t;
  };
  ds.features["movie"] = random(3, 4);
  ds.features["director"] = random(2, 3);
  ds.labels["movie"] = Tensor::FromVector(std::vector<int64_t>{0, 1, 0});
  ds.num_classes["movie"] = 2;
  ds.splits["movie"].train = Tensor::FromVector(std::vector<int64_t>{0, 1});
  ds.splits["movie"].test = Tensor::FromVector(std::vector<int64_t>{2});
  return ds;
}

// --- registered heterogeneous models on it ---------------------------------------------------

struct Tiny {
  graph::Dataset ds = testing::TinyImdb();
  nau::VertexSpace space{ds.graph};
  // A spec for the registered model `model` (its declared options, these set).
  nau::ModelSpec Spec(std::map<std::string, std::string> options, int layers = 1,
                      const std::string& model = "magnn") const {
    nau::ModelSpec spec;
    spec.dataset = &ds;
    spec.vertices = &space;
    spec.target_type = "movie";
    spec.num_classes = 2;
    spec.hidden = 4;
    spec.layers = layers;
    spec.dropout = 0.0f;
    spec.heads = 2;
    spec.seed = 3;
    spec.options = nau::OptionValues(nau::ModelRegistry::Get().Find(model)->options, std::move(options));
    return spec;
  }
};

inline std::unique_ptr<nau::Model> BuildModel(const nau::ModelSpec& spec,
                                              const std::string& name = "magnn") {
  const nau::ModelInfo* info = nau::ModelRegistry::Get().Find(name);
  EXPECT_NE(info, nullptr);
  auto model = info->factory();
  absl::Status s = model->Build(spec);
  EXPECT_TRUE(s.ok()) << s;
  return model;
}

inline hdg::Hdg BuildHdg(const nau::Layer& layer, const nau::ModelSpec& spec, std::vector<int32_t> roots) {
  nau::SelectContext ctx(spec.dataset, spec.vertices, spec.seed, 0, 0);
  auto h = hdg::HdgBuilder(layer.Schema(), spec.vertices->size())
               .Build(roots, [&](int32_t r, hdg::NeighborWriter& out) {
                 layer.SelectNeighbors(ctx, r, out);
               });
  EXPECT_TRUE(h.ok()) << h.status();
  return std::move(h).value();
}

}  // namespace fg::testing
