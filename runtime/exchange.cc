// The differentiable exchange operations (runtime/exchange.h); planning is in exchange_plan.cc.
#include "runtime/exchange.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
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

}  // namespace

ag::Var PostRows(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& m) {
  const int64_t d = m.row_width();
  for (const PeerExchange& pe : ex.peers) {
    if (!pe.send_rows.defined() || pe.send_rows.numel() == 0) continue;
    Tensor rows = ops::GatherRows(m.value(), pe.send_rows);
    ctx.comm->Send(pe.peer, MakeTag(ctx.epoch, ex.layer, Phase(ctx, kFwdRows), TrafficKind::kFeatures),
                   FloatsToBytes(rows.f32(), rows.numel()));
  }
  ExchangeContext* c = &ctx;
  const LayerExchange* e = &ex;
  return ag::MakeResult(Tensor::Zeros({1}), "PostRows", {m}, [c, e, m = ag::GradRef(m), d](const Tensor&) {
    Tensor g = Tensor::Zeros({m.rows(), d});
    for (const PeerExchange& pe : e->peers) {
      if (!pe.send_rows.defined() || pe.send_rows.numel() == 0) continue;
      auto bytes = c->comm->Recv(pe.peer, MakeTag(c->epoch, e->layer, Phase(*c, kBwdRows),
                                                  TrafficKind::kGradients));
      if (!bytes.ok()) return RecordError(*c, bytes.status());
      Tensor rg = Tensor::Empty({pe.send_rows.numel(), d});
      auto s = BytesToFloats(*bytes, rg.f32(), rg.numel(), pe.peer);
      if (!s.ok()) return RecordError(*c, s);
      ops::AddInPlace(&g, ops::ScatterAddRows(rg, pe.send_rows, m.rows()));
    }
    ag::AccumulateGrad(m, g, "PostRows");
  });
}

ag::Var PostPartials(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& m) {
  const int64_t d = m.row_width();
  for (const PeerExchange& pe : ex.peers) {
    if (!pe.send_partial) continue;
    Tensor part = ops::Spmm(pe.send_partial->csr(), m.value(), ops::SpmmReduce::kSum);
    ctx.comm->Send(pe.peer,
                   MakeTag(ctx.epoch, ex.layer, Phase(ctx, kFwdPartials), TrafficKind::kPartials),
                   FloatsToBytes(part.f32(), part.numel()));
  }
  ExchangeContext* c = &ctx;
  const LayerExchange* e = &ex;
  return ag::MakeResult(Tensor::Zeros({1}), "PostPartials", {m}, [c, e, m = ag::GradRef(m), d](const Tensor&) {
    Tensor g = Tensor::Zeros({m.rows(), d});
    for (const PeerExchange& pe : e->peers) {
      if (!pe.send_partial) continue;
      auto bytes = c->comm->Recv(pe.peer, MakeTag(c->epoch, e->layer, Phase(*c, kBwdPartials),
                                                  TrafficKind::kGradients));
      if (!bytes.ok()) return RecordError(*c, bytes.status());
      Tensor pg = Tensor::Empty({pe.send_partial->csr().num_rows, d});
      auto s = BytesToFloats(*bytes, pg.f32(), pg.numel(), pe.peer);
      if (!s.ok()) return RecordError(*c, s);
      ops::AddInPlace(&g, ops::Spmm(pe.send_partial->transpose(), pg, ops::SpmmReduce::kSum));
    }
    ag::AccumulateGrad(m, g, "PostPartials");
  });
}

ag::Var ReceiveRows(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& token,
                    int64_t width) {
  const int64_t n_ghost = ex.ghost_ids.numel();
  Tensor ghosts = Tensor::Zeros({n_ghost, width});
  for (const PeerExchange& pe : ex.peers) {
    if (!pe.recv_slots.defined() || pe.recv_slots.numel() == 0) continue;
    auto bytes = ctx.comm->Recv(pe.peer, MakeTag(ctx.epoch, ex.layer, Phase(ctx, kFwdRows),
                                                 TrafficKind::kFeatures));
    if (!bytes.ok()) {
      RecordError(ctx, bytes.status());
      break;
    }
    // Slots of one peer are contiguous and in order.
    const int64_t first = pe.recv_slots.i32()[0];
    auto s = BytesToFloats(*bytes, ghosts.f32() + first * width, pe.recv_slots.numel() * width,
                           pe.peer);
    if (!s.ok()) {
      RecordError(ctx, s);
      break;
    }
  }
  ExchangeContext* c = &ctx;
  const LayerExchange* e = &ex;
  return ag::MakeResult(ghosts, "ReceiveRows", {token}, [c, e, token = ag::GradRef(token), width](const Tensor& g) {
    for (const PeerExchange& pe : e->peers) {
      if (!pe.recv_slots.defined() || pe.recv_slots.numel() == 0) continue;
      const int64_t first = pe.recv_slots.i32()[0];
      c->comm->Send(pe.peer, MakeTag(c->epoch, e->layer, Phase(*c, kBwdRows), TrafficKind::kGradients),
                    FloatsToBytes(g.f32() + first * width, pe.recv_slots.numel() * width));
    }
    ag::AccumulateGrad(token, Tensor::Zeros({1}), "ReceiveRows");
  });
}

ag::Var ReceivePartials(ExchangeContext& ctx, const LayerExchange& ex, const ag::Var& token,
                        int64_t width) {
  Tensor sum = Tensor::Zeros({ex.num_roots, width});
  for (const PeerExchange& pe : ex.peers) {
    if (!pe.recv_targets.defined()) continue;
    auto bytes = ctx.comm->Recv(pe.peer, MakeTag(ctx.epoch, ex.layer, Phase(ctx, kFwdPartials),
                                                 TrafficKind::kPartials));
    if (!bytes.ok()) {
      RecordError(ctx, bytes.status());
      break;
    }
    Tensor part = Tensor::Empty({pe.recv_targets.numel(), width});
    auto s = BytesToFloats(*bytes, part.f32(), part.numel(), pe.peer);
    if (!s.ok()) {
      RecordError(ctx, s);
      break;
    }
    for (int64_t k = 0; k < part.rows(); ++k) {
      float* dst = sum.f32() + static_cast<int64_t>(pe.recv_targets.i32()[k]) * width;
      const float* src = part.f32() + k * width;
      for (int64_t j = 0; j < width; ++j) dst[j] += src[j];
    }
  }
  ExchangeContext* c = &ctx;
  const LayerExchange* e = &ex;
  return ag::MakeResult(sum, "ReceivePartials", {token}, [c, e, token = ag::GradRef(token)](const Tensor& g) {
    for (const PeerExchange& pe : e->peers) {
      if (!pe.recv_targets.defined()) continue;
      Tensor rows = ops::GatherRows(g, pe.recv_targets);
      c->comm->Send(pe.peer,
                    MakeTag(c->epoch, e->layer, Phase(*c, kBwdPartials), TrafficKind::kGradients),
                    FloatsToBytes(rows.f32(), rows.numel()));
    }
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
