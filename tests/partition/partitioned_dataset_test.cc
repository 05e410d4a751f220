// Partitioned datasets (partition/partitioned_dataset.h): every part, mapped back through its
// source ids, holds exactly the source dataset's rows, split members and in-edges (in the source
// order), for a homogeneous and a heterogeneous dataset, and a link-prediction dataset's parts its
// training graph and split; damaged or mismatched files are refused with errors naming them.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/io/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "partition/partitioned_dataset.h"

namespace fg::partition {
namespace {

using ::testing::HasSubstr;

const std::string kData = FG_SHARED_DATA_DIR;

graph::Dataset Load(const std::string& name) {
  auto ds = graph::LoadDataset(kData + "/" + name, {});
  EXPECT_TRUE(ds.ok()) << ds.status();
  EXPECT_TRUE(ds->graph.ToInt32Indices().ok());
  return std::move(*ds);
}

// Owners in stripes of 7 vertices, so parts interleave in the source numbering.
PartitionPlan StripedPlan(const graph::Dataset& ds, int parts) {
  PartitionPlan plan;
  plan.num_parts = parts;
  plan.method = Method::kRange;
  plan.dataset = ds.name;
  plan.node_types = ds.graph.node_types;
  plan.type_sizes = ds.graph.num_nodes;
  int64_t n = 0;
  for (int64_t c : ds.graph.num_nodes) n += c;
  for (int64_t v = 0; v < n; ++v) plan.owners.push_back(static_cast<int32_t>((v / 7) % parts));
  return plan;
}

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/fg_parts_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

// Checks every part of `dir` against `ds`.
void ExpectPartsMatchSource(const graph::Dataset& ds, const std::string& dir, int parts) {
  const graph::HeteroGraph& g = ds.graph;
  std::vector<graph::Dataset> loaded;
  for (int p = 0; p < parts; ++p) {
    auto part = LoadPart(dir, p);
    ASSERT_TRUE(part.ok()) << part.status();
    ASSERT_TRUE(part->part.has_value());
    loaded.push_back(std::move(*part));
  }
  // Per type: new id -> source id, from all parts; it must be a permutation.
  std::vector<std::vector<int64_t>> source(g.node_types.size());
  for (size_t t = 0; t < g.node_types.size(); ++t) {
    const std::string& type = g.node_types[t];
    for (int p = 0; p < parts; ++p) {
      const graph::PartInfo& info = *loaded[p].part;
      ASSERT_EQ(info.bounds, loaded[0].part->bounds);
      const Tensor& ids = info.original_ids.at(type);
      ASSERT_EQ(ids.numel(), info.end(t) - info.begin(t));
      source[t].insert(source[t].end(), ids.i64(), ids.i64() + ids.numel());
    }
    std::vector<int64_t> sorted = source[t];
    std::sort(sorted.begin(), sorted.end());
    for (int64_t v = 0; v < g.num_nodes[t]; ++v) ASSERT_EQ(sorted[v], v) << type;
  }
  for (int p = 0; p < parts; ++p) {
    const graph::Dataset& part = loaded[p];
    const graph::PartInfo& info = *part.part;
    for (size_t t = 0; t < g.node_types.size(); ++t) {
      const std::string& type = g.node_types[t];
      const int64_t lo = info.begin(t), hi = info.end(t);
      if (auto f = ds.features.find(type); f != ds.features.end()) {
        const Tensor& mine = part.features.at(type);
        ASSERT_EQ(mine.dim(0), hi - lo);
        const int64_t w = f->second.dim(1);
        for (int64_t k = 0; k < hi - lo; ++k) {
          ASSERT_TRUE(std::equal(mine.f32() + k * w, mine.f32() + (k + 1) * w,
                                 f->second.f32() + source[t][lo + k] * w))
              << type << " row " << lo + k;
        }
      }
      if (auto l = ds.labels.find(type); l != ds.labels.end() && l->second.rank() == 1) {
        for (int64_t k = 0; k < hi - lo; ++k) {
          ASSERT_EQ(part.labels.at(type).i64()[k], l->second.i64()[source[t][lo + k]]);
        }
      }
    }
    for (size_t r = 0; r < g.relations.size(); ++r) {
      const graph::Relation& rel = g.relations[r];
      const int s = g.TypeIndex(rel.src_type), d = g.TypeIndex(rel.dst_type);
      // In-edges of the part's destinations, out-edges of its sources.
      for (auto [mine, full, row_type, col_type] :
           {std::tuple{&part.graph.relations[r].by_dst, &rel.by_dst, d, s},
            std::tuple{&part.graph.relations[r].by_src, &rel.by_src, s, d}}) {
        ASSERT_EQ(mine->num_rows, info.end(row_type) - info.begin(row_type)) << rel.Key();
        for (int64_t k = 0; k < mine->num_rows; ++k) {
          const int64_t v = source[row_type][info.begin(row_type) + k];
          ASSERT_EQ(mine->degree(k), full->degree(v)) << rel.Key();
          for (int64_t e = 0; e < mine->degree(k); ++e) {
            ASSERT_EQ(source[col_type][mine->col()[mine->row_ptr()[k] + e]],
                      full->col()[full->row_ptr()[v] + e])
                << rel.Key() << " vertex " << v;
          }
        }
      }
    }
    if (g.IsHomogeneous()) {  // foreign in-neighbours and their degrees
      const Tensor& halo = info.halo_ids;
      ASSERT_GT(halo.numel(), 0);
      for (int64_t k = 0; k < halo.numel(); ++k) {
        const int64_t h = halo.i64()[k];
        EXPECT_TRUE(h < info.begin(0) || h >= info.end(0));
        EXPECT_EQ(info.halo_in_degrees.i64()[k], g.relations[0].by_dst.degree(source[0][h]));
      }
    }
  }
  // Split members: every part lists its own, together exactly the source split.
  for (const auto& [type, split] : ds.splits) {
    const int t = g.TypeIndex(type);
    for (auto member : {&graph::Split::train, &graph::Split::valid, &graph::Split::test}) {
      const Tensor& want = split.*member;
      std::multiset<int64_t> expected, got;
      if (want.defined()) expected.insert(want.i64(), want.i64() + want.numel());
      for (int p = 0; p < parts; ++p) {
        const Tensor& ids = loaded[p].splits.at(type).*member;
        for (int64_t k = 0; ids.defined() && k < ids.numel(); ++k) {
          EXPECT_EQ(loaded[p].part->Owner(t, ids.i64()[k]), p);
          got.insert(source[t][ids.i64()[k]]);
        }
      }
      EXPECT_EQ(got, expected) << type;
    }
    const int64_t train = split.train.defined() ? split.train.numel() : 0;
    for (int p = 0; p < parts; ++p) EXPECT_EQ(loaded[p].part->train_total.at(type), train);
  }
}

TEST(PartitionedDataset, CoraPartsHoldExactlyTheSourceRowsAndInEdges) {
  const graph::Dataset ds = Load("cora");
  const std::string dir = FreshDir("cora");
  ASSERT_TRUE(WritePartitionedDataset(ds, StripedPlan(ds, 3), kData + "/cora", dir).ok());
  ExpectPartsMatchSource(ds, dir, 3);
  auto meta = ReadPartitionMeta(dir);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->part_files_size(), 3);
  int64_t in_edges = 0;
  for (int64_t e : meta->part_in_edges()) in_edges += e;
  EXPECT_EQ(in_edges, ds.graph.TotalEdges());
  EXPECT_THAT(DescribePartitioned(*meta), HasSubstr("3 parts"));
  std::filesystem::remove_all(dir);
}

TEST(PartitionedDataset, ImdbPartsKeepEveryNodeTypeAndRelation) {
  const graph::Dataset ds = Load("imdb");
  const std::string dir = FreshDir("imdb");
  ASSERT_TRUE(WritePartitionedDataset(ds, StripedPlan(ds, 2), kData + "/imdb", dir).ok());
  ExpectPartsMatchSource(ds, dir, 2);
  std::filesystem::remove_all(dir);
}

TEST(PartitionedDataset, LastFmPartsKeepTheTrainingEdgesAndTheSplitOfTheirSources) {
  // Link prediction: the parts hold the training graph (what a run on the source trains on) and
  // each the split pairs of the sources it owns, in source ids; together exactly the split.
  const graph::Dataset ds = Load("lastfm");
  const std::string key = "user___listens___artist";
  graph::Dataset training = ds;
  ASSERT_TRUE(graph::KeepTrainingEdges(&training, key).ok());
  ASSERT_LT(training.graph.FindRelation(key)->by_dst.nnz(), ds.graph.FindRelation(key)->by_dst.nnz());
  const std::string dir = FreshDir("lastfm");
  ASSERT_TRUE(WritePartitionedDataset(ds, StripedPlan(ds, 3), kData + "/lastfm", dir).ok());
  ExpectPartsMatchSource(training, dir, 3);
  const graph::EdgeSplit& want = ds.edge_splits.at(key);
  const int user = ds.graph.TypeIndex("user");
  for (auto member : {&graph::EdgeSplit::train, &graph::EdgeSplit::valid, &graph::EdgeSplit::test}) {
    std::multiset<std::pair<int64_t, int64_t>> expected, got;
    const Tensor& all = want.*member;
    for (int64_t k = 0; k < all.dim(0); ++k) expected.insert({all.i64()[2 * k], all.i64()[2 * k + 1]});
    for (int p = 0; p < 3; ++p) {
      auto part = LoadPart(dir, p);
      ASSERT_TRUE(part.ok()) << part.status();
      const Tensor& mine = part->edge_splits.at(key).*member;
      const Tensor& owned = part->part->original_ids.at("user");
      const std::set<int64_t> sources(owned.i64(), owned.i64() + owned.numel());
      EXPECT_EQ(part->part->train_pairs_total.at(key), want.train.dim(0));
      EXPECT_EQ(owned.numel(), part->part->end(user) - part->part->begin(user));
      for (int64_t k = 0; k < mine.dim(0); ++k) {
        EXPECT_EQ(sources.count(mine.i64()[2 * k]), 1u) << "part " << p << " pair " << k;
        got.insert({mine.i64()[2 * k], mine.i64()[2 * k + 1]});
      }
    }
    EXPECT_EQ(got, expected);
  }
  std::filesystem::remove_all(dir);
}

TEST(PartitionedDataset, DamagedOrMismatchedFilesAreRefusedByName) {
  const graph::Dataset ds = Load("cora");
  const std::string dir = FreshDir("bad");
  ASSERT_TRUE(WritePartitionedDataset(ds, StripedPlan(ds, 2), "cora", dir).ok());
  // Never written over.
  EXPECT_THAT(std::string(WritePartitionedDataset(ds, StripedPlan(ds, 2), "cora", dir).message()),
              HasSubstr("exists and is not empty"));
  // Not loadable as a whole dataset, nor a part as a dataset.
  EXPECT_THAT(std::string(graph::LoadDataset(dir, {}).status().message()),
              HasSubstr("is a partitioned dataset"));
  EXPECT_THAT(std::string(graph::LoadDataset(dir + "/part-1.fgc", {}).status().message()),
              HasSubstr("is part 1 of a partitioned dataset"));
  EXPECT_THAT(std::string(LoadPart(dir, 2).status().message()), HasSubstr("there is no part 2"));
  // A part in the wrong place.
  const std::string copy = FreshDir("bad_copy");
  std::filesystem::copy(dir, copy);
  std::filesystem::copy_file(dir + "/part-1.fgc", copy + "/part-0.fgc",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_THAT(std::string(LoadPart(copy, 0).status().message()),
              HasSubstr(copy + "/part-0.fgc: does not match"));
  // A truncated part.
  std::filesystem::resize_file(copy + "/part-1.fgc", 1000);
  EXPECT_THAT(std::string(LoadPart(copy, 1).status().message()), HasSubstr(copy + "/part-1.fgc"));
  // Metadata: bounds that do not tile, a syntax error with its line, a path as a part file.
  auto text = graph::io::ReadFileToString(dir + "/partition.txtpb");
  ASSERT_TRUE(text.ok());
  std::string bad = *text;
  bad.replace(bad.find("bounds: 0"), 9, "bounds: 5");
  EXPECT_THAT(std::string(ParsePartitionMeta(bad, "meta").status().message()),
              HasSubstr("bounds must be 3 ascending ids"));
  EXPECT_THAT(std::string(ParsePartitionMeta("name: \"x\"\nparts {", "meta").status().message()),
              HasSubstr("meta:2:"));
  bad = *text;
  bad.replace(bad.find("\"part-0.fgc\""), 12, "\"../etc/x\"");
  EXPECT_THAT(std::string(ParsePartitionMeta(bad, "meta").status().message()),
              HasSubstr("not a plain file name"));
  std::filesystem::remove(dir + "/part-1.fgc");
  EXPECT_THAT(std::string(LoadPart(dir, 1).status().message()), HasSubstr(dir + "/part-1.fgc"));
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(copy);
}

}  // namespace
}  // namespace fg::partition
