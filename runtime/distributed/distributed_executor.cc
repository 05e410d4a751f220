#include "runtime/distributed/distributed_executor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"

namespace fg::runtime {
namespace {

// Tag steps of the collectives one epoch makes.
constexpr int kStepGradients = 2;

}  // namespace

DistributedExecutor::DistributedExecutor(DistributedSetup setup)
    : setup_(std::move(setup)), owners_(std::move(setup_.owners)) {  // one owner table, not two
  xctx_.comm = setup_.comm;
  xctx_.pipeline = setup_.pipeline;
}

absl::Status DistributedExecutor::StartGrid(const grid::GridSpec& spec, int64_t n, uint64_t seed, bool automatic,
                                            std::vector<int64_t> bounds) {
  FG_ASSIGN_OR_RETURN(grid_, grid::GridAggregation::Make(*setup_.comm, spec, n, seed, std::move(bounds)));
  grid_automatic_ = automatic;
  return absl::OkStatus();
}

absl::Status DistributedExecutor::status() const {
  if (!xctx_.error->ok() || grid_ == nullptr) return *xctx_.error;
  return grid_->status();
}

void DistributedExecutor::RecordError(const absl::Status& s) {
  if (!s.ok() && xctx_.error->ok()) *xctx_.error = s;
}

absl::Status DistributedExecutor::PlanLayer(int i, const nau::Layer& layer,
                                            std::shared_ptr<const hdg::Hdg> hdg,
                                            const Rows& input, const Rows& roots, int epoch,
                                            int same_as) {
  if (static_cast<int>(layers_.size()) <= i) layers_.resize(i + 1);
  if (same_as >= 0 && distributed() && !grid_ && (layers_[same_as].hdg || layers_[same_as].exchange.local_hdg)) {
    LayerPlan shared = layers_[same_as];  // tensors and matrices are shared, not copied
    shared.exchange.layer = i;            // its own tags
    if (shared.edge_return) shared.edge_return->rows.layer = i;
    shared.input = input;
    shared.roots = roots;
    shared.levels = executor_.Plan(shared.exchange.local_hdg ? *shared.exchange.local_hdg : *shared.hdg, layer);
    layers_[i] = std::move(shared);
    PlaceKeys(&layers_[i], layers_[i].table_keys);  // the roots' keys are this plan's
    if (i == 0) constant_remote_ = {};
    return absl::OkStatus();
  }
  LayerPlan& p = layers_[i];
  if (i == 0) constant_remote_ = {};  // a new plan: received again
  p.hdg = std::move(hdg);
  p.input = input;
  p.roots = roots;
  if (grid_) return PlanGridLayer(i, layer, same_as);
  const Tensor& input_ids = input.ids;
  const Tensor& root_ids = roots.ids;
  bool custom = false;  // a custom aggregator reads the HDG's structure on the host
  std::vector<bool> normalized;
  for (int k = 1; k <= p.hdg->num_levels(); ++k) {
    custom = custom || layer.LevelAggregator(k).reduction() == nau::Reduction::kCustom;
    normalized.push_back(layer.LevelAggregator(k).normalize_weights());
  }
  if (!distributed()) {
    p.levels = executor_.Plan(*p.hdg, layer);
    PlaceKeys(&p, p.input.keys);
    if (device_ != Device::kCpu && !custom) {  // and the HDG, when only the executor reads it
      std::shared_ptr<const hdg::Hdg> placed;  // layers over one HDG share its device copy
      for (int j = 0; j < i && placed == nullptr; ++j) {
        if (layers_[j].source == p.hdg) placed = layers_[j].hdg;
      }
      p.source = p.hdg;
      p.hdg =
          placed ? placed : std::make_shared<const hdg::Hdg>(p.hdg->OnDevice(device_, normalized));
    }
    return absl::OkStatus();
  }
  const bool both_ends = layer.UpdatesEdges() && layer.EdgeAggregationSide() != ag::EdgeSide::kDestination;
  if (both_ends && (layer.EdgeAggregationSide() != ag::EdgeSide::kBoth || root_ids.numel() != input_ids.numel())) {
    return absl::UnimplementedError(absl::StrCat(
        "layer ", i, " aggregates edge states into their sources",
        layer.EdgeAggregationSide() == ag::EdgeSide::kBoth ? " too, but its roots are not its input rows" : " only",
        ": across workers, edges reach their destinations, or both ends where a layer's roots are its input rows"));
  }
  // An edge's state is computed where its destination lives, from its source's row: row fetch.
  FG_ASSIGN_OR_RETURN(p.exchange, BuildLayerExchange(*setup_.comm, *p.hdg, layer.LevelAggregator(1),
                                                     owners_, input_ids, i, epoch,
                                                     layer.UpdatesEdges() ? ExchangeMode::kRowFetch
                                                                          : setup_.exchange,
                                                     layer.UpdatesEdges()));
  p.levels = executor_.Plan(p.exchange.local_hdg ? *p.exchange.local_hdg : *p.hdg, layer);
  p.edge_return.reset();
  if (both_ends) {  // before PlaceExchange: the local HDG's children are still on the host
    FG_ASSIGN_OR_RETURN(p.edge_return, BuildEdgeReturn(*setup_.comm, *p.exchange.local_hdg, p.exchange.num_owned,
                                                       input_ids, p.exchange.ghost_ids, owners_, i, epoch));
  }
  PlaceExchange(&p.exchange, device_, !custom, normalized);
  // Roots are owned rows of the input: their positions in input_ids.
  Tensor idx = Tensor::Empty({root_ids.numel()}, DType::kInt32);
  bool identity = idx.numel() == input_ids.numel();
  const int64_t* in = input_ids.i64();
  for (int64_t k = 0; k < idx.numel(); ++k) {
    const int64_t g = root_ids.i64()[k];
    idx.i32()[k] = static_cast<int32_t>(std::lower_bound(in, in + input_ids.numel(), g) - in);
    identity = identity && idx.i32()[k] == k;
  }
  p.self_rows = identity ? Tensor() : idx.To(device_);
  // The table [owned | ghosts] is keyed by the input's keys, then the ghosts' ids (a part knows
  // only its own vertices' source ids).
  const Tensor& keys = p.input.keys;
  const Tensor& ghosts = p.exchange.ghost_ids;
  Tensor table = Tensor::Empty({keys.numel() + ghosts.numel()}, DType::kInt64);
  std::copy(keys.i64(), keys.i64() + keys.numel(), table.i64());
  std::copy(ghosts.i64(), ghosts.i64() + ghosts.numel(), table.i64() + keys.numel());
  PlaceKeys(&p, table);
  return absl::OkStatus();
}

void DistributedExecutor::PlaceKeys(LayerPlan* p, Tensor table_keys) {
  p->table_keys = std::move(table_keys);
  p->placed_keys.clear();
  if (device_ == Device::kCpu) return;
  // Dropout's keys, placed there: each distinct list once.
  for (const Tensor* keys : {&p->input.keys, &p->roots.keys, &p->table_keys}) {
    Tensor placed;
    for (const auto& [host, there] : p->placed_keys) {
      if (host.raw() == keys->raw() || (host.numel() == keys->numel() &&
                                        std::equal(host.i64(), host.i64() + host.numel(), keys->i64()))) {
        placed = there;
      }
    }
    p->placed_keys.emplace_back(*keys, placed.defined() ? placed : keys->To(device_));
  }
}

void DistributedExecutor::ReleaseHdgs() {
  if (!distributed()) return;
  for (LayerPlan& p : layers_) p.hdg.reset();
}

void DistributedExecutor::BeginPass(nau::LayerContext* ctx, int epoch, bool training) {
  xctx_.epoch = epoch;
  xctx_.phase = training ? 0 : 1;
  xctx_.reductions = 0;
  xctx_.pending.clear();  // left by a pass that failed
  xctx_.staged.clear();
  ctx->sum_across_workers = nullptr;
  if (distributed()) {
    ctx->sum_across_workers = [this](const ag::Var& x) { return AllReduceSum(xctx_, x); };
  }
}

ag::Var DistributedExecutor::RunLayer(int i, nau::Layer& layer, const ag::Var& h,
                                      nau::LayerContext& ctx) {
  const LayerPlan& p = layers_[i];
  ctx.table_global_ids = p.input.keys;
  ctx.root_global_ids = p.roots.keys;
  ctx.placed_ids = p.placed_keys;
  if (!distributed()) return executor_.Run(*p.hdg, p.levels, layer, h, ctx);
  if (grid_) return RunGridLayer(i, layer, h, ctx);
  return RunExchanged(i, layer, h, ctx);
}

absl::Status DistributedExecutor::PlanGridLayer(int i, const nau::Layer& layer, int same_as) {
  LayerPlan& p = layers_[i];
  const hdg::Hdg& h = *p.hdg;
  const nau::Aggregator level1 = layer.LevelAggregator(1);
  const std::string scheme = grid::DescribeGrid(grid_->spec());
  if (h.num_levels() != 1 || !level1.decomposable() || level1.reduction() == nau::Reduction::kMax ||
      layer.UpdatesEdges()) {
    return absl::UnimplementedError(absl::StrCat(
        "--exchange ", scheme, ": layer ", i, " is not a sparse-dense product (",
        h.num_levels() != 1 ? absl::StrCat(h.num_levels(), " HDG levels")
        : layer.UpdatesEdges() ? std::string("edge states")
                               : std::string("a max or custom aggregation"),
        "); grids run one-level sum, mean and weighted-sum aggregations (GCN, SAGE, GIN, SGC): use "
        "--exchange auto"));
  }
  if (same_as >= 0 && layers_[same_as].grid_matrix >= 0) {
    p.grid_matrix = layers_[same_as].grid_matrix;
  } else {
    // Level 1 as the roots' rows of a matrix over the vertices: column = child (a vertex id), the
    // entry's weight.
    const Csr& c = h.level(1).csr();
    const std::vector<float> w = EntryWeights(h.level(1), level1);
    std::vector<int64_t> off(c.row_ptr(), c.row_ptr() + c.num_rows + 1);
    std::vector<int32_t> cols;
    c.VisitIndices([&](const auto* col) { cols.assign(col, col + c.nnz()); });
    Tensor ids = Tensor::Empty({h.num_roots()}, DType::kInt64);
    for (int64_t r = 0; r < h.num_roots(); ++r) ids.i64()[r] = h.roots().i32()[r];
    const absl::Status added =
        grid_->AddMatrix(i, ids, Csr::FromVectors(h.num_roots(), h.num_vertices(), off, cols, w));
    if (!added.ok()) {
      return absl::Status(added.code(), absl::StrCat("--exchange ", scheme, ": layer ", i, ": ", added.message(),
                                                     " (grids aggregate at every vertex)"));
    }
    p.grid_matrix = i;
  }
  // The output rows among the held ones (the last layer's are the owned share).
  const Tensor& in = p.input.ids;
  Tensor idx = Tensor::Empty({p.roots.ids.numel()}, DType::kInt32);
  bool identity = idx.numel() == in.numel();
  for (int64_t k = 0; k < idx.numel(); ++k) {
    const int64_t at = std::lower_bound(in.i64(), in.i64() + in.numel(), p.roots.ids.i64()[k]) - in.i64();
    idx.i32()[k] = static_cast<int32_t>(at);
    identity = identity && at == k;
  }
  p.self_rows = identity ? Tensor() : idx;
  PlaceKeys(&p, p.input.keys);
  return absl::OkStatus();
}

ag::Var DistributedExecutor::RunGridLayer(int i, nau::Layer& layer, const ag::Var& h, nau::LayerContext& ctx) {
  const LayerPlan& p = layers_[i];
  ctx.root_global_ids = p.input.keys;  // every held row is a root until the output is cut
  ag::Var m;
  {
    ScopedTimer t(ctx.stats ? &ctx.stats->message : nullptr);
    m = layer.Message(ctx, h);
  }
  ag::Var agg;
  {
    ScopedTimer t(ctx.stats ? &ctx.stats->aggregation : nullptr);
    agg = grid_->Aggregate(p.grid_matrix, m);
  }
  ScopedTimer tu(ctx.stats ? &ctx.stats->update : nullptr);
  if (ctx.capture_nbr != nullptr) *ctx.capture_nbr = agg;
  ag::Var out = layer.Update(ctx, h, agg);
  return p.self_rows.defined() ? ag::GatherRows(out, p.self_rows) : out;
}

ag::Var DistributedExecutor::RunExchanged(int i, nau::Layer& layer, const ag::Var& h,
                                          nau::LayerContext& ctx) {
  const LayerPlan& p = layers_[i];
  const LayerExchange& ex = p.exchange;
  ag::Var m, self, agg;
  {
    ScopedTimer t(ctx.stats ? &ctx.stats->message : nullptr);
    m = layer.Message(ctx, h);
    self = p.self_rows.defined() ? ag::GatherRows(h, p.self_rows) : h;
  }
  ScopedTimer t(ctx.stats ? &ctx.stats->aggregation : nullptr);
  const int64_t d = m.row_width();
  const bool constant = i == 0 && !m.requires_grad() && m.value().raw() == h.value().raw();
  if (i == 0 && ctx.training) constant_in_training_ = constant;
  const bool keep = constant && constant_in_training_;
  ConstantRemote& kept = constant_remote_;
  const bool reuse = keep && kept.source.defined() && kept.source.raw() == m.value().raw();
  if (keep && !reuse) kept = {m.value(), Tensor(), Tensor()};
  if (i == 0 && !keep) kept = {};
  if (!reuse) {  // the messages this pass sends and receives
    MakeRoomForHostBuffers(static_cast<size_t>(ex.rows_sent + ex.partials_sent + ex.recv_chosen) * d * sizeof(float));
  }
  if (ex.partial_path) {
    if (reuse) {
      agg = ag::Add(ag::Spmm(ex.local_owned, m, ops::SpmmReduce::kSum), ag::Var(kept.remote));
    } else {
      ag::Var rows_token = PostRows(xctx_, ex, m);
      ag::Var part_token = PostPartials(xctx_, ex, m);
      ag::Var ghosts;
      if (!xctx_.pipeline) ghosts = ReceiveRows(xctx_, ex, rows_token, d);
      Stopwatch local;
      agg = ag::Spmm(ex.local_owned, m, ops::SpmmReduce::kSum);  // overlaps the transfers
      FlushSends(xctx_);  // a device's copies to the host ran beside that product
      if (xctx_.pipeline) xctx_.compute_in_flight += local.Seconds();
      if (xctx_.pipeline) ghosts = ReceiveRows(xctx_, ex, rows_token, d);
      if (!keep && !m.requires_grad()) {
        // Nothing to differentiate or keep (a constant input under dropout, or an evaluation
        // pass): the ghost and received partial sums are added into agg's own buffer.
        Tensor sum = agg.value();
        ops::AddInPlace(&sum, ops::Spmm(ex.local_ghost->csr(), ghosts.value(), ops::SpmmReduce::kSum));
        ghosts = ag::Var();
        AddReceivedPartials(xctx_, ex, &sum);
      } else {
        ag::Var remote = ag::Add(ag::Spmm(ex.local_ghost, ghosts, ops::SpmmReduce::kSum),
                                 ReceivePartials(xctx_, ex, part_token, d));
        if (keep && xctx_.error->ok()) kept.remote = remote.value();
        agg = ag::Add(agg, remote);
      }
    }
  } else {
    ag::Var ghosts;
    if (reuse) {
      ghosts = ag::Var(kept.ghosts);
    } else {
      ag::Var token = PostRows(xctx_, ex, m);
      ghosts = ReceiveRows(xctx_, ex, token, d);
      if (keep && xctx_.error->ok()) kept.ghosts = ghosts.value();
    }
    ag::Var table = ConcatRows(m, ghosts);
    ctx.table_global_ids = p.table_keys;
    if (!layer.UpdatesEdges()) {
      agg = executor_.Aggregate(*ex.local_hdg, p.levels, layer, table, self, ctx);
    } else if (!p.edge_return) {
      agg = executor_.AggregateEdges(*ex.local_hdg, layer, table, self, ctx);
    } else {  // both ends: the destination blocks here, then the source blocks where the sources live
      agg = executor_.AggregateEdges(*ex.local_hdg, layer, table, self, ctx, ag::EdgeSide::kDestination);
      agg = ag::Concat({agg, AggregateAtSources(xctx_, *p.edge_return, ctx.edge_state, layer.EdgeAggregation())});
    }
  }
  if (!reuse) ReleaseFreedMemory();  // the messages are gone: so are their pages
  ScopedTimer tu(ctx.stats ? &ctx.stats->update : nullptr);
  if (ctx.capture_nbr != nullptr) *ctx.capture_nbr = agg;
  return layer.Update(ctx, self, agg);
}

ag::Var DistributedExecutor::GatherTable(int i, const ag::Var& rows) {
  if (!distributed()) return rows;
  const LayerExchange& ex = layers_[i].exchange;
  FG_CHECK(!ex.partial_path && !grid_) << "layer " << i << " does not fetch rows";
  ag::Var token = PostRows(xctx_, ex, rows);
  return ConcatRows(rows, ReceiveRows(xctx_, ex, token, rows.row_width()));
}

absl::Status DistributedExecutor::PlanAllRows(const Rows& roots, int epoch) {
  // Tagged as the layer after the model's last.
  FG_ASSIGN_OR_RETURN(all_rows_, BuildAllRows(*setup_.comm, roots.ids, roots.keys,
                                              static_cast<int>(layers_.size()), epoch,
                                              &all_rows_order_, &all_keys_));
  PlaceExchange(&all_rows_, device_, false, {});
  all_rows_order_ = all_rows_order_.To(device_);
  return absl::OkStatus();
}

ag::Var DistributedExecutor::AllRows(const ag::Var& mine) {
  ag::Var token = PostRows(xctx_, all_rows_, mine);
  ag::Var ghosts = ReceiveRows(xctx_, all_rows_, token, mine.row_width());
  return ag::GatherRows(ConcatRows(mine, ghosts), all_rows_order_);
}

void DistributedExecutor::AllReduceGradients(const std::vector<nn::NamedParameter>& params,
                                             int epoch) {
  if (!distributed()) return;
  // One flat buffer where the parameters live, summed on the host.
  int64_t total = 0;
  for (const auto& p : params) total += p.var.value().numel();
  Tensor flat = Tensor::Zeros({total}, DType::kFloat32, device_);
  const auto at = [&](int64_t offset) { return static_cast<char*>(flat.raw()) + offset * sizeof(float); };
  int64_t offset = 0;
  for (const auto& p : params) {
    const Tensor& g = p.var.grad();
    if (g.defined()) CopyBytes(at(offset), device_, g.raw(), g.device(), g.nbytes());
    offset += p.var.value().numel();
  }
  Tensor host = flat.To(Device::kCpu);
  RecordError(setup_.comm->AllReduce(host.f32(), total, epoch, kStepGradients));
  flat = host.To(device_);
  offset = 0;
  for (const auto& p : params) {
    Tensor& g = p.var.OwnedGrad();
    CopyBytes(g.raw(), g.device(), at(offset), device_, g.nbytes());
    offset += g.numel();
  }
}

void DistributedExecutor::SumDoubles(std::vector<double>* values, int epoch, int step) {
  if (distributed()) RecordError(setup_.comm->AllReduce(values, epoch, step));
}

std::string DistributedExecutor::Explain(int i) const {
  const LayerPlan& p = layers_[i];
  std::string out;
  if (grid_) {
    return absl::StrCat("  level 1: the grid product (", grid::DescribeGrid(grid_->spec()), ") of matrix ",
                        p.grid_matrix, " over every vertex; this worker holds ", p.input.ids.numel(), " rows\n");
  }
  if (distributed()) {
    const LayerExchange& ex = p.exchange;
    std::string partial, rows;
    for (const PeerExchange& pe : ex.peers) {
      if (pe.peer == rank()) continue;
      std::string& list = pe.partial ? partial : rows;
      absl::StrAppend(&list, list.empty() ? "" : ",", pe.peer);
    }
    absl::StrAppend(&out, "  level 1: distributed - ",
                    ex.partial_path ? "partial aggregation from workers {" + partial + "}, " : "",
                    "row fetch from workers {", rows, "}; receives ", ex.recv_chosen,
                    " vectors per pass (row fetch only ", ex.recv_rows_only, ", partial only ",
                    ex.recv_partial_only, ", every neighbour row ", ex.recv_naive, ")\n");
  }
  absl::StrAppend(&out, nau::HybridExecutor::Explain(p.levels));
  return out;
}

Traffic DistributedExecutor::ReportTraffic(const nau::ExecStats& stats) const {
  Traffic t;
  if (!distributed()) return t;
  Communicator& c = *setup_.comm;
  t.world_size = c.size();
  t.exchange = grid_ ? grid::DescribeGrid(grid_->spec()) + (grid_automatic_ ? " (auto)" : "")
               : setup_.exchange == ExchangeMode::kRowFetch ? "1d rows"
               : setup_.exchange == ExchangeMode::kPartial  ? "1d partial"
                                                            : "1d auto";
  t.bytes_features = c.bytes_sent(TrafficKind::kFeatures);
  t.bytes_partials = c.bytes_sent(TrafficKind::kPartials);
  t.bytes_gradients = c.bytes_sent(TrafficKind::kGradients);
  t.bytes_allreduce = c.bytes_sent(TrafficKind::kAllReduce);
  t.bytes_control = c.bytes_sent(TrafficKind::kControl);
  t.bytes_setup = c.bytes_sent(TrafficKind::kSetup);
  t.wait_seconds = c.wait_seconds();
  t.compute_seconds = stats.Total() - t.wait_seconds;
  for (const LayerPlan& p : layers_) {
    t.vectors_chosen += p.exchange.recv_chosen;
    t.vectors_rows_only += p.exchange.recv_rows_only;
    t.vectors_partial_only += p.exchange.recv_partial_only;
    t.vectors_naive += p.exchange.recv_naive;
  }
  t.overlap = xctx_.compute_in_flight / std::max(1e-12, xctx_.compute_in_flight + t.wait_seconds);
  return t;
}

}  // namespace fg::runtime
