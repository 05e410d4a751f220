// Other workers' rows kept between bulks of a distributed mini-batch run, chosen by pre-sampling
// (as GNNLab's cache): while counting (the first epoch this process samples), the rows each bulk
// reads from other workers are counted; at the first bulk of a later epoch, the most counted ones
// (ties: the lower id) that fit the budget are chosen, and each chosen row is kept once fetched.
// Later bulks fetch only the rows not kept. The rows are constant: the batches are the same with or
// without a cache. Thread-compatible (the sampling thread).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace fg::runtime {

// Other workers' input rows (features and randomness keys): each bulk's distinct remote input
// vertices are counted, the first 8 x capacity() distinct ones seen (counting's memory follows the
// budget, not the graph).
class RemoteRowCache {
 public:
  RemoteRowCache(int64_t budget_bytes, int64_t width);
  RemoteRowCache(const RemoteRowCache&) = delete;
  RemoteRowCache& operator=(const RemoteRowCache&) = delete;
  ~RemoteRowCache();

  // The most rows it keeps.
  int64_t capacity() const { return capacity_; }
  // Before a bulk of `epoch` (epochs ascend): counting, choosing, and the epoch's statistics.
  void BeginBulk(int epoch);
  // A bulk's distinct remote input vertices (ascending), counted while counting.
  void Count(const std::vector<int64_t>& ids);
  // The kept row (width floats) and key of `id`; null where it is not kept.
  const float* Find(int64_t id, int64_t* key) const;
  // Keeps `row` and `key` as id's if id was chosen and is not kept yet.
  void Keep(int64_t id, int64_t key, const float* row);
  // A bulk's remote rows: fetched from their owners, and read from the cache.
  void Record(int64_t fetched, int64_t cached) {
    fetched_ += fetched;
    cached_ += cached;
  }
  // Their sums over the bulks of the latest epoch.
  int64_t rows_fetched() const { return fetched_; }
  int64_t rows_cached() const { return cached_; }

 private:
  struct Chosen;
  int64_t width_, capacity_;
  int counting_epoch_ = -1, epoch_ = -1;
  std::unique_ptr<std::unordered_map<int64_t, int64_t>> counts_;
  std::unique_ptr<Chosen> chosen_;
  int64_t fetched_ = 0, cached_ = 0;
};

// Other workers' neighbourhood rows (a layer's matrix row of a vertex: its columns, weights and own
// entry), which LADIES leaders fetch for their frontiers (layer_wise_sampling.cc); counted while
// counting, at most max(1024, budget / 64) distinct ones, with their sizes.
class RemoteNeighbourhoodCache {
 public:
  explicit RemoteNeighbourhoodCache(int64_t budget_bytes);
  RemoteNeighbourhoodCache(const RemoteNeighbourhoodCache&) = delete;
  RemoteNeighbourhoodCache& operator=(const RemoteNeighbourhoodCache&) = delete;
  ~RemoteNeighbourhoodCache();

  struct Row {
    const int32_t* cols = nullptr;
    const float* weights = nullptr;  // null: unweighted
    int64_t size = 0;
    int32_t own = -1;  // the position of its root's own entry, -1: none
  };
  // Before a bulk of `epoch` (epochs ascend): counting, choosing, and the epoch's statistics.
  void BeginBulk(int epoch);
  // Vertex v's kept row of layer `layer`; false where it is not kept.
  bool Find(int layer, int64_t v, Row* row) const;
  // A row fetched from its owner: counted while counting, kept if chosen and not kept yet.
  void Fetched(int layer, int64_t v, const Row& row);
  // A bulk's remote entries: fetched from their owners, and read from the cache.
  void Record(int64_t fetched, int64_t cached) {
    fetched_ += fetched;
    cached_ += cached;
  }
  // Their sums over the bulks of the latest epoch.
  int64_t entries_fetched() const { return fetched_; }
  int64_t entries_cached() const { return cached_; }

 private:
  struct Kept {
    bool kept = false;
    int32_t own = -1;
    bool weighted = false;
    std::vector<int32_t> cols;
    std::vector<float> weights;
  };
  int64_t budget_;
  int counting_epoch_ = -1, epoch_ = -1;
  std::unique_ptr<std::unordered_map<int64_t, std::pair<int64_t, int64_t>>> counts_;  // key -> (count, bytes)
  std::unique_ptr<std::unordered_map<int64_t, Kept>> chosen_;
  int64_t fetched_ = 0, cached_ = 0;
};

}  // namespace fg::runtime
