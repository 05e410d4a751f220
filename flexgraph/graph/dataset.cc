#include "flexgraph/graph/dataset.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/builder.h"
#include "flexgraph/graph/gen/spec.h"
#include "flexgraph/graph/io/cache.h"
#include "flexgraph/graph/io/edge_list.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/ogb.h"
#include "flexgraph/graph/io/trackml_csv.h"

namespace fg::graph {

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

uint64_t HashString(uint64_t h, const std::string& s) {
  for (unsigned char c : s) h = MixKey(h, c);
  return MixKey(h, s.size());
}

// A key for the cache file: the source (path and every file's size and mtime, or the spec) and
// the options that change the result.
std::string CacheKey(const std::string& source, const LoadOptions& o) {
  uint64_t h = HashString(0, source);
  h = MixKey(h, o.add_reverse_edges, o.remove_self_loops, o.deduplicate);
  h = HashString(h, o.split);
  h = MixKey(h, io::kCacheVersion);
  if (!IsGeneratorSpec(source)) {
    std::error_code ec;
    std::vector<std::string> entries;
    if (io::IsDirectory(source)) {
      for (auto it = std::filesystem::recursive_directory_iterator(source, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        entries.push_back(it->path().string());
      }
    } else {
      entries.push_back(source);
    }
    std::sort(entries.begin(), entries.end());
    for (const std::string& e : entries) {
      struct stat st;
      if (::stat(e.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      h = HashString(h, e);
      h = MixKey(h, static_cast<uint64_t>(st.st_size), static_cast<uint64_t>(st.st_mtim.tv_sec),
                 static_cast<uint64_t>(st.st_mtim.tv_nsec));
    }
  }
  return absl::StrFormat("%016x", h);
}

std::mutex& MemoryDatasetsMutex() {
  static std::mutex mu;
  return mu;
}

std::map<std::string, Dataset>& MemoryDatasets() {
  static auto* datasets = new std::map<std::string, Dataset>;  // never destroyed: no exit order
  return *datasets;
}

absl::StatusOr<Dataset> FindMemoryDataset(const std::string& src) {
  const std::string name = src.substr(std::string(kMemoryDatasetPrefix).size());
  std::lock_guard<std::mutex> lock(MemoryDatasetsMutex());
  auto it = MemoryDatasets().find(name);
  if (it == MemoryDatasets().end()) {
    return absl::NotFoundError(absl::StrCat(src, ": no in-memory dataset of this name (", MemoryDatasets().size(),
                                            " registered)"));
  }
  return it->second;  // shares the tensors
}

absl::StatusOr<Dataset> LoadUncached(const std::string& src, const LoadOptions& options) {
  if (src.rfind(kMemoryDatasetPrefix, 0) == 0) return FindMemoryDataset(src);
  if (IsGeneratorSpec(src)) return GenerateFromSpec(src);
  if (EndsWith(src, ".fgc")) {
    FG_ASSIGN_OR_RETURN(Dataset ds, io::ReadCache(src));
    if (ds.part) {
      return absl::FailedPreconditionError(absl::StrCat(
          src, ": is part ", ds.part->index, " of a partitioned dataset; use its directory"));
    }
    return ds;
  }
  if (io::IsDirectory(src)) {
    if (io::PathExists(io::JoinPath(src, kPartitionedDatasetMeta))) {
      return absl::FailedPreconditionError(absl::StrCat(
          src, ": is a partitioned dataset, read one part per worker (train with as many workers as "
               "it has parts; `flexgraph info` describes it)"));
    }
    if (io::IsOgbDirectory(src)) return io::LoadOgb(src, options);
    if (io::IsNpyDirectory(src)) return io::LoadNpyDirectory(src);
    if (io::IsTrackmlDirectory(src)) return io::LoadTrackmlDirectory(src);
    return absl::NotFoundError(absl::StrCat(
        src, ": not a dataset directory (no raw/num-node-list.csv.gz, raw/num-node-dict.csv.gz, ",
        "indptr.npy or event*-hits.csv)"));
  }
  if (!io::PathExists(src)) {
    return absl::NotFoundError(absl::StrCat(
        src, ": no such dataset (expected a directory in the OGB raw layout, an edge list, a .fgc "
             "cache or a generator spec such as sbm:nodes=20000,classes=8,features=64)"));
  }
  return io::LoadEdgeList(src, options);
}

}  // namespace

int PartInfo::Owner(int type, int64_t id) const {
  const std::vector<int64_t>& b = bounds[type];
  return static_cast<int>(std::upper_bound(b.begin(), b.end(), id) - b.begin()) - 1;
}

Tensor PartInfo::SourceRows(const std::string& type) const {
  const Tensor& ids = original_ids.at(type);
  Tensor rows = Tensor::Empty({ids.numel()}, DType::kInt32);
  for (int64_t k = 0; k < ids.numel(); ++k) rows.i32()[k] = static_cast<int32_t>(ids.i64()[k]);
  return rows;
}

std::string Dataset::LabeledType() const {
  if (labels.size() == 1) return labels.begin()->first;
  if (labels.count("node") != 0) return "node";
  if (splits.size() == 1) return splits.begin()->first;
  if (!labels.empty()) return labels.begin()->first;
  if (splits.empty() && edge_splits.size() == 1) {  // link prediction: the links' destinations
    if (const Relation* r = graph.FindRelation(edge_splits.begin()->first)) return r->dst_type;
  }
  return "node";
}

absl::Status KeepTrainingEdges(Dataset* dataset, const std::string& key) {
  HeteroGraph& g = dataset->graph;
  const Relation* found = g.FindRelation(key);
  auto split = dataset->edge_splits.find(key);
  if (found == nullptr || found->Key() != key || split == dataset->edge_splits.end()) {
    return absl::InvalidArgumentError(absl::StrCat("relation ", key, ": no such relation with an edge split"));
  }
  const Tensor& train = split->second.train;
  const int64_t m = train.defined() ? train.dim(0) : 0;
  if (m > 0 && (train.rank() != 2 || train.dim(1) != 2 || train.dtype() != DType::kInt64)) {
    return absl::InvalidArgumentError(absl::StrCat("split of ", key, " (train): expected int64 (src, dst) pairs"));
  }
  Relation* rel = &g.relations[found - g.relations.data()];
  std::vector<int64_t> src(m), dst(m);
  for (int64_t k = 0; k < m; ++k) {
    src[k] = train.i64()[2 * k];
    dst[k] = train.i64()[2 * k + 1];
  }
  CsrBuildOptions build;
  build.deduplicate = true;
  build.add_reverse_edges = rel->symmetric;
  FG_ASSIGN_OR_RETURN(Relation rebuilt,
                      BuildRelation(rel->src_type, rel->name, rel->dst_type, g.NumNodes(rel->src_type),
                                    g.NumNodes(rel->dst_type), src.data(), dst.data(), m, nullptr,
                                    Tensor(), build));
  const bool int32 = !rel->by_dst.has_int64_indices();
  *rel = std::move(rebuilt);
  if (int32) FG_RETURN_IF_ERROR(g.ToInt32Indices());
  return absl::OkStatus();
}

size_t Dataset::Bytes() const {
  size_t bytes = graph.Bytes();
  for (const auto& [t, f] : features) bytes += f.nbytes();
  for (const auto& [t, l] : labels) bytes += l.nbytes();
  for (const auto& [t, s] : splits) {
    for (const Tensor* p : {&s.train, &s.valid, &s.test}) bytes += p->defined() ? p->nbytes() : 0;
  }
  for (const auto& [k, s] : edge_splits) {
    for (const Tensor* p : {&s.train, &s.valid, &s.test}) bytes += p->defined() ? p->nbytes() : 0;
  }
  if (graphs) bytes += graphs->Bytes();
  if (part) {
    for (const auto& [t, ids] : part->original_ids) bytes += ids.nbytes();
    for (const Tensor* p : {&part->halo_ids, &part->halo_in_degrees}) bytes += p->defined() ? p->nbytes() : 0;
  }
  return bytes;
}

absl::StatusOr<Dataset> LoadDataset(const std::string& path_or_spec, const LoadOptions& options) {
  const int saved_threads = NumThreads();
  if (options.threads > 0) SetNumThreads(options.threads);
  struct Restore {
    int threads;
    bool active;
    ~Restore() {
      if (active) SetNumThreads(threads);
    }
  } restore{saved_threads, options.threads > 0};
  std::string src = path_or_spec;
  while (src.size() > 1 && src.back() == '/') src.pop_back();
  if (options.cache_dir.empty() || EndsWith(src, ".fgc") || src.rfind(kMemoryDatasetPrefix, 0) == 0) {
    return LoadUncached(src, options);
  }
  std::string base = src;
  if (IsGeneratorSpec(src)) {
    base = src.substr(0, src.find(':'));
  } else {
    const size_t slash = src.rfind('/');
    if (slash != std::string::npos) base = src.substr(slash + 1);
  }
  const std::string cache =
      io::JoinPath(options.cache_dir, absl::StrCat(base, "-", CacheKey(src, options), ".fgc"));
  if (io::PathExists(cache)) {
    absl::StatusOr<Dataset> ds = io::ReadCache(cache);
    if (ds.ok()) return ds;
    FG_LOG(Warning) << "ignoring unreadable cache: " << ds.status().message();
  }
  FG_ASSIGN_OR_RETURN(Dataset ds, LoadUncached(src, options));
  absl::Status made = io::MakeDirectories(options.cache_dir);
  if (made.ok()) made = io::WriteCache(ds, cache);
  if (!made.ok()) FG_LOG(Warning) << "could not write the dataset cache: " << made.message();
  return ds;
}

void RegisterMemoryDataset(const std::string& name, Dataset dataset) {
  std::lock_guard<std::mutex> lock(MemoryDatasetsMutex());
  MemoryDatasets()[name] = std::move(dataset);
}

void UnregisterMemoryDataset(const std::string& name) {
  Dataset gone;  // destroyed outside the lock (a borrowed tensor's release may take other locks)
  {
    std::lock_guard<std::mutex> lock(MemoryDatasetsMutex());
    auto it = MemoryDatasets().find(name);
    if (it == MemoryDatasets().end()) return;
    gone = std::move(it->second);
    MemoryDatasets().erase(it);
  }
}

std::vector<std::string> NormalizeFeatureRows(Dataset* dataset) {
  std::vector<std::string> skipped;
  for (auto& [type, feat] : dataset->features) {
    if (!feat.defined()) continue;
    const float* f = feat.f32();
    if (!std::all_of(f, f + feat.numel(), [](float v) { return v >= 0; })) {
      skipped.push_back(type);
      continue;
    }
    Tensor y = feat.Clone();
    const int64_t d = y.row_width();
    ParallelFor(0, y.rows(), [&](int64_t i) {
      float* r = y.f32() + i * d;
      double s = 0;
      for (int64_t j = 0; j < d; ++j) s += r[j];
      if (s != 0) {
        const float inv = static_cast<float>(1.0 / s);
        for (int64_t j = 0; j < d; ++j) r[j] *= inv;
      }
    });
    feat = std::move(y);
  }
  return skipped;
}

}  // namespace fg::graph
