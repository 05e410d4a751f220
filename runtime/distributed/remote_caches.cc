#include "runtime/distributed/remote_caches.h"

#include <algorithm>
#include <tuple>

#include "runtime/distributed/exchange.h"

namespace fg::runtime {
namespace {

// The counted ids (id, count, bytes), most counted first (ties: the lower id), each taken where it
// fits what `budget` has left; ascending.
std::vector<int64_t> MostCountedThatFit(std::vector<std::tuple<int64_t, int64_t, int64_t>> counted, int64_t budget) {
  std::sort(counted.begin(), counted.end(), [](const auto& a, const auto& b) {
    return std::get<1>(a) != std::get<1>(b) ? std::get<1>(a) > std::get<1>(b) : std::get<0>(a) < std::get<0>(b);
  });
  std::vector<int64_t> ids;
  for (const auto& [id, count, bytes] : counted) {
    if (bytes > budget) continue;
    budget -= bytes;
    ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// A (layer, vertex) key: vertices are below 2^31 (the matrices' int32 column ids), layers below 2^8.
int64_t NeighbourhoodKey(int layer, int64_t v) { return (v << 8) | layer; }

}  // namespace

// The chosen ids' positions, and their rows and keys once kept.
struct RemoteRowCache::Chosen {
  explicit Chosen(const std::vector<int64_t>& ids, int64_t width)
      : position(ids.data(), static_cast<int64_t>(ids.size())),
        rows(ids.size() * width),
        keys(ids.size()),
        kept(ids.size(), 0) {}
  IdPositions position;
  std::vector<float> rows;
  std::vector<int64_t> keys;
  std::vector<uint8_t> kept;
};

RemoteRowCache::RemoteRowCache(int64_t budget_bytes, int64_t width)
    : width_(width),
      capacity_(std::max<int64_t>(0, budget_bytes) / static_cast<int64_t>(width * sizeof(float) + sizeof(int64_t))) {}

RemoteRowCache::~RemoteRowCache() = default;

void RemoteRowCache::BeginBulk(int epoch) {
  if (epoch != epoch_) {
    fetched_ = cached_ = 0;
    epoch_ = epoch;
  }
  if (capacity_ == 0) return;
  if (counting_epoch_ < 0) {
    counting_epoch_ = epoch;
    counts_ = std::make_unique<std::unordered_map<int64_t, int64_t>>();
  } else if (epoch != counting_epoch_ && chosen_ == nullptr) {
    std::vector<std::tuple<int64_t, int64_t, int64_t>> counted;  // (id, count, one row)
    for (const auto& [id, count] : *counts_) counted.emplace_back(id, count, 1);
    counts_.reset();
    chosen_ = std::make_unique<Chosen>(MostCountedThatFit(std::move(counted), capacity_), width_);
  }
}

void RemoteRowCache::Count(const std::vector<int64_t>& ids) {
  if (counts_ == nullptr) return;
  const size_t most = static_cast<size_t>(8 * capacity_);
  for (int64_t v : ids) {
    if (auto it = counts_->find(v); it != counts_->end()) {
      ++it->second;
    } else if (counts_->size() < most) {
      counts_->emplace(v, 1);
    }
  }
}

const float* RemoteRowCache::Find(int64_t id, int64_t* key) const {
  if (chosen_ == nullptr) return nullptr;
  const int64_t at = chosen_->position.Of(id);
  if (at < 0 || !chosen_->kept[at]) return nullptr;
  *key = chosen_->keys[at];
  return chosen_->rows.data() + at * width_;
}

void RemoteRowCache::Keep(int64_t id, int64_t key, const float* row) {
  if (chosen_ == nullptr) return;
  const int64_t at = chosen_->position.Of(id);
  if (at < 0 || chosen_->kept[at]) return;
  std::copy(row, row + width_, chosen_->rows.data() + at * width_);
  chosen_->keys[at] = key;
  chosen_->kept[at] = 1;
}

RemoteNeighbourhoodCache::RemoteNeighbourhoodCache(int64_t budget_bytes) : budget_(std::max<int64_t>(0, budget_bytes)) {}

RemoteNeighbourhoodCache::~RemoteNeighbourhoodCache() = default;

void RemoteNeighbourhoodCache::BeginBulk(int epoch) {
  if (epoch != epoch_) {
    fetched_ = cached_ = 0;
    epoch_ = epoch;
  }
  if (budget_ == 0) return;
  if (counting_epoch_ < 0) {
    counting_epoch_ = epoch;
    counts_ = std::make_unique<std::unordered_map<int64_t, std::pair<int64_t, int64_t>>>();
  } else if (epoch != counting_epoch_ && chosen_ == nullptr) {
    std::vector<std::tuple<int64_t, int64_t, int64_t>> counted;
    for (const auto& [key, c] : *counts_) counted.emplace_back(key, c.first, c.second);
    counts_.reset();
    chosen_ = std::make_unique<std::unordered_map<int64_t, Kept>>();
    for (int64_t key : MostCountedThatFit(std::move(counted), budget_)) (*chosen_)[key];
  }
}

bool RemoteNeighbourhoodCache::Find(int layer, int64_t v, Row* row) const {
  if (chosen_ == nullptr) return false;
  auto it = chosen_->find(NeighbourhoodKey(layer, v));
  if (it == chosen_->end() || !it->second.kept) return false;
  const Kept& k = it->second;
  *row = Row{k.cols.data(), k.weighted ? k.weights.data() : nullptr, static_cast<int64_t>(k.cols.size()), k.own};
  return true;
}

void RemoteNeighbourhoodCache::Fetched(int layer, int64_t v, const Row& row) {
  const int64_t key = NeighbourhoodKey(layer, v);
  if (counts_ != nullptr) {
    const int64_t bytes = 64 + row.size * static_cast<int64_t>(sizeof(int32_t) + (row.weights != nullptr ? sizeof(float) : 0));
    if (auto it = counts_->find(key); it != counts_->end()) {
      ++it->second.first;
    } else if (static_cast<int64_t>(counts_->size()) < std::max<int64_t>(1024, budget_ / 64)) {
      counts_->emplace(key, std::pair<int64_t, int64_t>(1, bytes));
    }
  }
  if (chosen_ == nullptr) return;
  auto it = chosen_->find(key);
  if (it == chosen_->end() || it->second.kept) return;
  Kept& k = it->second;
  k.kept = true;
  k.own = row.own;
  k.weighted = row.weights != nullptr;
  k.cols.assign(row.cols, row.cols + row.size);
  if (k.weighted) k.weights.assign(row.weights, row.weights + row.size);
}

}  // namespace fg::runtime
