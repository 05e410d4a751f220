#include "sampling/blocks.h"

#include <algorithm>
#include <exception>
#include <numeric>

#include "flexgraph/base/parallel.h"
#include "hdg/builder.h"

namespace fg::sampling {
namespace {

std::mutex& PoolMu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
std::vector<std::unique_ptr<VertexSlots>>& FreeSlots() {
  static auto* pool = new std::vector<std::unique_ptr<VertexSlots>>;
  return *pool;
}

}  // namespace

PooledSlots::PooledSlots(int n) {
  std::lock_guard<std::mutex> lock(PoolMu());
  for (int i = 0; i < n; ++i) {
    if (FreeSlots().empty()) {
      slots_.push_back(std::make_unique<VertexSlots>());
    } else {
      slots_.push_back(std::move(FreeSlots().back()));
      FreeSlots().pop_back();
    }
  }
}

PooledSlots::~PooledSlots() {
  if (std::uncaught_exceptions() > 0) return;  // a batch may have left slots set
  std::lock_guard<std::mutex> lock(PoolMu());
  for (auto& s : slots_) FreeSlots().push_back(std::move(s));
}

LayerBlocks::LayerBlocks(const NeighbourhoodMatrix& a, int layer,
                         const std::vector<std::vector<int64_t>>& frontier,
                         const std::vector<SampledRows>& sampled, std::vector<MiniBatch>* out)
    : a_(a), layer_(layer), frontier_(frontier), sampled_(sampled), out_(*out),
      K_(static_cast<int64_t>(frontier.size())), base_(K_ + 1, 0), tables_(K_) {
  for (int64_t k = 0; k < K_; ++k) base_[k + 1] = base_[k] + static_cast<int64_t>(frontier[k].size());
  num_builders_ = static_cast<int>(std::min<int64_t>(std::max<int64_t>(K_, 1), NumThreads()));
  builders_ = std::make_unique<Builder[]>(num_builders_);
  slots_ = std::make_unique<PooledSlots>(num_builders_);
  for (int b = 0; b < num_builders_; ++b) {
    Builder& x = builders_[b];
    x.k = b;
    x.row = base_[b];
    x.slots = &(*slots_)[b];
    x.slots->Prepare(a.num_vertices());
  }
  builder_of_.resize(K_);
  for (int64_t k = 0; k < K_; ++k) builder_of_[k] = static_cast<int>(k % num_builders_);
}

LayerBlocks::~LayerBlocks() {
  for (int b = 0; b < num_builders_; ++b) {
    if (builders_[b].started) builders_[b].slots->End(tables_[builders_[b].k]);
  }
}

void LayerBlocks::Ready(int64_t begin, int64_t end) {
  if (begin >= end) return;
  int64_t k = std::upper_bound(base_.begin(), base_.end(), begin) - base_.begin() - 1;
  int last_builder = -1;
  for (int64_t at = begin; at < end; ++k) {  // one range per batch
    const int64_t stop = std::min(end, base_[k + 1]);
    if (stop == at) continue;  // an empty batch
    {
      Builder& b = builders_[builder_of_[k]];
      std::lock_guard<std::mutex> lock(b.ready_mu);
      b.ready.emplace(at, stop);
    }
    at = stop;
    if (builder_of_[k] != last_builder) {
      if (last_builder >= 0) Drive(builders_[last_builder], false);
      last_builder = builder_of_[k];
    }
  }
  if (last_builder >= 0) Drive(builders_[last_builder], false);
}

void LayerBlocks::Finish(std::vector<std::vector<int64_t>>* next) {
  ParallelFor(0, num_builders_, [&](int64_t b) { Drive(builders_[b], true); });
  next->swap(tables_);
}

void LayerBlocks::Drive(Builder& b, bool all) {
  std::unique_lock<std::mutex> lock(b.mu, std::try_to_lock);
  if (!lock.owns_lock()) return;
  for (; b.k < K_; b.k += num_builders_, b.started = false) {
    const int64_t k = b.k;
    const SampledRows& s = sampled_[k];
    std::vector<int64_t>& table = tables_[k];
    if (!b.started) {
      const int64_t n = static_cast<int64_t>(frontier_[k].size());
      const int64_t nnz = s.offsets.back();
      table.reserve(n + nnz);
      table.assign(frontier_[k].begin(), frontier_[k].end());
      b.children = Tensor::Empty({nnz}, DType::kInt32);
      b.slots->Begin(n + nnz);
      b.slots->With([&](auto slots) {
        for (int64_t j = 0; j < n; ++j) slots[static_cast<int32_t>(table[j])] = static_cast<int32_t>(j);
      });
      b.started = true;
    }
    while (b.row < base_[k + 1]) {
      int64_t stop = base_[k + 1];
      if (!all) {
        std::lock_guard<std::mutex> ready_lock(b.ready_mu);
        auto it = b.ready.find(b.row);
        if (it == b.ready.end()) return;  // not yet drawn
        stop = it->second;
        b.ready.erase(it);
      }
      Append(s.offsets[b.row - base_[k]], s.offsets[stop - base_[k]], s, &table, b);
      b.row = stop;
    }
    b.slots->End(table);
    if (k + num_builders_ < K_) b.row = base_[k + num_builders_];
    out_[k].blocks[layer_] = MakeBlock(table, s, std::move(b.children));
    out_[k].sampled_edges += s.offsets.back();
  }
}

void LayerBlocks::Append(int64_t e0, int64_t e1, const SampledRows& s, std::vector<int64_t>* table,
                         Builder& b) {
  int32_t* child = b.children.i32();
  const int32_t* cols = s.cols.data();
  b.slots->With([&](auto slots) {
    for (int64_t e = e0; e < e1; ++e) {
      if (e + 32 < e1) slots.Prefetch(cols[e + 32]);
      int32_t& at = slots[cols[e]];
      if (at < 0) {
        at = static_cast<int32_t>(table->size());
        table->push_back(cols[e]);
      }
      child[e] = at;
    }
  });
}

Block LayerBlocks::MakeBlock(const std::vector<int64_t>& table, const SampledRows& s,
                             Tensor children) const {
  const hdg::SchemaTree& schema = a_.schema();
  const int64_t n = static_cast<int64_t>(s.offsets.size()) - 1;
  Tensor roots = Tensor::Empty({n}, DType::kInt32);
  std::iota(roots.i32(), roots.i32() + n, 0);
  Tensor weights = schema.weighted() ? Tensor::FromVector(s.weights) : Tensor();
  Block block;
  block.table = Tensor::FromVector(table);
  block.hdg = std::make_shared<const hdg::Hdg>(
      hdg::FlatHdg(schema, static_cast<int64_t>(table.size()), std::move(roots),
                   Tensor::FromVector(s.offsets), std::move(children), std::move(weights)));
  return block;
}

}  // namespace fg::sampling
