// The differentiable exchange operations (runtime/exchange.h); planning is in exchange_plan.cc.
#include "runtime/exchange.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"

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

// The partial sums `a` x `m` as bytes, computed straight into the message.
std::string PartialBytes(const Csr& a, const Tensor& m) {
  std::string out(a.num_rows * m.row_width() * sizeof(float), '\0');
  ops::SpmmInto(a, m, ops::SpmmReduce::kSum, reinterpret_cast<float*>(out.data()));
  return out;
}

// Rows `idx` of `m` [n, d] as bytes, gathered straight into the message.
std::string RowBytes(const Tensor& m, const Tensor& idx) {
  const int64_t d = m.row_width(), n = idx.numel();
  std::string out(n * d * sizeof(float), '\0');
  float* dst = reinterpret_cast<float*>(out.data());
  ParallelFor(0, n, [&](int64_t k) {
    std::memcpy(dst + k * d, m.f32() + static_cast<int64_t>(idx.i32()[k]) * d, d * sizeof(float));
  });
  return out;
}

// Starts the all-to-all `tag`: part(q) for each peer q (empty: nothing), expecting recv_rows[q]
// rows of width d from it.
void Start(ExchangeContext& ctx, uint64_t tag, const Communicator::PartFn& part,
           const std::vector<int64_t>& recv_rows, int64_t d) {
  std::vector<int64_t> recv_bytes(recv_rows.size());
  for (size_t q = 0; q < recv_rows.size(); ++q) recv_bytes[q] = recv_rows[q] * d * static_cast<int64_t>(sizeof(float));
  ctx.pending[tag] = ctx.comm->StartAllToAllV(part, std::move(recv_bytes), tag);
}

// What each peer sent for `tag` (empty after an error, which is recorded).
std::vector<std::string> Finish(ExchangeContext& ctx, uint64_t tag) {
  auto it = ctx.pending.find(tag);
  FG_CHECK(it != ctx.pending.end()) << "exchange " << TagString(tag) << " finished before it started";
  auto got = it->second->Finish();
  ctx.pending.erase(it);
  if (!got.ok()) {
    RecordError(ctx, got.status());
    return {};
  }
  return *std::move(got);
}

// Calls f(q, data) for each peer q with rows[q] > 0 rows in what it sent, releasing each part once
// it has been used.
template <typename F>
void ForEachPart(std::vector<std::string>& got, const std::vector<int64_t>& rows, F&& f) {
  if (got.empty()) return;  // an error was recorded
  for (int q = 0; q < static_cast<int>(rows.size()); ++q) {
    if (rows[q] > 0) f(q, reinterpret_cast<const float*>(got[q].data()));
    std::string().swap(got[q]);
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

}  // namespace

ag::Var PostRows(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& m) {
  const int64_t d = m.row_width();
  const int P = ctx.comm->size();
  auto part = [&](int q) {
    const PeerExchange& pe = ex.peers[q];
    return SentRows(pe) > 0 ? RowBytes(m.value(), pe.send_rows) : std::string();
  };
  Start(ctx, MakeTag(ctx.epoch, ex.layer, Phase(ctx, kFwdRows), TrafficKind::kFeatures), part,
        PerPeer(ex, P, GhostRows), d);
  ExchangeContext* c = &ctx;
  const LayerExchange* e = &ex;
  return ag::MakeResult(Tensor::Zeros({1}), "PostRows", {m}, [c, e, m = ag::GradRef(m), d, P](const Tensor&) {
    const std::vector<int64_t> rows = PerPeer(*e, P, SentRows);
    std::vector<std::string> got =
        Finish(*c, MakeTag(c->epoch, e->layer, Phase(*c, kBwdRows), TrafficKind::kGradients));
    Tensor g = Tensor::Zeros({m.rows(), d});
    ForEachPart(got, rows, [&](int q, const float* data) {
      const Tensor& idx = e->peers[q].send_rows;
      Tensor rg = Tensor::Empty({idx.numel(), d});
      std::memcpy(rg.f32(), data, rg.nbytes());
      ops::AddInPlace(&g, ops::ScatterAddRows(rg, idx, m.rows()));
    });
    ag::AccumulateGrad(m, g, "PostRows");
  });
}

ag::Var PostPartials(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& m) {
  const int64_t d = m.row_width();
  const int P = ctx.comm->size();
  auto part = [&](int q) {
    const PeerExchange& pe = ex.peers[q];
    return SentPartials(pe) > 0 ? PartialBytes(pe.send_partial->csr(), m.value()) : std::string();
  };
  Start(ctx, MakeTag(ctx.epoch, ex.layer, Phase(ctx, kFwdPartials), TrafficKind::kPartials), part,
        PerPeer(ex, P, ReceivedPartials), d);
  ExchangeContext* c = &ctx;
  const LayerExchange* e = &ex;
  return ag::MakeResult(Tensor::Zeros({1}), "PostPartials", {m}, [c, e, m = ag::GradRef(m), d, P](const Tensor&) {
    const std::vector<int64_t> rows = PerPeer(*e, P, SentPartials);
    std::vector<std::string> got =
        Finish(*c, MakeTag(c->epoch, e->layer, Phase(*c, kBwdPartials), TrafficKind::kGradients));
    Tensor g = Tensor::Zeros({m.rows(), d});
    ForEachPart(got, rows, [&](int q, const float* data) {
      const PeerExchange& pe = e->peers[q];
      Tensor pg = Tensor::Empty({rows[q], d});
      std::memcpy(pg.f32(), data, pg.nbytes());
      ops::AddInPlace(&g, ops::Spmm(pe.send_partial->transpose(), pg, ops::SpmmReduce::kSum));
    });
    ag::AccumulateGrad(m, g, "PostPartials");
  });
}

ag::Var ReceiveRows(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& token,
                    int64_t width) {
  const int P = ctx.comm->size();
  const std::vector<int64_t> rows = PerPeer(ex, P, GhostRows);
  Tensor ghosts = Tensor::Zeros({ex.ghost_ids.numel(), width});
  std::vector<std::string> got =
      Finish(ctx, MakeTag(ctx.epoch, ex.layer, Phase(ctx, kFwdRows), TrafficKind::kFeatures));
  ForEachPart(got, rows, [&](int q, const float* data) {
    // Slots of one peer are contiguous and in order.
    std::memcpy(ghosts.f32() + ex.peers[q].recv_slots.i32()[0] * width, data, rows[q] * width * sizeof(float));
  });
  ExchangeContext* c = &ctx;
  const LayerExchange* e = &ex;
  return ag::MakeResult(ghosts, "ReceiveRows", {token}, [c, e, token = ag::GradRef(token), width, P](const Tensor& g) {
    auto part = [&](int q) {
      const PeerExchange& pe = e->peers[q];
      return GhostRows(pe) > 0 ? FloatsToBytes(g.f32() + pe.recv_slots.i32()[0] * width, GhostRows(pe) * width)
                               : std::string();
    };
    Start(*c, MakeTag(c->epoch, e->layer, Phase(*c, kBwdRows), TrafficKind::kGradients), part,
          PerPeer(*e, P, SentRows), width);
    ag::AccumulateGrad(token, Tensor::Zeros({1}), "ReceiveRows");
  });
}

void AddReceivedPartials(ExchangeContext& ctx, const LayerExchange& ex, Tensor* sum) {
  const int64_t width = sum->row_width();
  const std::vector<int64_t> rows = PerPeer(ex, ctx.comm->size(), ReceivedPartials);
  std::vector<std::string> got =
      Finish(ctx, MakeTag(ctx.epoch, ex.layer, Phase(ctx, kFwdPartials), TrafficKind::kPartials));
  ForEachPart(got, rows, [&](int q, const float* part) {
    const Tensor& targets = ex.peers[q].recv_targets;
    for (int64_t k = 0; k < rows[q]; ++k) {
      float* dst = sum->f32() + static_cast<int64_t>(targets.i32()[k]) * width;
      const float* src = part + k * width;
      for (int64_t j = 0; j < width; ++j) dst[j] += src[j];
    }
  });
}

ag::Var ReceivePartials(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& token,
                        int64_t width) {
  const int P = ctx.comm->size();
  Tensor sum = Tensor::Zeros({ex.num_roots, width});
  AddReceivedPartials(ctx, ex, &sum);
  ExchangeContext* c = &ctx;
  const LayerExchange* e = &ex;
  return ag::MakeResult(sum, "ReceivePartials", {token}, [c, e, token = ag::GradRef(token), P](const Tensor& g) {
    auto part = [&](int q) {
      const PeerExchange& pe = e->peers[q];
      return ReceivedPartials(pe) > 0 ? RowBytes(g, pe.recv_targets) : std::string();
    };
    Start(*c, MakeTag(c->epoch, e->layer, Phase(*c, kBwdPartials), TrafficKind::kGradients), part,
          PerPeer(*e, P, SentPartials), g.row_width());
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
}  // namespace

ag::Var AllReduceSum(ExchangeContext& ctx, const ag::Var& x) {
  const int call = ctx.reductions++;
  Tensor y = x.value().Clone();
  if (ctx.comm != nullptr && ctx.comm->size() > 1) {
    auto s = SumAcrossWorkers(*ctx.comm, y.f32(), y.numel(),
                              MakeTag(ctx.epoch, 0, kPhaseReduceFwd + 2 * ctx.phase,
                                      TrafficKind::kControl, call));
    RecordError(ctx, s);
  }
  ExchangeContext* c = &ctx;
  return ag::MakeResult(y, "AllReduceSum", {x}, [c, x = ag::GradRef(x), call](const Tensor& g) {
    Tensor gx = g.Clone();
    if (c->comm != nullptr && c->comm->size() > 1) {
      auto s = SumAcrossWorkers(*c->comm, gx.f32(), gx.numel(),
                                MakeTag(c->epoch, 0, kPhaseReduceBwd + 2 * c->phase,
                                        TrafficKind::kGradients, call));
      RecordError(*c, s);
    }
    ag::AccumulateGrad(x, gx, "AllReduceSum");
  });
}

ag::Var ConcatRows(const ag::Var& a, const ag::Var& b) {
  const int64_t d = a.row_width();
  FG_CHECK(b.rows() == 0 || b.row_width() == d)
      << "ConcatRows: widths differ " << a.value().ShapeString() << " vs " << b.value().ShapeString();
  Tensor y = Tensor::Empty({a.rows() + b.rows(), d});
  std::memcpy(y.f32(), a.value().f32(), a.value().nbytes());
  if (b.rows() > 0) std::memcpy(y.f32() + a.rows() * d, b.value().f32(), b.value().nbytes());
  return ag::MakeResult(y, "ConcatRows", {a, b}, [a = ag::GradRef(a), b = ag::GradRef(b), d](const Tensor& g) {
    Tensor ga = Tensor::Empty({a.rows(), d});
    std::memcpy(ga.f32(), g.f32(), ga.nbytes());
    ag::AccumulateGrad(a, ga, "ConcatRows");
    if (b.requires_grad() && b.rows() > 0) {
      Tensor gb = Tensor::Empty({b.rows(), d});
      std::memcpy(gb.f32(), g.f32() + a.rows() * d, gb.nbytes());
      ag::AccumulateGrad(b, gb, "ConcatRows");
    }
  });
}

}  // namespace fg::runtime
