// The partitioner balances what training computes: for every registered model, each layer's HDG
// in BuildWorkload equals, level by level (roots, offsets, children, weights), the HDG that
// runtime::Trainer builds on the same dataset, model, options and seed (both written by
// runtime::ExportHdgs and compared file by file), and on hand-drawn graphs the HDG built directly from the layer's
// NeighborSelection UDF.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "flexgraph/graph/io/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hdg/builder.h"
#include "nau/model.h"
#include "partition/workload.h"
#include "tests/partition/resolved.h"
#include "runtime/distributed/hdg_export.h"
#include "runtime/train/trainer.h"
#include "tests/udf_examples/tiny_imdb.h"

namespace fg::partition {
namespace {

const std::string kData = FG_SHARED_DATA_DIR;

// The files of `want` (what Trainer::ExportHdgs wrote) and `got` are the same, byte for byte.
void ExpectSameFiles(const std::string& want, const std::string& got) {
  std::vector<std::string> names;
  for (const auto& f : std::filesystem::directory_iterator(want)) names.push_back(f.path().filename().string());
  size_t count = 0;
  for ([[maybe_unused]] const auto& f : std::filesystem::directory_iterator(got)) ++count;
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(count, names.size()) << got << " has other files than " << want;
  for (const std::string& name : names) {
    auto a = graph::io::ReadFileToString(want + "/" + name), b = graph::io::ReadFileToString(got + "/" + name);
    ASSERT_TRUE(a.ok() && b.ok()) << name;
    EXPECT_TRUE(*a == *b) << name << " differs";
  }
}

struct Case {
  std::string model, dataset;
  uint64_t seed;
  std::map<std::string, std::string> options;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " on " << c.dataset; }

class WorkloadMatchesTrainerTest : public ::testing::TestWithParam<Case> {};

TEST_P(WorkloadMatchesTrainerTest, EveryLayerHasTheTrainersHdg) {
  const Case& c = GetParam();
  flexgraph::RunConfig config;
  config.mutable_model()->set_name(c.model);
  for (const auto& [k, v] : c.options) (*config.mutable_model()->mutable_options())[k] = v;
  config.mutable_dataset()->set_path(c.dataset);
  config.mutable_train()->set_seed(c.seed);
  config.mutable_output()->set_quiet(true);
  auto trainer = runtime::Trainer::Create(config);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  const std::string dir = ::testing::TempDir() + "/fg_workload_" + c.model + "_" +
                          std::to_string(getpid());
  ASSERT_TRUE((*trainer)->ExportHdgs(dir).ok());

  auto ds = graph::LoadDataset(c.dataset, {});
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_TRUE(ds->graph.ToInt32Indices().ok());
  // The same resolved configuration as the trainer's.
  auto w = BuildWorkload(*ds, runtime::WorkloadOptionsFrom((*trainer)->config()));
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(static_cast<int>(w->layers.size()), (*trainer)->model().num_layers());
  std::vector<const hdg::Hdg*> layers;
  for (size_t i = 0; i < w->layers.size(); ++i) {
    const LayerWorkload& lw = w->layers[i];
    SCOPED_TRACE(c.model + " layer " + std::to_string(i));
    ASSERT_NE(lw.hdg, nullptr);
    ASSERT_EQ(lw.roots.size(), static_cast<size_t>(lw.hdg->num_roots()));
    EXPECT_TRUE(std::equal(lw.roots.begin(), lw.roots.end(), lw.hdg->roots().i32()));
    EXPECT_EQ(lw.entries_per_level.front(), lw.hdg->level(1).csr().nnz());
    layers.push_back(lw.hdg.get());
  }
  // The workload's HDGs written the trainer's way (one process: every vertex is its own key).
  std::vector<int64_t> every(layers[0]->num_vertices());
  for (size_t v = 0; v < every.size(); ++v) every[v] = static_cast<int64_t>(v);
  const Tensor ids = Tensor::FromVector(every);
  ASSERT_TRUE(runtime::ExportHdgs(nullptr, layers, ids, ids, dir + "/workload").ok());
  std::filesystem::remove_all(dir + "/trainer");
  std::filesystem::create_directories(dir + "/trainer");
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.is_regular_file()) std::filesystem::rename(f.path(), dir + "/trainer/" + f.path().filename().string());
  }
  ExpectSameFiles(dir + "/trainer", dir + "/workload");
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    RegisteredModels, WorkloadMatchesTrainerTest,
    ::testing::Values(Case{"gcn", kData + "/cora", 0, {}}, Case{"sage", kData + "/cora", 0, {}},
                      Case{"gin", kData + "/cora", 0, {}},
                      // Deterministic walks: both layers share the first layer's HDG.
                      Case{"pinsage", kData + "/cora", 3, {}},
                      // Sampled walks: every layer draws its own.
                      Case{"pinsage", "sbm:nodes=300,classes=3,features=8", 4,
                           {{"reselect_every", "2"}, {"top_k", "5"}}},
                      // Capped instances are sampled per (root, metapath).
                      Case{"magnn", kData + "/imdb", 5, {{"max_instances", "16"}}},
                      // Every neighbour along every relation-direction.
                      Case{"rgcn", kData + "/imdb", 0, {}}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return info.param.model + "_" + std::to_string(info.index);
    });

// The HDGs of layer `index` over `roots`, built directly: the layer's UDF for every root, with
// randomness keyed as training keys it at epoch 0.
hdg::Hdg DirectHdg(const nau::Layer& layer, int index, const nau::ModelSpec& spec,
                   const std::vector<int32_t>& roots) {
  const nau::SelectContext ctx(spec.dataset, spec.vertices, spec.seed, 0, index);
  auto h = hdg::HdgBuilder(layer.Schema(), spec.vertices->size())
               .Build(roots, [&](int32_t root, hdg::NeighborWriter& out) {
                 layer.SelectNeighbors(ctx, root, out);
               });
  EXPECT_TRUE(h.ok()) << h.status();
  return *std::move(h);
}

// A triangle 0-1-2 with a tail 2-3 and an isolated vertex 4; one node type.
graph::Dataset TriangleWithTail() {
  graph::Dataset ds;
  ds.name = "triangle";
  ds.graph.node_types = {"node"};
  ds.graph.num_nodes = {5};
  ds.graph.relations.push_back(fg::testing::TinyRelation("node", "edge", "node", 5, 5,
                                                         {0, 1, 0, 2, 1, 2, 2, 3},
                                                         {1, 0, 2, 0, 2, 1, 3, 2}));
  ds.features["node"] = Tensor::Full({5, 6}, 1.0f);
  ds.labels["node"] = Tensor::Zeros({5}, DType::kInt64);
  ds.num_classes["node"] = 2;
  return ds;
}

void ExpectWorkloadIsTheDirectSelection(const graph::Dataset& ds, const std::string& model,
                                        const std::map<std::string, std::string>& options) {
  SCOPED_TRACE(model);
  constexpr uint64_t kSeed = 11;
  auto w = BuildWorkload(ds, Resolved(model, options, 0, kSeed));
  ASSERT_TRUE(w.ok()) << w.status();
  const nau::ModelInfo* info = nau::ModelRegistry::Get().Find(model);
  ASSERT_NE(info, nullptr);
  const nau::VertexSpace space(ds.graph);
  nau::ModelSpec spec;
  spec.dataset = &ds;
  spec.vertices = &space;
  spec.target_type = ds.LabeledType();
  spec.num_classes = ds.num_classes.at(spec.target_type);
  spec.hidden = 8;
  spec.seed = kSeed;
  spec.options = nau::OptionValues(info->options, options);
  std::unique_ptr<nau::Model> m = info->factory();
  ASSERT_TRUE(m->Build(spec).ok());
  ASSERT_EQ(static_cast<int>(w->layers.size()), m->num_layers());
  for (int i = 0; i < m->num_layers(); ++i) {
    const std::vector<int32_t> roots = m->Roots(i, spec);
    const hdg::Hdg want = DirectHdg(m->layer(i), i, spec, roots);
    const hdg::Hdg& got = *w->layers[i].hdg;
    EXPECT_EQ(w->layers[i].roots, roots);
    ASSERT_EQ(got.num_levels(), want.num_levels());
    for (int k = 1; k <= want.num_levels(); ++k) {
      const Csr &a = got.level(k).csr(), &b = want.level(k).csr();
      ASSERT_EQ(a.num_rows, b.num_rows) << "layer " << i << " level " << k;
      ASSERT_EQ(a.nnz(), b.nnz()) << "layer " << i << " level " << k;
      EXPECT_TRUE(std::equal(a.row_ptr(), a.row_ptr() + a.num_rows + 1, b.row_ptr()));
      EXPECT_TRUE(std::equal(a.col(), a.col() + a.nnz(), b.col()));
      const Tensor &wa = got.level(k).weights, &wb = want.level(k).weights;
      ASSERT_EQ(wa.defined(), wb.defined());
      if (wa.defined()) {
        EXPECT_TRUE(std::equal(wa.f32(), wa.f32() + wa.numel(), wb.f32()));
      }
    }
  }
}

TEST(WorkloadTest, DirectNeighborModelsSelectAsTheirLayers) {
  const graph::Dataset ds = TriangleWithTail();
  for (const char* model : {"gcn", "sage", "gin"}) ExpectWorkloadIsTheDirectSelection(ds, model, {});
}

TEST(WorkloadTest, MagnnSelectsAsItsLayersOnTinyImdb) {
  // At most 2 instances per (root, metapath): m1's M-A-M instances (3) are sampled.
  ExpectWorkloadIsTheDirectSelection(fg::testing::TinyImdb(), "magnn", {{"max_instances", "2"}});
}

// Hand-checked widths from Layer::Cost, GCN on the triangle (6 features, 16 hidden, 2 classes):
// layer 0 aggregates its 6 input floats and transforms per root; layer 1 projects 16 -> 2 first.
TEST(WorkloadTest, WidthsAndFlopsComeFromTheLayers) {
  auto w = BuildWorkload(TriangleWithTail(), Resolved("gcn"));
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->layers.size(), 2u);
  EXPECT_EQ(w->layers[0].message_width, 6);
  EXPECT_EQ(w->layers[1].message_width, 2);
  // Vertex 4 (isolated, self loop only): layer 0 root GEMM 2*6*16; layer 1 projection 2*16*2 of
  // its input row and no GEMM at the root.
  EXPECT_DOUBLE_EQ(w->gemm_flops[4], 2.0 * 6 * 16 + 2.0 * 16 * 2);
  // GIN: the MLP 6 -> 16 -> 16 and 16 -> 16 -> 2 per root, aggregating input rows.
  auto gin = BuildWorkload(TriangleWithTail(), Resolved("gin"));
  ASSERT_TRUE(gin.ok()) << gin.status();
  EXPECT_EQ(gin->layers[1].message_width, 16);
  EXPECT_DOUBLE_EQ(gin->gemm_flops[4], 2.0 * (6 * 16 + 16 * 16) + 2.0 * (16 * 16 + 16 * 2));
}

}  // namespace
}  // namespace fg::partition
