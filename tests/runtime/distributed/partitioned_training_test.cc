// Training on a partitioned dataset: P workers (threads over the in-process communicator), each
// loading only its part, must match the single-process run on the source dataset (loss within
// 1e-4 relative at every epoch, same test accuracy) for GCN, GraphSAGE and GIN, with the parts
// written by every partitioning method for P = 2, 3, 4. PinSage's random walks and MAGNN's
// metapath instances (parts by every method), and R-GCN's per-relation neighbours, run across the
// workers, select the single-process HDGs and match its losses; PinSage's link prediction trains
// on the parts' own pairs. Mini-batches sampled across the parts (node-wise, LADIES, ShaDow) are
// the single-process ones. A
// selection that declares nothing, and a worker count other than the part count, are refused with
// clear errors.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nau/model.h"
#include "flexgraph/graph/io/file.h"
#include "partition/partitioned_dataset.h"
#include "runtime/distributed/distributed_sampling.h"
#include "runtime/train/trainer.h"
#include "tests/runtime/write_parts.h"

namespace fg::runtime {
namespace {

using ::testing::HasSubstr;

const std::string kCora = std::string(FG_SHARED_DATA_DIR) + "/cora";

flexgraph::RunConfig Options(const std::string& model, const std::string& dataset) {
  flexgraph::RunConfig config;
  config.mutable_model()->set_name(model);
  config.mutable_dataset()->set_path(dataset);
  config.mutable_train()->set_epochs(6);
  config.mutable_train()->set_threads(1);
  config.mutable_output()->set_quiet(true);
  return config;
}

// Trains with `workers` in-process workers; `trainers` (optional) keeps them for inspection.
std::vector<absl::StatusOr<TrainResult>> RunWorkers(
    const flexgraph::RunConfig& o, int workers,
    std::vector<std::unique_ptr<Trainer>>* trainers = nullptr) {
  auto group = MakeInProcessGroup(workers);
  std::vector<absl::StatusOr<TrainResult>> results(workers, absl::UnknownError("not run"));
  std::vector<std::unique_ptr<Trainer>> kept(workers);
  std::vector<std::thread> threads;
  for (int r = 0; r < workers; ++r) {
    threads.emplace_back([&, r] {
      DistributedSetup setup;
      setup.comm = group[r].get();
      auto t = Trainer::Create(o, setup);
      if (!t.ok()) {
        group[r]->Abort(t.status());
        results[r] = t.status();
        return;
      }
      kept[r] = std::move(*t);
      results[r] = kept[r]->Run();
    });
  }
  for (auto& t : threads) t.join();
  if (trainers != nullptr) *trainers = std::move(kept);
  return results;
}

// Every worker's losses within 1e-4 relative of `base`'s at every epoch (and, mini-batch training,
// at every batch), and the same test accuracy.
void ExpectSameRun(const std::vector<absl::StatusOr<TrainResult>>& results, const TrainResult& base,
                   const std::string& what) {
  for (size_t r = 0; r < results.size(); ++r) {
    ASSERT_TRUE(results[r].ok()) << what << ": " << results[r].status();
    const TrainResult& got = *results[r];
    ASSERT_FALSE(base.losses.empty()) << what;
    ASSERT_EQ(got.losses.size(), base.losses.size()) << what;
    for (size_t e = 0; e < base.losses.size(); ++e) {
      EXPECT_NEAR(got.losses[e], base.losses[e], 1e-4 * std::fabs(base.losses[e]))
          << what << " worker " << r << " epoch " << e + 1;
    }
    EXPECT_THAT(got.test_accuracy, ::testing::NanSensitiveDoubleEq(base.test_accuracy)) << what;  // NaN: link prediction
    if (base.batches_per_epoch == 0) continue;
    // Mini-batches: every batch's loss (the workers' shares summed) is the single process's.
    ASSERT_EQ(base.batch_losses.size(), base.losses.size() * base.batches_per_epoch) << what;
    ASSERT_EQ(got.batch_losses.size(), base.batch_losses.size()) << what << " worker " << r;
    for (size_t b = 0; b < base.batch_losses.size(); ++b) {
      EXPECT_NEAR(got.batch_losses[b], base.batch_losses[b], 1e-4 * std::fabs(base.batch_losses[b]))
          << what << " worker " << r << " epoch " << b / base.batches_per_epoch + 1 << " batch "
          << b % base.batches_per_epoch;
    }
  }
}

TEST(PartitionedTraining, DnfaModelsMatchTheSingleProcessRunForEveryMethodAndP2To4) {
  const std::vector<partition::Method> methods = {partition::Method::kHash, partition::Method::kMetis,
                                                  partition::Method::kBalanced};
  std::map<std::pair<partition::Method, int>, std::string> dirs;
  for (partition::Method m : methods) {
    for (int parts : {2, 3, 4}) dirs[{m, parts}] = WriteParts(Options("gcn", kCora), parts, m);
  }
  for (const std::string model : {"gcn", "sage", "gin"}) {
    auto single = Trainer::Create(Options(model, kCora));
    ASSERT_TRUE(single.ok()) << single.status();
    auto base = (*single)->Run();
    ASSERT_TRUE(base.ok()) << base.status();
    for (const auto& [key, dir] : dirs) {
      const int parts = key.second;
      const std::string what = absl::StrCat(model, " ", partition::MethodName(key.first), " P=", parts);
      auto results = RunWorkers(Options(model, dir), parts);
      ExpectSameRun(results, *base, what);
      for (const auto& got : results) EXPECT_GT(got->traffic.bytes_features + got->traffic.bytes_partials, 0) << what;
    }
  }
  for (const auto& [key, dir] : dirs) std::filesystem::remove_all(dir);
}

// Mini-batches over the parts: each worker samples its own training vertices' share of every
// batch, frontier vertices drawn by their owners and input rows fetched from them; the batches,
// and so the losses and the accuracy, are the single-process run's on the source dataset — for
// GCN (whose Â places the root among its renumbered neighbours), SAGE, GIN and PinSage (whose
// neighbourhoods are random walks across the workers).
TEST(PartitionedTraining, MiniBatchesAcrossPartsMatchTheSingleProcessRun) {
  auto batches = [](flexgraph::RunConfig o) {
    o.mutable_train()->set_epochs(3);
    o.mutable_train()->set_batch_size(32);  // 5 batches of Cora's 140, in bulks of 3
    o.mutable_train()->set_fanouts("4,3");
    o.mutable_train()->set_bulk(3);
    return o;
  };
  for (int parts : {2, 3}) {
    const std::string dir = WriteParts(Options("gcn", kCora), parts, partition::Method::kMetis);
    for (const std::string model : {"sage", "gcn", "gin", "pinsage"}) {
      const std::string what = absl::StrCat(model, " P=", parts);
      auto single = Trainer::Create(batches(Options(model, kCora)));
      ASSERT_TRUE(single.ok()) << single.status();
      auto base = (*single)->Run();
      ASSERT_TRUE(base.ok()) << base.status();
      auto results = RunWorkers(batches(Options(model, dir)), parts);
      ExpectSameRun(results, *base, what);
    }
    std::filesystem::remove_all(dir);
  }
}

// LADIES over the parts: each batch drawn whole by its leader over every worker's seeds of it, its
// frontier's rows fetched from their owners (GCN's Â holds each root among its renumbered
// neighbours: rows are read own entry first), then cut to each worker's seeds; the losses and the
// accuracy are the single-process run's, with bulks smaller and larger than the workers.
TEST(PartitionedTraining, LadiesBatchesAcrossPartsMatchTheSingleProcessRun) {
  auto batches = [](flexgraph::RunConfig o, int bulk) {
    o.mutable_train()->set_epochs(3);
    o.mutable_train()->set_batch_size(32);
    o.mutable_train()->set_sampler("ladies");
    o.mutable_train()->set_layer_size(48);
    o.mutable_train()->set_bulk(bulk);
    return o;
  };
  for (int parts : {2, 3}) {
    const std::string dir = WriteParts(Options("gcn", kCora), parts, partition::Method::kMetis);
    for (const std::string model : {"gcn", "sage"}) {
      for (int bulk : {1, 4}) {
        const std::string what = absl::StrCat(model, " P=", parts, " bulk ", bulk);
        auto single = Trainer::Create(batches(Options(model, kCora), bulk));
        ASSERT_TRUE(single.ok()) << single.status();
        auto base = (*single)->Run();
        ASSERT_TRUE(base.ok()) << base.status();
        auto results = RunWorkers(batches(Options(model, dir), bulk), parts);
        ExpectSameRun(results, *base, what);
        for (const auto& got : results) {  // each its seeds' part, its frontier's rows from the others
          EXPECT_LT(got->sampled_edges_per_epoch, base->sampled_edges_per_epoch) << what;
          EXPECT_GT(got->traffic.bytes_control, 0) << what;
        }
      }
    }
    std::filesystem::remove_all(dir);
  }
}

// ShaDow over the parts: each root's hops drawn by the frontier's owners under the root's draw
// number, every layer's rows of the subgraph's vertices fetched from their owners, the inputs' rows
// too; training and the evaluation on each root's own subgraph give the single-process losses and
// accuracy, pooled or not, on METIS and hash parts; SAGE and GIN too.
TEST(PartitionedTraining, ShadowSubgraphsAcrossPartsMatchTheSingleProcessRun) {
  auto batches = [](flexgraph::RunConfig o, const std::string& pool) {
    o.mutable_train()->set_epochs(3);
    o.mutable_train()->set_batch_size(32);
    o.mutable_train()->set_sampler("shadow");
    o.mutable_train()->set_fanouts("4,3");
    o.mutable_train()->set_sampler_opt("pool=" + pool);
    o.mutable_train()->set_bulk(3);
    return o;
  };
  for (const auto& [parts, method] : {std::pair{2, partition::Method::kMetis}, std::pair{3, partition::Method::kHash}}) {
    const std::string dir = WriteParts(Options("gcn", kCora), parts, method);
    for (const std::string& pool : {"none", "mean"}) {
      const std::string what = absl::StrCat("gcn pool=", pool, " P=", parts, " ", partition::MethodName(method));
      auto single = Trainer::Create(batches(Options("gcn", kCora), pool));
      ASSERT_TRUE(single.ok()) << single.status();
      auto base = (*single)->Run();
      ASSERT_TRUE(base.ok()) << base.status();
      auto results = RunWorkers(batches(Options("gcn", dir), pool), parts);
      ExpectSameRun(results, *base, what);
      for (const auto& got : results) {
        ASSERT_TRUE(got.ok()) << what;
        EXPECT_GT(got->traffic.bytes_control, 0) << what;  // hops and rows asked of the owners
        EXPECT_EQ(got->valid_accuracy, base->valid_accuracy) << what;
      }
    }
    if (parts == 2) {  // the other flat models: their own matrices and weights, one process's runs
      for (const std::string model : {"sage", "gin"}) {
        const std::string what = absl::StrCat(model, " P=2");
        auto single = Trainer::Create(batches(Options(model, kCora), "none"));
        ASSERT_TRUE(single.ok()) << single.status();
        auto base = (*single)->Run();
        ASSERT_TRUE(base.ok()) << base.status();
        ExpectSameRun(RunWorkers(batches(Options(model, dir), "none"), parts), *base, what);
      }
    }
    std::filesystem::remove_all(dir);
  }
}

// Other workers' neighbourhood rows that LADIES leaders fetch, kept between bulks: with no cache,
// a small one and the default, the runs are the single-process one, and every worker reads the
// same entries; from the third epoch on, kept entries are read instead of fetched.
TEST(PartitionedTraining, KeptNeighbourhoodsLeaveTheLadiesBatchesAsTheyAre) {
  auto batches = [](flexgraph::RunConfig o, int cache_mb) {
    o.mutable_train()->set_epochs(3);
    o.mutable_train()->set_batch_size(32);
    o.mutable_train()->set_sampler("ladies");
    o.mutable_train()->set_layer_size(48);
    o.mutable_train()->set_bulk(2);
    o.mutable_train()->set_feature_cache_mb(cache_mb);
    return o;
  };
  const std::string dir = WriteParts(Options("gcn", kCora), 2, partition::Method::kMetis);
  auto single = Trainer::Create(batches(Options("gcn", kCora), 0));
  ASSERT_TRUE(single.ok()) << single.status();
  auto base = (*single)->Run();
  ASSERT_TRUE(base.ok()) << base.status();
  EXPECT_EQ(base->remote_neighbourhood_entries_fetched, -1) << "one process fetches nothing";
  std::vector<int64_t> total(2, -1), cached(2, 0);
  for (int cache_mb : {0, 1, -1}) {
    auto results = RunWorkers(batches(Options("gcn", dir), cache_mb), 2);
    ExpectSameRun(results, *base, absl::StrCat("cache ", cache_mb, " MiB"));
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(results[r].ok());
      const TrainResult& got = *results[r];
      const int64_t read = got.remote_neighbourhood_entries_fetched + got.remote_neighbourhood_entries_cached;
      if (total[r] < 0) total[r] = read;
      EXPECT_EQ(read, total[r]) << "worker " << r << " cache " << cache_mb;
      if (cache_mb == 0) {
        EXPECT_EQ(got.remote_neighbourhood_entries_cached, 0);
        EXPECT_GT(got.remote_neighbourhood_entries_fetched, 0) << "worker " << r;
      } else {
        // Cora's rows are short: 1 MiB keeps as many of them as the default.
        EXPECT_GT(got.remote_neighbourhood_entries_cached, 0) << "worker " << r << " cache " << cache_mb;
        if (cache_mb == 1) cached[r] = got.remote_neighbourhood_entries_cached;
        if (cache_mb < 0) {
          EXPECT_EQ(got.remote_neighbourhood_entries_cached, cached[r]) << "worker " << r;
        }
      }
    }
  }
  std::filesystem::remove_all(dir);
}

// Other workers' input rows kept between bulks: with no cache, a small one and the default, the
// runs are the single-process one; from the third epoch on, kept rows are read instead of
// fetched (the counting epoch, then the choosing one), and the rows read stay the same.
TEST(PartitionedTraining, KeptRemoteRowsLeaveTheBatchesAsTheyAre) {
  auto batches = [](flexgraph::RunConfig o, int cache_mb) {
    o.mutable_train()->set_epochs(3);
    o.mutable_train()->set_batch_size(32);
    o.mutable_train()->set_fanouts("4,3");
    o.mutable_train()->set_bulk(2);
    o.mutable_train()->set_feature_cache_mb(cache_mb);
    return o;
  };
  const std::string dir = WriteParts(Options("sage", kCora), 2, partition::Method::kMetis);
  auto single = Trainer::Create(batches(Options("sage", kCora), 0));
  ASSERT_TRUE(single.ok()) << single.status();
  auto base = (*single)->Run();
  ASSERT_TRUE(base.ok()) << base.status();
  EXPECT_EQ(base->remote_rows_fetched, -1) << "one process fetches nothing";
  std::vector<int64_t> total(2, -1);
  for (int cache_mb : {0, 1, -1}) {
    auto results = RunWorkers(batches(Options("sage", dir), cache_mb), 2);
    ExpectSameRun(results, *base, absl::StrCat("cache ", cache_mb, " MiB"));
    int64_t capacities = 0;
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(results[r].ok());
      const TrainResult& got = *results[r];
      if (total[r] < 0) total[r] = got.remote_rows_fetched + got.remote_rows_cached;
      EXPECT_EQ(got.remote_rows_fetched + got.remote_rows_cached, total[r]) << "worker " << r;
      if (cache_mb == 0) {
        EXPECT_EQ(got.remote_rows_capacity, 0);
        EXPECT_EQ(got.remote_rows_cached, 0);
        EXPECT_GT(got.remote_rows_fetched, 0) << "worker " << r;
      } else {
        // 1 MiB holds 182 of Cora's rows of 1433 floats; the default, as many as the worker owns.
        if (cache_mb == 1) {
          EXPECT_EQ(got.remote_rows_capacity, 182) << "worker " << r;
        }
        EXPECT_GT(got.remote_rows_cached, 0) << "worker " << r;
        EXPECT_LE(got.remote_rows_cached, got.remote_rows_capacity);
      }
      capacities += got.remote_rows_capacity;
    }
    if (cache_mb < 0) {
      EXPECT_EQ(capacities, 2708) << "Cora's vertices";
    }
  }
  std::filesystem::remove_all(dir);
}


// Global id -> source-dataset global id, from every part of `dir`.
std::vector<int64_t> SourceIds(const std::string& dir, int parts) {
  std::vector<int64_t> source;
  for (int p = 0; p < parts; ++p) {
    auto part = partition::LoadPart(dir, p);
    EXPECT_TRUE(part.ok()) << part.status();
    const nau::VertexSpace space(part->graph);
    source.resize(space.size());
    for (int t = 0; t < space.num_types(); ++t) {
      const Tensor& ids = part->part->original_ids.at(space.type_name(t));
      for (int64_t k = 0; k < ids.numel(); ++k) {
        source[space.type_offset(t) + part->part->begin(t) + k] = space.type_offset(t) + ids.i64()[k];
      }
    }
  }
  return source;
}

// Every root's selection in source ids: the leaves below it, level by level, with their weights,
// and a marker (-1) closing every group, so instance and metapath boundaries count too.
using Selection = std::map<int64_t, std::vector<std::pair<int64_t, float>>>;
void Flatten(const hdg::Hdg& h, int level, int64_t row, const std::vector<int64_t>* source,
             std::vector<std::pair<int64_t, float>>* out) {
  const Csr& c = h.level(level).csr();
  for (int64_t e = c.row_ptr()[row]; e < c.row_ptr()[row + 1]; ++e) {
    if (level == 1) {
      const int64_t v = c.col()[e];
      out->push_back({source ? (*source)[v] : v, c.val() ? c.val()[e] : 1.0f});
    } else {
      Flatten(h, level - 1, c.col()[e], source, out);
    }
  }
  out->push_back({-1, 0.0f});
}
void AddSelection(const hdg::Hdg& h, const std::vector<int64_t>* source, Selection* out) {
  for (int64_t r = 0; r < h.num_roots(); ++r) {
    const int64_t root = h.roots().i32()[r];
    Flatten(h, h.num_levels(), r, source, &(*out)[source ? (*source)[root] : root]);
  }
}

// A selection that crosses the parts runs across the workers: every layer's HDG (in source ids) and
// the losses are the single-process ones.
// Every file of directory `a` is in `b` with the same bytes, and `b` has no others.
void ExpectSameFiles(const std::string& a, const std::string& b) {
  std::set<std::string> in_a, in_b;
  for (const auto& f : std::filesystem::directory_iterator(a)) in_a.insert(f.path().filename().string());
  for (const auto& f : std::filesystem::directory_iterator(b)) in_b.insert(f.path().filename().string());
  EXPECT_EQ(in_a, in_b);
  EXPECT_FALSE(in_a.empty());
  for (const std::string& name : in_a) {
    auto x = graph::io::ReadFileToString(a + "/" + name), y = graph::io::ReadFileToString(b + "/" + name);
    ASSERT_TRUE(x.ok() && y.ok()) << name;
    EXPECT_TRUE(*x == *y) << name << " differs";
  }
}

// Each root's entries in order of source id (a flat neighbourhood as the set it is).
void SortEach(Selection* s) {
  for (auto& [root, entries] : *s) std::sort(entries.begin(), entries.end());
}

// The parts' selections are the single process's (`as_sets`: each root's flat neighbourhood as a
// set, where its order follows the vertices' ids, as GCN's), the losses its losses, and
// --export_hdg's files its files byte for byte.
void ExpectSelectionsMatch(flexgraph::RunConfig o, const std::vector<int>& parts_list,
                           partition::Method method = partition::Method::kMetis,
                           bool as_sets = false) {
  const std::string exported = ::testing::TempDir() + "/fg_export_hdg_" + std::to_string(getpid());
  std::filesystem::remove_all(exported);
  o.mutable_output()->set_export_hdg(exported + "/single");
  auto single = Trainer::Create(o);
  ASSERT_TRUE(single.ok()) << single.status();
  const int layers = (*single)->model().num_layers();
  std::vector<Selection> want(layers);
  for (int i = 0; i < layers; ++i) AddSelection((*single)->layer_hdg(i), nullptr, &want[i]);
  auto base = (*single)->Run();
  ASSERT_TRUE(base.ok()) << base.status();
  ASSERT_EQ(base->losses.size(), static_cast<size_t>(o.train().epochs()));
  for (int parts : parts_list) {
    const std::string dir = WriteParts(o, parts, method);
    const std::vector<int64_t> source = SourceIds(dir, parts);
    flexgraph::RunConfig po = o;
    po.mutable_dataset()->set_path(dir);
    po.mutable_output()->set_export_hdg(exported + "/p" + std::to_string(parts));
    std::vector<std::unique_ptr<Trainer>> trainers;
    const auto results = RunWorkers(po, parts, &trainers);
    std::vector<Selection> got(layers);
    for (int r = 0; r < parts; ++r) {
      ASSERT_TRUE(results[r].ok()) << "P=" << parts << ": " << results[r].status();
      for (int i = 0; i < layers; ++i) AddSelection(trainers[r]->layer_hdg(i), &source, &got[i]);
      ASSERT_EQ(results[r]->losses.size(), base->losses.size()) << "P=" << parts << " worker " << r;
      for (size_t e = 0; e < base->losses.size(); ++e) {
        EXPECT_NEAR(results[r]->losses[e], base->losses[e], 1e-4 * std::fabs(base->losses[e]))
            << "P=" << parts << " epoch " << e + 1;
      }
      EXPECT_THAT(results[r]->test_accuracy, ::testing::NanSensitiveDoubleEq(base->test_accuracy)) << "P=" << parts;
    }
    for (int i = 0; i < layers; ++i) {
      if (as_sets) {
        ASSERT_EQ((*single)->layer_hdg(i).num_levels(), 1) << "layer " << i << " is not flat";
        SortEach(&want[i]);
        SortEach(&got[i]);
      }
      EXPECT_EQ(got[i], want[i]) << "P=" << parts << " layer " << i;
    }
    // --export_hdg writes the same files for any worker count.
    ExpectSameFiles(exported + "/single", exported + "/p" + std::to_string(parts));
    std::filesystem::remove_all(dir);
  }
  std::filesystem::remove_all(exported);
}

// GCN, SAGE and GIN: direct neighbours over the parts are the single process's (GCN's in the
// order of the parts' ids: as sets), and --export_hdg's files are its files byte for byte.
TEST(PartitionedTraining, DnfaSelectionsAndExportedHdgsAreTheSingleProcessOnes) {
  for (const std::string model : {"gcn", "sage", "gin"}) {
    SCOPED_TRACE(model);
    flexgraph::RunConfig o = Options(model, kCora);
    o.mutable_train()->set_epochs(2);
    ExpectSelectionsMatch(o, {2, 3}, partition::Method::kMetis, /*as_sets=*/model == "gcn");
  }
}

TEST(PartitionedTraining, PinSageWalksAcrossWorkersSelectTheSingleProcessHdg) {
  ExpectSelectionsMatch(Options("pinsage", kCora), {1, 2, 3, 4});
  for (partition::Method method : {partition::Method::kHash, partition::Method::kBalanced}) {
    SCOPED_TRACE(partition::MethodName(method));
    ExpectSelectionsMatch(Options("pinsage", kCora), {2, 3, 4}, method);
  }
}

TEST(PartitionedTraining, TypedWalksOnAHeterogeneousDatasetSelectTheSingleProcessHdg) {
  flexgraph::RunConfig o = Options("pinsage", std::string(FG_SHARED_DATA_DIR) + "/imdb");
  (*o.mutable_model()->mutable_options())["walk"] = "movie-actor-movie";
  o.mutable_train()->set_epochs(3);
  ExpectSelectionsMatch(o, {2, 3});
}

// MAGNN on IMDB, small: sampled instances (8 per root and metapath), two layers, 3 epochs.
flexgraph::RunConfig SmallMagnn() {
  flexgraph::RunConfig o = Options("magnn", std::string(FG_SHARED_DATA_DIR) + "/imdb");
  o.mutable_model()->set_hidden(16);
  o.mutable_model()->set_heads(2);
  (*o.mutable_model()->mutable_options())["max_instances"] = "8";
  o.mutable_train()->set_epochs(3);
  return o;
}

TEST(PartitionedTraining, MagnnInstancesAcrossWorkersAreTheSingleProcessOnes) {
  // Instances decoded across the workers.
  ExpectSelectionsMatch(SmallMagnn(), {1, 2, 3, 4});
}

TEST(PartitionedTraining, MagnnMatchesTheSingleProcessRunOnHashAndBalancedParts) {
  const flexgraph::RunConfig o = SmallMagnn();
  for (partition::Method method : {partition::Method::kHash, partition::Method::kBalanced}) {
    SCOPED_TRACE(partition::MethodName(method));
    ExpectSelectionsMatch(o, {2, 3, 4}, method);
  }
}

TEST(PartitionedTraining, RgcnRelationsAcrossWorkersAreTheSingleProcessOnes) {
  // Every (root, neighbour) pair of every relation-direction, two layers; conferences have no
  // features (learned embeddings, rows keyed by source id).
  flexgraph::RunConfig o = Options("rgcn", std::string(FG_SHARED_DATA_DIR) + "/dblp");
  o.mutable_dataset()->set_split("heco20");
  o.mutable_model()->set_hidden(16);
  o.mutable_train()->set_epochs(3);
  ExpectSelectionsMatch(o, {2, 3});
}

TEST(PartitionedTraining, PinSageLinkPredictionOnPartsMatchesTheSingleProcessRun) {
  // Each part trains on the pairs of its own sources (negatives keyed by source ids) and scores
  // their evaluation pairs; the metrics combine across the workers.
  const flexgraph::RunConfig o = Options("pinsage", std::string(FG_SHARED_DATA_DIR) + "/lastfm");
  auto single = Trainer::Create(o);
  ASSERT_TRUE(single.ok()) << single.status();
  auto base = (*single)->Run();
  ASSERT_TRUE(base.ok()) << base.status();
  ASSERT_GT(base->extra.at("test_auc"), 0.5);
  for (const auto& [method, parts] : {std::pair{partition::Method::kMetis, 2},
                                      std::pair{partition::Method::kHash, 3}}) {
    const std::string dir = WriteParts(o, parts, method);
    flexgraph::RunConfig po = o;
    po.mutable_dataset()->set_path(dir);
    const auto results = RunWorkers(po, parts);
    for (int r = 0; r < parts; ++r) {
      ASSERT_TRUE(results[r].ok()) << "P=" << parts << ": " << results[r].status();
      ASSERT_EQ(results[r]->losses.size(), base->losses.size());
      for (size_t e = 0; e < base->losses.size(); ++e) {
        EXPECT_NEAR(results[r]->losses[e], base->losses[e], 1e-4 * std::fabs(base->losses[e]))
            << "P=" << parts << " epoch " << e + 1;
      }
      // Hits@10 may move a pair scored at a tie across its cut-off (one pair is 1.6e-4).
      for (const auto& [key, tolerance] : {std::pair<const char*, double>{"valid_auc", 1e-4},
                                           {"test_auc", 1e-4}, {"test_hits_at_10", 5e-4}}) {
        EXPECT_NEAR(results[r]->extra.at(key), base->extra.at(key), tolerance) << key << " P=" << parts;
      }
    }
    std::filesystem::remove_all(dir);
  }
}

// A layer that reads its neighbours' in-edges without declaring how (nau/layer.h).
class TwoHopLayer : public nau::Layer {
 public:
  hdg::SchemaTree Schema() const override { return hdg::SchemaTree::Flat("two-hop"); }
  void SelectNeighbors(const nau::SelectContext& ctx, int32_t v, hdg::NeighborWriter& out) const override {
    for (int32_t u : ctx.InNeighbors(v)) {
      for (int32_t w : ctx.InNeighbors(u)) out.Add(w);
    }
  }
  nau::Aggregator LevelAggregator(int) const override { return nau::Aggregator::Mean(); }
  ag::Var Update(nau::UpdateContext&, const ag::Var&, const ag::Var& nbr) override { return nbr; }
};

FG_REGISTER_MODEL(two_hop_test, "two-hop mean (test)", "", {}, [] {
  return std::make_unique<nau::StackedModel>(
      [](const nau::ModelSpec&, int, int64_t, int64_t, bool) -> absl::StatusOr<std::unique_ptr<nau::Layer>> {
        return std::make_unique<TwoHopLayer>();
      });
});

TEST(PartitionedTraining, RefusesAnUndeclaredSelectionAndAWrongWorkerCount) {
  const std::string dir = WriteParts(Options("gcn", kCora), 2, partition::Method::kHash);
  auto undeclared = RunWorkers(Options("two_hop_test", dir), 2);
  ASSERT_FALSE(undeclared[0].ok());
  EXPECT_THAT(std::string(undeclared[0].status().message()),
              HasSubstr("train two_hop_test on the unpartitioned dataset"));
  // One worker for two parts.
  auto alone = Trainer::Create(Options("gcn", dir));
  ASSERT_FALSE(alone.ok());
  EXPECT_THAT(std::string(alone.status().message()),
              HasSubstr("a partitioned dataset of 2 parts needs as many workers, this run has 1"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fg::runtime
