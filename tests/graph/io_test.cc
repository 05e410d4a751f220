// .npy arrays, the binary cache, SNAP edge lists and the .npy workload directory.
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/io/cache.h"
#include "flexgraph/graph/io/edge_list.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/npy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/test_util.h"

namespace fg::graph::io {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

TEST(NpyTest, RoundTripsEveryDtype) {
  TempDir dir;
  const Tensor f = Tensor::FromVector(std::vector<float>{1.5f, -2, 3, 4, 5, 6}, {2, 3});
  const Tensor i32 = Tensor::FromVector(std::vector<int32_t>{7, -8, 9});
  const Tensor i64 = Tensor::FromVector(std::vector<int64_t>{1ll << 40, -1, 0, 2}, {2, 1, 2});
  for (const Tensor& t : {f, i32, i64}) {
    const std::string p = dir.path() + "/a.npy";
    ASSERT_TRUE(WriteNpy(p, t).ok());
    auto back = ReadNpy(p);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->dtype(), t.dtype());
    EXPECT_EQ(back->shape(), t.shape());
    EXPECT_EQ(std::memcmp(back->raw(), t.raw(), t.nbytes()), 0);
  }
}

// A writer killed before its rename leaves `<file>.tmp.<pid>`; the next write of the file removes
// it, but not the temporary of a writer that is still alive.
TEST(WriteFileAtomicallyTest, ReplacesWholeAndRemovesTemporariesOfDeadWriters) {
  TempDir dir;
  const std::string path = dir.path() + "/checkpoint.pb";
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);
  const std::string dead = path + ".tmp." + std::to_string(child);
  const std::string alive = path + ".tmp." + std::to_string(getppid());
  const std::string other = dir.path() + "/other.pb.tmp." + std::to_string(child);
  for (const std::string& f : {dead, alive, other}) std::ofstream(f) << "half";
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  EXPECT_EQ(ReadFileToString(path).value_or(""), "second");
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(alive));
  EXPECT_TRUE(std::filesystem::exists(other));
}

TEST(NpyTest, HeaderIsWhatNumpyWrites) {
  const std::string img = EncodeNpy(Tensor::FromVector(std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(img.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_THAT(img, HasSubstr("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"));
  EXPECT_EQ((img.size() - 24) % 64, 0u);  // data starts 64-byte aligned
  // A version 2.0 header as numpy writes for large headers.
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  h.append(64 - (12 + h.size() + 1) % 64, ' ');
  h += "\n";
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8);
  const uint32_t len = h.size();
  v2.append(reinterpret_cast<const char*>(&len), 4);
  v2 += h;
  v2.append(16, '\0');
  auto t = ParseNpy(v2, "v2.npy");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape(), (Shape{2, 2}));
}

TEST(NpyTest, RejectsUnsupportedFilesClearly) {
  auto bad = [](const std::string& img) {
    auto t = ParseNpy(img, "x.npy");
    EXPECT_FALSE(t.ok());
    return t.ok() ? std::string() : std::string(t.status().message());
  };
  const std::string good = EncodeNpy(Tensor::FromVector(std::vector<float>{1, 2}));
  EXPECT_THAT(bad("hello"), HasSubstr("x.npy: not a .npy file"));
  std::string f8 = good;
  f8.replace(f8.find("<f4"), 3, "<f8");
  EXPECT_THAT(bad(f8), HasSubstr("unsupported dtype '<f8'"));
  std::string be = good;
  be.replace(be.find("<f4"), 3, ">f4");
  EXPECT_THAT(bad(be), HasSubstr("unsupported dtype '>f4'"));
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_THAT(bad(fortran), HasSubstr("Fortran-order"));
  EXPECT_THAT(bad(good.substr(0, good.size() - 1)), HasSubstr("needs 8 data bytes but the file has 7"));
  EXPECT_EQ(ReadNpy("/nonexistent.npy").status().code(), absl::StatusCode::kNotFound);
  // Huge dimensions: with a zero one the array is empty (found by fuzz_npy); without, the
  // element count overflows 64 bits and cannot match the data.
  auto with_shape = [&](const std::string& shape) {
    std::string img = EncodeNpy(Tensor::Empty({0}, DType::kInt32));
    img.replace(img.find("(0,)"), 4, shape);
    const uint16_t len = static_cast<uint16_t>(img.size() - 10);
    std::memcpy(&img[8], &len, 2);  // header length field
    return img;
  };
  auto empty = ParseNpy(with_shape("(233333333333, 333333333, 0)"), "x.npy");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->numel(), 0);
  EXPECT_EQ(empty->ShapeString(), "[233333333333, 333333333, 0]");
  EXPECT_THAT(bad(with_shape("(4294967296, 4294967296, 4294967296)")),
              HasSubstr("data bytes but the file has 0"));
}

Dataset TinyDataset() {
  LoadOptions o;
  auto ds = LoadDataset("sbm:nodes=300,classes=3,features=5,avg_degree=6,seed=4", o);
  EXPECT_TRUE(ds.ok());
  return *ds;
}

void ExpectSameDataset(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.split_name, b.split_name);
  EXPECT_EQ(a.graph.node_types, b.graph.node_types);
  EXPECT_EQ(a.graph.num_nodes, b.graph.num_nodes);
  ASSERT_EQ(a.graph.relations.size(), b.graph.relations.size());
  for (size_t r = 0; r < a.graph.relations.size(); ++r) {
    const Relation &x = a.graph.relations[r], &y = b.graph.relations[r];
    EXPECT_EQ(x.Key(), y.Key());
    EXPECT_EQ(x.symmetric, y.symmetric);
    EXPECT_EQ(x.by_src.offsets.ToVector<int64_t>(), y.by_src.offsets.ToVector<int64_t>());
    EXPECT_EQ(x.by_src.indices.ToVector<int32_t>(), y.by_src.indices.ToVector<int32_t>());
    EXPECT_EQ(x.by_dst.indices.ToVector<int32_t>(), y.by_dst.indices.ToVector<int32_t>());
  }
  for (const auto& [t, f] : a.features) EXPECT_EQ(f.ToVector<float>(), b.features.at(t).ToVector<float>());
  for (const auto& [t, l] : a.labels) EXPECT_EQ(l.ToVector<int64_t>(), b.labels.at(t).ToVector<int64_t>());
  EXPECT_EQ(a.num_classes, b.num_classes);
  for (const auto& [t, s] : a.splits) {
    EXPECT_EQ(s.train.ToVector<int64_t>(), b.splits.at(t).train.ToVector<int64_t>());
    EXPECT_EQ(s.test.ToVector<int64_t>(), b.splits.at(t).test.ToVector<int64_t>());
  }
}

TEST(CacheTest, RoundTrips) {
  TempDir dir;
  const Dataset ds = TinyDataset();
  const std::string p = dir.path() + "/tiny.fgc";
  ASSERT_TRUE(WriteCache(ds, p).ok());
  auto back = ReadCache(p);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSameDataset(ds, *back);
  EXPECT_EQ(EncodeCache(ds).size(), static_cast<size_t>(std::filesystem::file_size(p)));
}

TEST(CacheTest, DetectsCorruptionTruncationAndVersion) {
  const Dataset ds = TinyDataset();
  const std::string img = EncodeCache(ds);
  auto msg = [](const std::string& data) {
    auto t = ParseCache(data, "c.fgc");
    EXPECT_FALSE(t.ok());
    return t.ok() ? std::string() : std::string(t.status().message());
  };
  std::string flipped = img;
  flipped[img.size() - 100] ^= 1;
  EXPECT_THAT(msg(flipped), HasSubstr("c.fgc: corrupt cache: checksum mismatch in section"));
  EXPECT_THAT(msg(img.substr(0, img.size() - 64)), HasSubstr("truncated"));
  EXPECT_THAT(msg("FGCACHE"), HasSubstr("shorter than its header"));
  EXPECT_THAT(msg(std::string(100, 'z')), HasSubstr("not a FlexGraph cache"));
  std::string table = img;
  table[70] ^= 1;
  EXPECT_THAT(msg(table), HasSubstr("section table checksum"));
}

TEST(CacheTest, LoadDatasetWritesAndReusesTheCache) {
  TempDir dir;
  LoadOptions o;
  o.cache_dir = dir.path() + "/cache";
  auto a = LoadDataset("sbm:nodes=200,classes=2,features=3", o);
  ASSERT_TRUE(a.ok());
  const auto files = ListDirectory(o.cache_dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_THAT(files[0], ::testing::StartsWith("sbm-"));
  auto b = LoadDataset("sbm:nodes=200,classes=2,features=3", o);
  ASSERT_TRUE(b.ok());
  ExpectSameDataset(*a, *b);
}

TEST(EdgeListTest, LoadsSnapFiles) {
  TempDir dir;
  const std::string p = dir.Write("toy.txt.gz",
                                  "# Directed graph: toy.txt\n# FromNodeId\tToNodeId\n0\t1\n1\t2\n2\t0\n"
                                  "2\t0\n5\t5\n");
  auto ds = LoadDataset(p, LoadOptions());
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->name, "toy");
  EXPECT_EQ(ds->graph.num_nodes[0], 6);
  // Undirected triangle 0-1-2 (the duplicate and the loop at 5 dropped).
  EXPECT_EQ(ds->Adjacency().nnz(), 6);
  EXPECT_EQ(ds->Adjacency().indices.ToVector<int32_t>(), (std::vector<int32_t>{1, 2, 0, 2, 0, 1}));
  const std::string bad = dir.Write("bad.txt", "0 1\n1 two\n");
  auto e = LoadDataset(bad, LoadOptions());
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("bad.txt:2: column 2: 'two'"));
}

TEST(NpyDirectoryTest, WritesTheBaselineWorkloadAndReadsItBack) {
  TempDir dir;
  const Dataset ds = TinyDataset();
  ASSERT_TRUE(WriteNpyDirectory(ds, dir.path() + "/w", true).ok());
  for (const char* f : {"indptr.npy", "indices.npy", "feat.npy", "label.npy", "train_idx.npy",
                        "valid_idx.npy", "test_idx.npy", "meta.json"}) {
    EXPECT_TRUE(PathExists(dir.path() + "/w/" + f)) << f;
  }
  auto back = LoadDataset(dir.path() + "/w", LoadOptions());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->num_classes.at("node"), 3);
  EXPECT_EQ(back->Adjacency().indices.ToVector<int32_t>(), ds.Adjacency().indices.ToVector<int32_t>());
  EXPECT_EQ(back->features.at("node").ToVector<float>(), ds.features.at("node").ToVector<float>());
}

// The dataset with int64 column ids in every relation.
Dataset WithInt64Ids(Dataset ds) {
  for (Relation& r : ds.graph.relations) {
    for (Csr* c : {&r.by_src, &r.by_dst}) {
      const std::vector<int32_t> v = c->indices.ToVector<int32_t>();
      c->indices = Tensor::FromVector(std::vector<int64_t>(v.begin(), v.end()));
    }
  }
  return ds;
}

TEST(CacheTest, KeepsInt64ColumnIds) {
  TempDir dir;
  const Dataset narrow = TinyDataset();
  const Dataset wide = WithInt64Ids(narrow);
  const std::string p = dir.path() + "/wide.fgc";
  ASSERT_TRUE(WriteCache(wide, p).ok());
  auto back = ReadCache(p);
  ASSERT_TRUE(back.ok()) << back.status();
  const Csr& c = back->graph.relations[0].by_src;
  ASSERT_TRUE(c.has_int64_indices());
  EXPECT_EQ(c.indices.ToVector<int64_t>(), wide.graph.relations[0].by_src.indices.ToVector<int64_t>());
  ASSERT_TRUE(back->graph.ToInt32Indices().ok());
  ExpectSameDataset(narrow, *back);
}

TEST(NpyDirectoryTest, ReadsInt64Indices) {
  TempDir dir;
  const Dataset ds = TinyDataset();
  ASSERT_TRUE(WriteNpyDirectory(ds, dir.path() + "/w", true).ok());
  const std::vector<int32_t> v = ds.Adjacency().indices.ToVector<int32_t>();
  const std::vector<int64_t> wide(v.begin(), v.end());
  ASSERT_TRUE(WriteNpy(dir.path() + "/w/indices.npy", Tensor::FromVector(wide)).ok());
  auto back = LoadDataset(dir.path() + "/w", LoadOptions());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->Adjacency().indices.ToVector<int64_t>(), wide);
  // A float index array is named.
  ASSERT_TRUE(WriteNpy(dir.path() + "/w/indices.npy", Tensor::FromVector(std::vector<float>{1})).ok());
  auto bad = LoadDataset(dir.path() + "/w", LoadOptions());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("indices.npy: expected a rank-1 int32 array, found float32"));
}

// meta.json of a .npy workload: invalid JSON, or a num_classes that is not a non-negative integer
// at least as large as every label, is refused naming the file and the field (a label of 50 once
// trained 51 classes).
TEST(NpyDirectoryTest, RefusesABadMetaJsonNamingTheFileAndField) {
  TempDir dir;
  const std::string w = dir.path() + "/w";
  ASSERT_TRUE(WriteNpyDirectory(TinyDataset(), w, false).ok());
  const std::string meta = w + "/meta.json";
  auto why = [&](const std::string& text) {
    std::ofstream(meta, std::ios::trunc) << text;
    auto ds = LoadDataset(w, LoadOptions());
    return ds.ok() ? std::string("ok") : std::string(ds.status().message());
  };
  EXPECT_EQ(why(R"({"name": "tiny", "num_classes": 3, "normalize_features": false})"), "ok");
  EXPECT_EQ(why(R"({"name": "tiny", "normalize_features": false, "extra": [1, {"a": null}]})"),
            "ok");
  EXPECT_THAT(why(R"({"name": "tiny", "num_classes": 3,)"), HasSubstr(meta + ": invalid JSON"));
  EXPECT_THAT(why("num_classes = 3"), HasSubstr(meta + ": invalid JSON"));
  EXPECT_THAT(why(R"({"num_classes": "3"})"),
              HasSubstr(meta + ": num_classes: expected a non-negative integer, got \"3\""));
  EXPECT_THAT(why(R"({"num_classes": -2})"),
              HasSubstr(meta + ": num_classes: expected a non-negative integer, got -2"));
  EXPECT_THAT(why(R"({"num_classes": 2.5})"),
              HasSubstr(meta + ": num_classes: expected a non-negative integer"));
  EXPECT_THAT(why(R"({"num_classes": 2})"),
              HasSubstr(meta + ": num_classes: 2, but " + w + "/label.npy holds label 2"));
  EXPECT_THAT(why(R"({"name": 7})"), HasSubstr(meta + ": name: expected a string"));
  // A larger num_classes than the labels use is a class without examples: kept.
  EXPECT_EQ(why(R"({"num_classes": 5})"), "ok");
  auto five = LoadDataset(w, LoadOptions());
  ASSERT_TRUE(five.ok());
  EXPECT_EQ(five->num_classes.at("node"), 5);
}

// Renames a cache image's section `from` to `to` in its table, with the table and header checksums
// recomputed: a file whose every checksum holds.
std::string RenameSection(std::string img, const std::string& from, const std::string& to) {
  constexpr size_t kHeader = 64, kEntry = 136;
  uint32_t sections = 0;
  std::memcpy(&sections, img.data() + 12, 4);
  bool found = false;
  for (uint32_t i = 0; i < sections; ++i) {
    char* name = img.data() + kHeader + i * kEntry;
    if (from == name) {
      std::memset(name, 0, 80);
      std::memcpy(name, to.data(), to.size());
      found = true;
    }
  }
  EXPECT_TRUE(found) << from;
  const uint32_t table_crc =
      crc32(0, reinterpret_cast<const Bytef*>(img.data() + kHeader), sections * kEntry);
  std::memcpy(img.data() + 32, &table_crc, 4);
  const uint32_t header_crc = crc32(0, reinterpret_cast<const Bytef*>(img.data()), 36);
  std::memcpy(img.data() + 36, &header_crc, 4);
  return img;
}

TEST(CacheTest, RefusesADuplicatedSectionWithEveryChecksumIntact) {
  // The test split renamed to the validation split's name: two 'valid' sections, the test split
  // gone.
  const std::string img = EncodeCache(TinyDataset());
  ASSERT_TRUE(ParseCache(img, "c.fgc").ok());
  auto dup = ParseCache(RenameSection(img, "t0.test", "t0.valid"), "c.fgc");
  ASSERT_FALSE(dup.ok());
  EXPECT_THAT(std::string(dup.status().message()),
              HasSubstr("c.fgc: corrupt cache: section 't0.valid' appears twice"));
}

TEST(CacheTest, RefusesAByDstThatIsNotTheTransposeOfBySrc) {
  // A directed relation 0 -> 1, 1 -> 2, 2 -> 0; by_dst claims 2 -> 1 where the edge is 0 -> 1 (the
  // same sizes, every id in range, every checksum right).
  Dataset ds;
  ds.name = "directed";
  ds.graph.node_types = {"node"};
  ds.graph.num_nodes = {3};
  Relation r;
  r.src_type = r.dst_type = "node";
  r.name = "edge";
  r.by_src = Csr::FromVectors(3, 3, {0, 1, 2, 3}, {1, 2, 0});
  r.by_dst = r.by_src.Transpose();
  ds.graph.relations.push_back(r);
  auto good = ParseCache(EncodeCache(ds), "d.fgc");
  ASSERT_TRUE(good.ok()) << good.status();
  ds.graph.relations[0].by_dst = Csr::FromVectors(3, 3, {0, 1, 2, 3}, {2, 2, 1});
  auto bad = ParseCache(EncodeCache(ds), "d.fgc");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(
      std::string(bad.status().message()),
      HasSubstr("d.fgc: corrupt cache: node___edge___node: by_dst is not the transpose of by_src"));
}

}  // namespace
}  // namespace fg::graph::io
