// The differentiable exchange operations (runtime/distributed/exchange.h); planning is in exchange_plan.cc.
#include "runtime/distributed/exchange.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/ops/ops.h"
#include "flexgraph/tensor/device_alloc.h"

namespace fg::runtime {
namespace {

// Forward/backward phases of the exchange ops; evaluation passes add 4.
constexpr int kFwdRows = 0, kFwdPartials = 1, kBwdRows = 2, kBwdPartials = 3;

int Phase(const ExchangeContext& ctx, int p) { return p + 4 * ctx.phase; }

void RecordError(ExchangeContext& ctx, const absl::Status& s) {
  if (!s.ok() && ctx.error->ok()) {
    *ctx.error = s;
    ctx.comm->Abort(s);
  }
}

int64_t Count(const Tensor& t) { return t.defined() ? t.numel() : 0; }

// Per peer: rows sent (send_rows), ghost rows received (recv_slots), partial rows sent
// (send_partial's rows) and partial rows received (recv_targets).
std::vector<int64_t> PerPeer(const LayerExchange& ex, int P, int64_t (*count)(const PeerExchange&)) {
  std::vector<int64_t> n(P, 0);
  for (const PeerExchange& pe : ex.peers) n[pe.peer] = count(pe);
  return n;
}
int64_t SentRows(const PeerExchange& pe) { return Count(pe.send_rows); }
int64_t GhostRows(const PeerExchange& pe) { return Count(pe.recv_slots); }
int64_t SentPartials(const PeerExchange& pe) { return pe.send_partial ? pe.send_partial->csr().num_rows : 0; }
int64_t ReceivedPartials(const PeerExchange& pe) { return Count(pe.recv_targets); }

// Where each peer's rows start when the peers' parts are concatenated in rank order.
std::vector<int64_t> Starts(const std::vector<int64_t>& rows) {
  std::vector<int64_t> at(rows.size(), 0);
  for (size_t q = 1; q < rows.size(); ++q) at[q] = at[q - 1] + rows[q - 1];
  return at;
}
// Where each peer's ghost rows start in the ghost table (one peer's slots are contiguous).
std::vector<int64_t> GhostStarts(const LayerExchange& ex, int P) {
  std::vector<int64_t> at(P, 0);
  for (const PeerExchange& pe : ex.peers) at[pe.peer] = GhostRows(pe) > 0 ? pe.recv_slots.i32()[0] : 0;
  return at;
}

}  // namespace

// Pinned host blocks for device-to-host copies, kept for the next pass (every pass of a layer
// moves the same sizes). Thread-compatible.
class PinnedPool {
 public:
  struct Block {
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  ~PinnedPool() {
    for (const Block& b : free_) PinnedFree(b.ptr);
  }
  Block Take(size_t bytes) {  // the smallest free block that fits, else a new one
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->bytes >= bytes && (best == free_.end() || it->bytes < best->bytes)) best = it;
    }
    if (best == free_.end()) return {PinnedAlloc(bytes), bytes};
    const Block b = *best;
    free_.erase(best);
    return b;
  }
  void Give(Block b) {
    if (b.ptr != nullptr) free_.push_back(b);
  }

 private:
  std::vector<Block> free_;
};

namespace {

// A tensor's rows readable on the host: the tensor itself when it is there; a device tensor is
// copied into a pinned block on the copy stream (held until then), complete when data() returns.
class HostRows {
 public:
  HostRows(std::shared_ptr<PinnedPool> pool, Tensor t) : pool_(std::move(pool)), t_(std::move(t)) {
    if (!t_.defined() || t_.device() == Device::kCpu) {
      host_ = t_.defined() && t_.numel() > 0 ? t_.f32() : nullptr;
      return;
    }
    block_ = pool_->Take(t_.nbytes());
    host_ = static_cast<const float*>(block_.ptr);
    transfer_ = StartDeviceToHost(block_.ptr, t_.raw(), t_.nbytes());
  }
  ~HostRows() {
    FinishDeviceToHost(&transfer_);
    pool_->Give(block_);
  }
  HostRows(const HostRows&) = delete;
  HostRows& operator=(const HostRows&) = delete;
  const float* data() {
    FinishDeviceToHost(&transfer_);
    return host_;
  }

 private:
  std::shared_ptr<PinnedPool> pool_;
  Tensor t_;
  PinnedPool::Block block_;
  DeviceTransfer transfer_;
  const float* host_ = nullptr;
};

}  // namespace

// One planned all-to-all: peer q gets rows [at[q], at[q] + rows[q]) of `src` (width d).
struct StagedSend {
  uint64_t tag = 0;
  std::shared_ptr<HostRows> src;
  std::vector<int64_t> at, rows, recv_bytes;
  int64_t d = 0;
  bool on_device = false;  // its bytes are being copied from a device
};

void FlushSends(ExchangeContext& ctx) {
  for (const std::shared_ptr<StagedSend>& s : ctx.staged) {
    auto part = [&](int q) {
      if (s->rows[q] == 0) return std::string();
      const float* rows = s->src->data() + s->at[q] * s->d;
      return std::string(reinterpret_cast<const char*>(rows), s->rows[q] * s->d * sizeof(float));
    };
    ctx.pending[s->tag] = ctx.comm->StartAllToAllV(part, s->recv_bytes, s->tag);
  }
  ctx.staged.clear();
}

namespace {

// Starts the all-to-all `tag`: rows[q] rows of `src` [n, d] from row at[q] to each peer q,
// expecting recv_rows[q] rows of width d from it. A device source is copied to the host
// first, and sent at the next FlushSends; a host one is sent now, unless device ones wait before it.
void Start(ExchangeContext& ctx, uint64_t tag, const Tensor& src, std::vector<int64_t> at,
           const std::vector<int64_t>& rows, const std::vector<int64_t>& recv_rows, int64_t d) {
  if (ctx.pinned == nullptr) ctx.pinned = std::make_shared<PinnedPool>();
  auto s = std::make_shared<StagedSend>();
  s->tag = tag;
  s->src = std::make_shared<HostRows>(ctx.pinned, src);
  s->at = std::move(at);
  s->rows = rows;
  s->d = d;
  s->on_device = src.defined() && src.device() != Device::kCpu;
  for (int64_t r : recv_rows) s->recv_bytes.push_back(r * d * static_cast<int64_t>(sizeof(float)));
  ctx.staged.push_back(std::move(s));
  // Host bytes go now, unless a device's copies are queued before them (they keep their order).
  const bool waiting = std::any_of(ctx.staged.begin(), ctx.staged.end(), [](const auto& t) { return t->on_device; });
  if (!waiting) FlushSends(ctx);
}

// What the peers sent for `tag`, rows[q] rows of width d from peer q placed at row at[q] of one
// host tensor [num_rows, d] (zeros elsewhere, and everywhere after an error, which is recorded),
// then on `device`.
Tensor Finish(ExchangeContext& ctx, uint64_t tag, const std::vector<int64_t>& at,
              const std::vector<int64_t>& rows, int64_t num_rows, int64_t d, Device device) {
  FlushSends(ctx);
  auto it = ctx.pending.find(tag);
  FG_CHECK(it != ctx.pending.end()) << "exchange " << TagString(tag) << " finished before it started";
  auto got = it->second->Finish();
  ctx.pending.erase(it);
  Tensor out = Tensor::Zeros({num_rows, d});
  if (!got.ok()) {
    RecordError(ctx, got.status());
  } else {
    for (int q = 0; q < static_cast<int>(rows.size()); ++q) {
      if (rows[q] > 0) std::memcpy(out.f32() + at[q] * d, (*got)[q].data(), rows[q] * d * sizeof(float));
      std::string().swap((*got)[q]);  // released once used
    }
  }
  return out.To(device);
}

int64_t Sum(const std::vector<int64_t>& v) {
  int64_t n = 0;
  for (int64_t x : v) n += x;
  return n;
}

uint64_t Tag(const ExchangeContext& ctx, const LayerExchange& ex, int phase, TrafficKind kind) {
  return MakeTag(ctx.epoch, ex.layer, Phase(ctx, phase), kind, ex.step);
}

}  // namespace

ag::Var PostRows(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& m) {
  const int64_t d = m.row_width();
  const int P = ctx.comm->size();
  const std::vector<int64_t> sent = PerPeer(ex, P, SentRows);
  Start(ctx, Tag(ctx, ex, kFwdRows, TrafficKind::kFeatures), ops::GatherRows(m.value(), ex.send_index),
        Starts(sent), sent, PerPeer(ex, P, GhostRows), d);
  ExchangeContext* c = &ctx;
  const LayerExchange* e = &ex;
  return ag::MakeResult(Tensor::Zeros({1}), "PostRows", {m}, [c, e, m = ag::GradRef(m), d, sent](const Tensor&) {
    const Tensor got = Finish(*c, Tag(*c, *e, kBwdRows, TrafficKind::kGradients), Starts(sent), sent,
                              Sum(sent), d, e->device);
    ag::AccumulateGrad(m, ops::Spmm(e->send_grouping->csr(), got, ops::SpmmReduce::kSum), "PostRows");
  });
}

ag::Var PostPartials(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& m) {
  const int64_t d = m.row_width();
  const int P = ctx.comm->size();
  const std::vector<int64_t> sent = PerPeer(ex, P, SentPartials);
  Start(ctx, Tag(ctx, ex, kFwdPartials, TrafficKind::kPartials),
        ex.send_partials ? ops::Spmm(ex.send_partials->csr(), m.value(), ops::SpmmReduce::kSum) : Tensor(),
        Starts(sent), sent, PerPeer(ex, P, ReceivedPartials), d);
  ExchangeContext* c = &ctx;
  const LayerExchange* e = &ex;
  return ag::MakeResult(Tensor::Zeros({1}), "PostPartials", {m}, [c, e, m = ag::GradRef(m), d, sent](const Tensor&) {
    const Tensor got = Finish(*c, Tag(*c, *e, kBwdPartials, TrafficKind::kGradients), Starts(sent), sent,
                              Sum(sent), d, e->device);
    if (e->send_partials == nullptr) return;  // nothing was sent, so no gradient came back
    ag::AccumulateGrad(m, ops::Spmm(e->send_partials->transpose(), got, ops::SpmmReduce::kSum), "PostPartials");
  });
}

ag::Var ReceiveRows(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& token,
                    int64_t width) {
  const int P = ctx.comm->size();
  const std::vector<int64_t> rows = PerPeer(ex, P, GhostRows);
    Tensor ghosts = Finish(ctx, Tag(ctx, ex, kFwdRows, TrafficKind::kFeatures), GhostStarts(ex, P), rows,
                         ex.ghost_ids.numel(), width, ex.device);
  ExchangeContext* c = &ctx;
  const LayerExchange* e = &ex;
  return ag::MakeResult(ghosts, "ReceiveRows", {token}, [c, e, token = ag::GradRef(token), width, P, rows](const Tensor& g) {
    // Peer q's slots are contiguous: its part is that block of g, wherever it starts.
    Start(*c, Tag(*c, *e, kBwdRows, TrafficKind::kGradients), g, GhostStarts(*e, P), rows,
          PerPeer(*e, P, SentRows), width);
    ag::AccumulateGrad(token, Tensor::Zeros({1}), "ReceiveRows");
  });
}
void AddReceivedPartials(ExchangeContext& ctx, const LayerExchange& ex, Tensor* sum) {
  const int P = ctx.comm->size();
  const std::vector<int64_t> rows = PerPeer(ex, P, ReceivedPartials);
  const Tensor got = Finish(ctx, Tag(ctx, ex, kFwdPartials, TrafficKind::kPartials), Starts(rows), rows,
                            Sum(rows), sum->row_width(), sum->device());
  if (got.rows() > 0) ops::AddInPlace(sum, ops::Spmm(ex.recv_grouping->csr(), got, ops::SpmmReduce::kSum));
}

ag::Var ReceivePartials(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& token,
                        int64_t width) {
  const int P = ctx.comm->size();
    Tensor sum = Tensor::Zeros({ex.num_roots, width}, DType::kFloat32, ex.device);
  AddReceivedPartials(ctx, ex, &sum);
  ExchangeContext* c = &ctx;
  const LayerExchange* e = &ex;
  return ag::MakeResult(sum, "ReceivePartials", {token}, [c, e, token = ag::GradRef(token), P](const Tensor& g) {
    const std::vector<int64_t> rows = PerPeer(*e, P, ReceivedPartials);
    Start(*c, Tag(*c, *e, kBwdPartials, TrafficKind::kGradients), ops::GatherRows(g, e->recv_target_index),
          Starts(rows), rows, PerPeer(*e, P, SentPartials), g.row_width());
    ag::AccumulateGrad(token, Tensor::Zeros({1}), "ReceivePartials");
  });
}

namespace {
// Sums n floats across workers: every worker sends its values to every other and adds all of
// them in rank order, so the sums are bitwise identical everywhere.
absl::Status SumAcrossWorkers(Communicator& comm, float* data, int64_t n, uint64_t tag) {
  const int p = comm.size(), me = comm.rank();
  const std::string mine = FloatsToBytes(data, n);
  for (int q = 0; q < p; ++q) {
    if (q != me) comm.Send(q, tag, mine);
  }
  std::vector<float> sum(n, 0.0f), part(n);
  for (int q = 0; q < p; ++q) {
    const float* src = data;
    if (q != me) {
      FG_ASSIGN_OR_RETURN(std::string bytes, comm.Recv(q, tag));
      FG_RETURN_IF_ERROR(BytesToFloats(bytes, part.data(), n, q));
      src = part.data();
    }
    for (int64_t i = 0; i < n; ++i) sum[i] += src[i];
  }
  std::copy(sum.begin(), sum.end(), data);
  return absl::OkStatus();
}
constexpr int kPhaseReduceFwd = 9, kPhaseReduceBwd = 10;

// x summed over the workers (SumAcrossWorkers on a host copy), on x's device.
Tensor SummedAcrossWorkers(ExchangeContext& ctx, const Tensor& x, uint64_t tag) {
  Tensor y = x.To(Device::kCpu).Clone();
  if (ctx.comm != nullptr && ctx.comm->size() > 1) RecordError(ctx, SumAcrossWorkers(*ctx.comm, y.f32(), y.numel(), tag));
  return y.To(x.device());
}
}  // namespace

ag::Var AllReduceSum(ExchangeContext& ctx, const ag::Var& x) {
  const int call = ctx.reductions++;
  Tensor y = SummedAcrossWorkers(
      ctx, x.value(), MakeTag(ctx.epoch, 0, kPhaseReduceFwd + 2 * ctx.phase, TrafficKind::kControl, call));
  ExchangeContext* c = &ctx;
  return ag::MakeResult(y, "AllReduceSum", {x}, [c, x = ag::GradRef(x), call](const Tensor& g) {
    const uint64_t tag = MakeTag(c->epoch, 0, kPhaseReduceBwd + 2 * c->phase, TrafficKind::kGradients, call);
    ag::AccumulateGrad(x, SummedAcrossWorkers(*c, g, tag), "AllReduceSum");
  });
}

ag::Var ConcatRows(const ag::Var& a, const ag::Var& b) {
  const int64_t d = a.row_width();
  FG_CHECK(b.rows() == 0 || b.row_width() == d)
      << "ConcatRows: widths differ " << a.value().ShapeString() << " vs " << b.value().ShapeString();
  const Device device = a.value().device();
  FG_CHECK(b.rows() == 0 || b.value().device() == device)
      << "ConcatRows: rows on " << DeviceName(device) << " and " << DeviceName(b.value().device());
  Tensor y = Tensor::Empty({a.rows() + b.rows(), d}, DType::kFloat32, device);
  CopyBytes(y.raw(), device, a.value().raw(), device, a.value().nbytes());
  if (b.rows() > 0) {
    CopyBytes(static_cast<char*>(y.raw()) + a.value().nbytes(), device, b.value().raw(), device, b.value().nbytes());
  }
  return ag::MakeResult(y, "ConcatRows", {a, b}, [a = ag::GradRef(a), b = ag::GradRef(b)](const Tensor& g) {
    ag::AccumulateGrad(a, g.RowsCopy(0, a.rows()), "ConcatRows");
    if (b.requires_grad() && b.rows() > 0) ag::AccumulateGrad(b, g.RowsCopy(a.rows(), b.rows()), "ConcatRows");
  });
}

}  // namespace fg::runtime
