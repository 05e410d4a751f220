// Building mini-batch blocks from sampled rows (sampling/sampler.h): the vertex slots that give
// each batch's vertices their table rows, and a layer's blocks built while its rows are drawn.
// Internal to fg_sampling.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "sampling/sampler.h"

namespace fg::sampling {

// The slots of the vertex ids that batches use, one batch at a time (-1: none yet). Where the
// vertex space is small (kDirectVertices), an array indexed by id (a power-law graph's hubs, often
// numbered first, share a few hot lines); otherwise a map whose memory follows the ids (open
// addressing, linear probing, at least twice the cells of the ids reserved): an array over a large
// vertex space costs its size in memory and, each time a slot set is made, in time (made per call,
// on an 8M-vertex graph, sampling one batch at a time ran 20x slower). Ids are below 2^31 (the
// matrices' int32 column ids).
class VertexSlots {
  struct Cell {
    int32_t id, slot;
  };
  static constexpr int64_t kDirectVertices = int64_t{1} << 22;  // 16 MiB of slots

 public:
  // Views for the loops that look up ids: slots[v] is the slot of id v, -1 where it has none yet
  // (the caller then sets it).
  struct Direct {
    int32_t* array;
    int32_t& operator[](int32_t v) const { return array[v]; }
    void Prefetch(int32_t v) const { __builtin_prefetch(array + v); }
  };
  struct Map {
    Cell* cells;
    uint64_t mask;
    int shift;
    uint64_t* used;  // cells taken, *num_used of them
    int64_t* num_used;
    uint64_t Hash(int32_t v) const {
      return (static_cast<uint64_t>(static_cast<uint32_t>(v)) * 0x9E3779B97F4A7C15ull) >> shift;
    }
    int32_t& operator[](int32_t v) const {
      uint64_t h = Hash(v);
      while (cells[h].id != v) {
        if (cells[h].id < 0) {
          cells[h].id = v;
          used[(*num_used)++] = h;
          break;
        }
        h = (h + 1) & mask;
      }
      return cells[h].slot;
    }
    void Prefetch(int32_t v) const { __builtin_prefetch(cells + Hash(v)); }
  };

  // For batches from a space of `num_vertices`.
  void Prepare(int64_t num_vertices) {
    direct_ = num_vertices <= kDirectVertices;
    if (direct_ && static_cast<int64_t>(array_.size()) < num_vertices)
      array_.assign(num_vertices, -1);
  }
  // A batch of at most `n` distinct ids (the map holds no more): Begin, then any number of With
  // calls, which call f(Direct) or f(Map), then End with every id looked up, which empties the
  // slots.
  void Begin(int64_t n) {
    num_used_ = 0;
    if (direct_) return;
    int bits = 10;
    while ((int64_t{1} << bits) < 2 * n) ++bits;
    if ((size_t{1} << bits) > cells_.size()) {
      cells_.assign(size_t{1} << bits, Cell{-1, -1});
      used_.resize(cells_.size() / 2);
    }
    bits_ = bits;
  }
  template <typename F>
  void With(F&& f) {
    if (direct_) {
      f(Direct{array_.data()});
    } else {
      f(Map{cells_.data(), (uint64_t{1} << bits_) - 1, 64 - bits_, used_.data(), &num_used_});
    }
  }
  template <typename Ids>
  void End(const Ids& ids) {
    if (direct_) {
      for (auto v : ids) array_[v] = -1;
    } else {
      for (int64_t k = 0; k < num_used_; ++k) cells_[used_[k]] = Cell{-1, -1};
    }
  }
  template <typename F, typename Ids>
  void ForBatch(int64_t n, F&& f, const Ids& ids) {
    Begin(n);
    With(f);
    End(ids);
  }

 private:
  bool direct_ = false;
  std::vector<int32_t> array_;
  std::vector<Cell> cells_;
  std::vector<uint64_t> used_;
  int bits_ = 10;
  int64_t num_used_ = 0;
};

// VertexSlots kept between calls (each is empty between batches), so that a call, and sampling one
// batch at a time, initialises no array or map once the pool is warm. Thread-safe.
class PooledSlots {
 public:
  explicit PooledSlots(int n);
  ~PooledSlots();
  VertexSlots& operator[](int i) { return *slots_[i]; }

 private:
  std::vector<std::unique_ptr<VertexSlots>> slots_;
};

// One layer's blocks, built from the batches' sampled rows while they are drawn: the layer step
// reports rows as they become final (Ready, from any thread), and Finish builds what is left.
// Builder b takes batches b, b + B, b + 2B, ... in order (B builders: rows arrive in stacked
// order, so that every builder has work while they do) and each batch's entries in order,
// one thread at a time (whichever finds them ready), so that a block is the same however its rows
// arrive: its table is the frontier, then the sampled vertices new to it in order of first
// appearance, and its HDG is over the table. Sampling one batch at a time, its block is built by
// one thread while the others draw its rows. Stacked row base[k] + j is batch k's row j.
class LayerBlocks {
 public:
  // Blocks of layer `layer` of matrix `a` for `frontier` (one per batch) into out[k].blocks[layer],
  // from `sampled` (filled by the layer step; read once rows are ready).
  LayerBlocks(const NeighbourhoodMatrix& a, int layer,
              const std::vector<std::vector<int64_t>>& frontier,
              const std::vector<SampledRows>& sampled, std::vector<MiniBatch>* out);
  // A layer step that failed may leave batches begun: their slots are emptied.
  ~LayerBlocks();

  // Stacked rows [begin, end) are final: their cols and weights written, and every batch's
  // offsets. Builds what they complete where their builder is free.
  void Ready(int64_t begin, int64_t end);
  // Every row is final: builds the rest of the blocks (in parallel over builders) and hands each
  // batch's table out as its next frontier.
  void Finish(std::vector<std::vector<int64_t>>* next);

 private:
  struct Builder {
    std::mutex mu;  // held by the thread that builds
    std::mutex ready_mu;
    std::map<int64_t, int64_t> ready;  // ready rows not yet added: (first stacked row, end), per batch
    int64_t k = 0;         // the next batch to build
    int64_t row = 0;       // the next stacked row to add
    bool started = false;  // whether batch k is begun
    Tensor children;       // batch k's entries' rows of its table
    VertexSlots* slots = nullptr;
  };

  // Adds the rows that are ready (all: every row) to the builder's blocks, unless another thread
  // is at it.
  void Drive(Builder& b, bool all);
  // Appends the ids of entries [e0, e1) new to the table, in order, and sets their children.
  static void Append(int64_t e0, int64_t e1, const SampledRows& s, std::vector<int64_t>* table,
                     Builder& b);
  Block MakeBlock(const std::vector<int64_t>& table, const SampledRows& s, Tensor children) const;

  const NeighbourhoodMatrix& a_;
  const int layer_;
  const std::vector<std::vector<int64_t>>& frontier_;
  const std::vector<SampledRows>& sampled_;
  std::vector<MiniBatch>& out_;
  const int64_t K_;
  std::vector<int64_t> base_;
  std::vector<std::vector<int64_t>> tables_;
  std::unique_ptr<Builder[]> builders_;
  int num_builders_ = 0;
  std::unique_ptr<PooledSlots> slots_;
  std::vector<int> builder_of_;  // per batch
};

}  // namespace fg::sampling
