// Exchange planning: ownership lookups, each layer's per-peer choice between row fetch and partial
// aggregation with the index lists exchanged once, and the all-rows exchange (runtime/distributed/exchange.h).
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/ops/ops.h"
#include "runtime/distributed/exchange.h"

namespace fg::runtime {
namespace {

// Tag phase of the index lists exchanged while planning.
constexpr int kPhaseSetup = 8;

// A message of int64 words.
std::string Words(const std::vector<int64_t>& w) {
  return std::string(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(int64_t));
}

SparseMatrixPtr MakeMatrix(int64_t rows, int64_t cols, std::vector<int64_t> off,
                           std::vector<int32_t> idx, std::vector<float> w) {
  Csr c = Csr::FromVectors(rows, cols, off, idx, w);
  return std::make_shared<SparseMatrix>(std::move(c));
}

// The peers' lists concatenated in rank order (LayerExchange::send_index and the others).
void ConcatenatePeers(LayerExchange* ex) {
  std::vector<int32_t> send, targets;
  std::vector<int64_t> off = {0};
  std::vector<int32_t> cols;
  std::vector<float> values;
  bool weighted = false;
  for (const PeerExchange& pe : ex->peers) weighted = weighted || (pe.send_partial && pe.send_partial->csr().val());
  for (const PeerExchange& pe : ex->peers) {
    if (pe.send_rows.defined()) send.insert(send.end(), pe.send_rows.i32(), pe.send_rows.i32() + pe.send_rows.numel());
    if (pe.recv_targets.defined()) {
      targets.insert(targets.end(), pe.recv_targets.i32(), pe.recv_targets.i32() + pe.recv_targets.numel());
    }
    if (pe.send_partial == nullptr) continue;
    const Csr& c = pe.send_partial->csr();
    for (int64_t r = 0; r < c.num_rows; ++r) off.push_back(off.back() + c.degree(r));
    cols.insert(cols.end(), c.col(), c.col() + c.nnz());
    for (int64_t k = 0; weighted && k < c.nnz(); ++k) values.push_back(c.val() ? c.val()[k] : 1.0f);
  }
  ex->send_index = Tensor::FromVector(send);
  ex->recv_target_index = Tensor::FromVector(targets);
  ex->send_grouping = std::make_shared<SparseMatrix>(ops::GroupByIndex(ex->send_index, ex->num_owned));
  ex->recv_grouping = std::make_shared<SparseMatrix>(ops::GroupByIndex(ex->recv_target_index, ex->num_roots));
  ex->send_partials = off.size() > 1 ? std::make_shared<SparseMatrix>(Csr::FromVectors(
                                           static_cast<int64_t>(off.size()) - 1, ex->num_owned, off, cols, values))
                                     : nullptr;
}

}  // namespace

std::vector<float> EntryWeights(const hdg::HdgLevel& l, const nau::Aggregator& agg) {
  const Csr& c = l.csr();
  std::vector<float> w(c.nnz(), 1.0f);
  for (int64_t r = 0; r < c.num_rows; ++r) {
    const int64_t lo = c.row_ptr()[r], hi = c.row_ptr()[r + 1];
    double total = 0;
    for (int64_t e = lo; e < hi; ++e) {
      if (agg.reduction() == nau::Reduction::kWeightedSum) w[e] = l.weights.f32()[e];
      total += w[e];
    }
    float scale = 1.0f;
    if (agg.reduction() == nau::Reduction::kMean && hi > lo) scale = 1.0f / (hi - lo);
    if (agg.reduction() == nau::Reduction::kWeightedSum && agg.normalize_weights()) {
      scale = total > 0 ? static_cast<float>(1.0 / total) : 0.0f;
    }
    for (int64_t e = lo; e < hi; ++e) w[e] *= scale;
  }
  return w;
}

bool ParseExchangeMode(const std::string& s, ExchangeMode* out) {
  if (s == "auto" || s == "1d") *out = ExchangeMode::kAuto;
  else if (s == "rows") *out = ExchangeMode::kRowFetch;
  else if (s == "partial") *out = ExchangeMode::kPartial;
  else return false;
  return true;
}

absl::Status ParseExchange(const std::string& s, ExchangeMode* mode, grid::GridSpec* grid) {
  *grid = grid::GridSpec();
  if (ParseExchangeMode(s, mode)) return absl::OkStatus();
  if (grid::IsGridSpec(s)) {
    FG_ASSIGN_OR_RETURN(*grid, grid::ParseGridSpec(s));
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("--exchange ", s, ": takes auto, 1d, rows, partial or a process grid (",
                                                 "1.5d:c=C, 2d, 2d:PRxPC, 3d, 3d:PRxPCxPF, each optionally ,oblivious)"));
}

Ownership::Ownership(std::vector<int32_t> owners)
    : num_vertices_(static_cast<int64_t>(owners.size())), table_(std::move(owners)) {}

Ownership::Ownership(const nau::VertexSpace& space, const std::vector<std::vector<int64_t>>& bounds)
    : num_vertices_(space.size()) {
  for (int t = 0; t < space.num_types(); ++t) {
    const std::vector<int64_t>& b = bounds[t];
    for (size_t p = 0; p + 1 < b.size(); ++p) {
      if (b[p] == b[p + 1]) continue;
      block_start_.push_back(space.type_offset(t) + b[p]);
      block_owner_.push_back(static_cast<int32_t>(p));
    }
  }
}

int Ownership::Of(int64_t v) const {
  if (!table_.empty()) return table_[v];
  const auto it = std::upper_bound(block_start_.begin(), block_start_.end(), v);
  return block_owner_[it - block_start_.begin() - 1];
}

IdPositions::IdPositions(const int64_t* ids, int64_t n) {
  for (int64_t k = 0; k < n && run_start_.size() <= kMaxRuns; ++k) {
    if (k == 0 || ids[k] != ids[k - 1] + 1) {
      run_start_.push_back(ids[k]);
      run_first_.push_back(k);
    }
  }
  run_first_.push_back(n);
  if (run_start_.size() <= kMaxRuns) return;
  run_start_.clear();
  run_first_.clear();
  int bits = 4;
  while ((int64_t{1} << bits) < 2 * n) ++bits;
  shift_ = 64 - bits;
  mask_ = (uint64_t{1} << bits) - 1;
  cells_.assign(size_t{1} << bits, Cell{-1, -1});
  for (int64_t k = 0; k < n; ++k) {
    uint64_t h = Hash(ids[k]);
    while (cells_[h].id >= 0) h = (h + 1) & mask_;
    cells_[h] = Cell{ids[k], k};
  }
}

int64_t IdPositions::Of(int64_t id) const {
  if (id < 0) return -1;
  if (cells_.empty()) {
    const auto it = std::upper_bound(run_start_.begin(), run_start_.end(), id);
    if (it == run_start_.begin()) return -1;
    const size_t r = it - run_start_.begin() - 1;
    const int64_t at = run_first_[r] + (id - run_start_[r]);
    return at < run_first_[r + 1] ? at : -1;
  }
  for (uint64_t h = Hash(id);; h = (h + 1) & mask_) {
    if (cells_[h].id == id) return cells_[h].pos;
    if (cells_[h].id < 0) return -1;
  }
}

absl::StatusOr<LayerExchange> BuildLayerExchange(Communicator& comm, const hdg::Hdg& hdg,
                                                 const nau::Aggregator& level1,
                                                 const Ownership& owners,
                                                 const Tensor& table_ids, int layer, int epoch,
                                                 ExchangeMode mode, bool every_entry) {
  const int me = comm.rank(), P = comm.size();
  const hdg::HdgLevel& l1 = hdg.level(1);
  const Csr& c = l1.csr();
  const int64_t* tid = table_ids.i64();
  const int64_t n_owned = table_ids.numel();
  const IdPositions owned(tid, n_owned);
  auto local_of = [&](int64_t g) { return owned.Of(g); };
  LayerExchange ex;
  ex.layer = layer;
  ex.num_owned = n_owned;
  ex.num_roots = hdg.num_roots();
  const bool flat = !every_entry && hdg.num_levels() == 1 && level1.decomposable() &&
                    level1.reduction() != nau::Reduction::kMax;
  ex.partial_path = flat;
  const std::vector<float> w = flat ? EntryWeights(l1, level1) : std::vector<float>();

  // Remote entries per peer: (row, global child, entry).
  struct Remote {
    int64_t row, child, entry;
  };
  std::vector<std::vector<Remote>> remote(P);
  for (int64_t r = 0; r < c.num_rows; ++r) {
    for (int64_t e = c.row_ptr()[r]; e < c.row_ptr()[r + 1]; ++e) {
      const int64_t u = c.col()[e];
      if (u < 0 || u >= owners.num_vertices()) {
        return absl::InvalidArgumentError(absl::StrCat("layer ", layer, ": HDG leaf ", u,
                                                       " outside the partition plan"));
      }
      const int o = owners.Of(u);
      if (o != me) remote[o].push_back({r, u, e});
    }
  }
  // Per peer: partial or rows; ghost slots for rows.
  std::vector<int64_t> ghost_ids;
  std::vector<std::vector<int64_t>> requests(P);
  std::vector<std::vector<int64_t>> peer_slot_child(P);  // sorted distinct children per row peer
  ex.peers.resize(P);
  for (int p = 0; p < P; ++p) {
    PeerExchange& pe = ex.peers[p];
    pe.peer = p;
    if (p == me) continue;
    std::vector<int64_t> children, targets;
    for (const Remote& x : remote[p]) {
      children.push_back(x.child);
      targets.push_back(x.row);
    }
    std::sort(children.begin(), children.end());
    children.erase(std::unique(children.begin(), children.end()), children.end());
    targets.erase(std::unique(targets.begin(), targets.end()), targets.end());  // rows ascend
    ex.recv_naive += static_cast<int64_t>(remote[p].size());
    ex.recv_rows_only += static_cast<int64_t>(children.size());
    ex.recv_partial_only += static_cast<int64_t>(flat ? targets.size() : children.size());
    pe.partial = flat && !remote[p].empty() &&
                 (mode == ExchangeMode::kPartial ||
                  (mode == ExchangeMode::kAuto && targets.size() < children.size()));
    ex.recv_chosen += static_cast<int64_t>(pe.partial ? targets.size() : children.size());
    std::vector<int64_t>& req = requests[p];
    if (pe.partial) {
      // [1, n_targets, n_entries, (target, child, weight bits)...]; targets in sorted order.
      req = {1, static_cast<int64_t>(targets.size()), static_cast<int64_t>(remote[p].size())};
      int64_t t = 0;
      for (const Remote& x : remote[p]) {
        while (targets[t] != x.row) ++t;
        uint32_t bits;
        std::memcpy(&bits, &w[x.entry], 4);
        req.insert(req.end(), {t, x.child, static_cast<int64_t>(bits)});
      }
      pe.recv_targets = Tensor::Empty({static_cast<int64_t>(targets.size())}, DType::kInt32);
      for (size_t k = 0; k < targets.size(); ++k) pe.recv_targets.i32()[k] = static_cast<int32_t>(targets[k]);
    } else {
      req = {0, static_cast<int64_t>(children.size())};
      req.insert(req.end(), children.begin(), children.end());
      pe.recv_slots = Tensor::Empty({static_cast<int64_t>(children.size())}, DType::kInt32);
      for (size_t k = 0; k < children.size(); ++k) {
        pe.recv_slots.i32()[k] = static_cast<int32_t>(ghost_ids.size());
        ghost_ids.push_back(children[k]);
      }
      peer_slot_child[p] = std::move(children);
    }
  }
  std::vector<std::string> outgoing(P);
  for (int p = 0; p < P; ++p) {
    if (p != me) outgoing[p] = Words(requests[p]);
  }
  FG_ASSIGN_OR_RETURN(std::vector<std::string> incoming,
                      comm.AllToAllV(std::move(outgoing), MakeTag(epoch, layer, kPhaseSetup, TrafficKind::kControl)));
  // Serve the peers' requests.
  for (int p = 0; p < P; ++p) {
    if (p == me) continue;
    const std::string& bytes = incoming[p];
    const int64_t* q = reinterpret_cast<const int64_t*>(bytes.data());
    const int64_t words = static_cast<int64_t>(bytes.size() / 8);
    auto bad = [&]() {
      return absl::DataLossError(absl::StrCat("layer ", layer, ": malformed exchange request from worker ", p));
    };
    if (words < 2) return bad();
    PeerExchange& pe = ex.peers[p];
    if (q[0] == 0) {
      if (words != 2 + q[1]) return bad();
      pe.send_rows = Tensor::Empty({q[1]}, DType::kInt32);
      for (int64_t k = 0; k < q[1]; ++k) {
        const int64_t li = local_of(q[2 + k]);
        if (li < 0) {
          return absl::InvalidArgumentError(absl::StrCat("layer ", layer, ": worker ", p,
                                                         " asked for vertex ", q[2 + k],
                                                         " which worker ", me, " does not own"));
        }
        pe.send_rows.i32()[k] = static_cast<int32_t>(li);
      }
      ex.rows_sent += q[1];
    } else {
      if (words < 3 || words != 3 + 3 * q[2]) return bad();
      const int64_t n_t = q[1], n_e = q[2];
      std::vector<int64_t> count(n_t + 1, 0);
      for (int64_t k = 0; k < n_e; ++k) {
        if (q[3 + 3 * k] < 0 || q[3 + 3 * k] >= n_t) return bad();
        ++count[q[3 + 3 * k] + 1];
      }
      for (int64_t t = 0; t < n_t; ++t) count[t + 1] += count[t];
      std::vector<int64_t> cursor(count.begin(), count.end() - 1);
      std::vector<int32_t> idx(n_e);
      std::vector<float> wt(n_e);
      for (int64_t k = 0; k < n_e; ++k) {
        const int64_t t = q[3 + 3 * k], li = local_of(q[4 + 3 * k]);
        if (li < 0) {
          return absl::InvalidArgumentError(absl::StrCat("layer ", layer, ": worker ", p,
                                                         " sent a partial entry for vertex ",
                                                         q[4 + 3 * k], " not owned by worker ", me));
        }
        const uint32_t bits = static_cast<uint32_t>(q[5 + 3 * k]);
        const int64_t at = cursor[t]++;
        idx[at] = static_cast<int32_t>(li);
        std::memcpy(&wt[at], &bits, 4);
      }
      pe.send_partial = MakeMatrix(n_t, n_owned, count, idx, wt);
      ex.partials_sent += n_t;
    }
  }
  ex.ghost_ids = Tensor::FromVector(ghost_ids);
  const int64_t n_ghost = static_cast<int64_t>(ghost_ids.size());
  // Slot of a row-fetched ghost: ghosts are grouped by peer, sorted within a peer.
  std::vector<int64_t> peer_base(P, 0);
  for (int p = 0, at = 0; p < P; ++p) {
    peer_base[p] = at;
    at += static_cast<int>(peer_slot_child[p].size());
  }
  std::vector<IdPositions> peer_slots;
  for (int p = 0; p < P; ++p) {
    peer_slots.emplace_back(peer_slot_child[p].data(), static_cast<int64_t>(peer_slot_child[p].size()));
  }
  auto ghost_slot = [&](int p, int64_t g) { return peer_base[p] + peer_slots[p].Of(g); };

  if (flat) {
    std::vector<int64_t> off_o = {0}, off_g = {0};
    std::vector<int32_t> idx_o, idx_g;
    std::vector<float> w_o, w_g;
    for (int64_t r = 0; r < c.num_rows; ++r) {
      for (int64_t e = c.row_ptr()[r]; e < c.row_ptr()[r + 1]; ++e) {
        const int64_t u = c.col()[e];
        const int o = owners.Of(u);
        if (o == me) {
          idx_o.push_back(static_cast<int32_t>(local_of(u)));
          w_o.push_back(w[e]);
        } else if (!ex.peers[o].partial) {
          idx_g.push_back(static_cast<int32_t>(ghost_slot(o, u)));
          w_g.push_back(w[e]);
        }
      }
      off_o.push_back(static_cast<int64_t>(idx_o.size()));
      off_g.push_back(static_cast<int64_t>(idx_g.size()));
    }
    ex.local_owned = MakeMatrix(c.num_rows, n_owned, off_o, idx_o, w_o);
    ex.local_ghost = MakeMatrix(c.num_rows, n_ghost, off_g, idx_g, w_g);
  } else {
    // Relabel level-1 children and the roots into the [owned | ghosts] table.
    Tensor idx = Tensor::Empty({c.nnz()}, DType::kInt32);
    for (int64_t e = 0; e < c.nnz(); ++e) {
      const int64_t u = c.col()[e];
      const int o = owners.Of(u);
      idx.i32()[e] = static_cast<int32_t>(o == me ? local_of(u) : n_owned + ghost_slot(o, u));
    }
    std::vector<hdg::HdgLevel> levels;
    for (int k = 1; k <= hdg.num_levels(); ++k) levels.push_back(hdg.level(k));
    Csr relabeled;
    relabeled.num_rows = c.num_rows;
    relabeled.num_cols = n_owned + n_ghost;
    relabeled.offsets = c.offsets;
    relabeled.indices = idx;
    levels[0].matrix = std::make_shared<SparseMatrix>(std::move(relabeled));
    Tensor roots = Tensor::Empty({hdg.num_roots()}, DType::kInt32);
    for (int64_t r = 0; r < hdg.num_roots(); ++r) {
      const int64_t li = local_of(hdg.roots().i32()[r]);
      if (li < 0) {
        return absl::InvalidArgumentError(absl::StrCat("layer ", layer, ": root ",
                                                       hdg.roots().i32()[r],
                                                       " is not in this worker's table"));
      }
      roots.i32()[r] = static_cast<int32_t>(li);
    }
    ex.local_hdg = std::make_shared<hdg::Hdg>(hdg.schema(), n_owned + n_ghost, roots, std::move(levels));
  }
  ConcatenatePeers(&ex);
  return ex;
}

absl::StatusOr<LayerExchange> BuildAllRows(Communicator& comm, const Tensor& my_ids,
                                           const Tensor& my_keys, int layer, int epoch,
                                           Tensor* order, Tensor* all_keys) {
  const int me = comm.rank(), P = comm.size();
  const int64_t n = my_ids.numel();
  std::string mine(reinterpret_cast<const char*>(my_ids.i64()), n * sizeof(int64_t));
  mine.append(reinterpret_cast<const char*>(my_keys.i64()), n * sizeof(int64_t));
  FG_ASSIGN_OR_RETURN(const std::vector<std::string> incoming,
                      comm.AllToAllV(std::vector<std::string>(P, mine),
                                     MakeTag(epoch, layer, kPhaseSetup, TrafficKind::kControl)));
  LayerExchange ex;
  ex.layer = layer;
  ex.num_owned = ex.num_roots = n;
  ex.peers.resize(P);
  std::vector<int64_t> ghosts, ghost_keys;
  Tensor every_row = Tensor::Empty({n}, DType::kInt32);
  for (int64_t k = 0; k < n; ++k) every_row.i32()[k] = static_cast<int32_t>(k);
  for (int q = 0; q < P; ++q) {
    PeerExchange& pe = ex.peers[q];
    pe.peer = q;
    if (q == me) continue;
    const std::string& bytes = incoming[q];
    if (bytes.size() % (2 * sizeof(int64_t)) != 0) {
      return absl::DataLossError(absl::StrCat("malformed row list from worker ", q));
    }
    const int64_t count = static_cast<int64_t>(bytes.size() / (2 * sizeof(int64_t)));
    pe.send_rows = every_row;
    pe.recv_slots = Tensor::Empty({count}, DType::kInt32);
    for (int64_t k = 0; k < count; ++k) {
      int64_t id, key;
      std::memcpy(&id, bytes.data() + k * sizeof(int64_t), sizeof(id));
      std::memcpy(&key, bytes.data() + (count + k) * sizeof(int64_t), sizeof(key));
      pe.recv_slots.i32()[k] = static_cast<int32_t>(ghosts.size());
      ghosts.push_back(id);
      ghost_keys.push_back(key);
    }
    ex.rows_sent += n;
    ex.recv_chosen += count;
  }
  ex.ghost_ids = Tensor::FromVector(ghosts);
  // Row of every id in [mine | ghosts], by ascending id.
  std::vector<std::pair<int64_t, int32_t>> rows;
  for (int64_t k = 0; k < n; ++k) rows.push_back({my_ids.i64()[k], static_cast<int32_t>(k)});
  for (size_t k = 0; k < ghosts.size(); ++k) rows.push_back({ghosts[k], static_cast<int32_t>(n + k)});
  std::sort(rows.begin(), rows.end());
  for (size_t k = 1; k < rows.size(); ++k) {
    if (rows[k].first == rows[k - 1].first) {
      return absl::InvalidArgumentError(absl::StrCat("vertex ", rows[k].first, " is a row of two workers"));
    }
  }
  const int64_t total = static_cast<int64_t>(rows.size());
  *order = Tensor::Empty({total}, DType::kInt32);
  *all_keys = Tensor::Empty({total}, DType::kInt64);
  for (int64_t k = 0; k < total; ++k) {
    const int32_t row = rows[k].second;
    order->i32()[k] = row;
    all_keys->i64()[k] = row < n ? my_keys.i64()[row] : ghost_keys[row - n];
  }
  ConcatenatePeers(&ex);
  return ex;
}

void PlaceExchange(LayerExchange* ex, Device device, bool place_hdg, const std::vector<bool>& normalized) {
  ex->device = device;
  if (device == Device::kCpu) return;
  ex->send_index = ex->send_index.To(device);
  ex->recv_target_index = ex->recv_target_index.To(device);
  ex->send_grouping = ex->send_grouping->OnDevice(device);
  ex->recv_grouping = ex->recv_grouping->OnDevice(device);
  if (ex->send_partials) ex->send_partials = ex->send_partials->OnDevice(device);
  if (ex->local_owned) ex->local_owned = ex->local_owned->OnDevice(device);
  if (ex->local_ghost) ex->local_ghost = ex->local_ghost->OnDevice(device);
  if (place_hdg && ex->local_hdg) ex->local_hdg = std::make_shared<const hdg::Hdg>(ex->local_hdg->OnDevice(device, normalized));
}

}  // namespace fg::runtime
