#include "runtime/distributed/edge_return.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/ops/ops.h"

namespace fg::runtime {
namespace {

// The index lists' phase (as exchange_plan.cc's); BuildLayerExchange's lists use step 0.
constexpr int kPhaseSetup = 8, kStepEdgeReturn = 1;

}  // namespace

absl::StatusOr<EdgeReturn> BuildEdgeReturn(Communicator& comm, const hdg::Hdg& local_hdg, int64_t num_owned,
                                           const Tensor& owned_ids, const Tensor& ghost_ids,
                                           const Ownership& owners, int layer, int epoch) {
  const int P = comm.size(), me = comm.rank();
  const Csr& c = local_hdg.level(1).csr();
  std::vector<int64_t> cols(c.nnz());
  c.VisitIndices([&](const auto* col) { std::copy(col, col + c.nnz(), cols.begin()); });
  // My entries whose source a peer owns, and the source's id, per peer in entry order.
  std::vector<std::vector<int32_t>> send(P);
  std::vector<std::vector<int64_t>> targets(P);
  std::vector<int64_t> local_count(num_owned + 1, 0);
  for (int64_t k = 0; k < c.nnz(); ++k) {
    if (cols[k] < num_owned) {
      ++local_count[cols[k]];
      continue;
    }
    const int64_t g = ghost_ids.i64()[cols[k] - num_owned];
    const int q = owners.Of(g);
    send[q].push_back(static_cast<int32_t>(k));
    targets[q].push_back(g);
  }
  std::vector<std::string> outgoing(P);
  for (int q = 0; q < P; ++q) {
    outgoing[q].assign(reinterpret_cast<const char*>(targets[q].data()), targets[q].size() * sizeof(int64_t));
  }
  FG_ASSIGN_OR_RETURN(std::vector<std::string> incoming,
                      comm.AllToAllV(std::move(outgoing),
                                     MakeTag(epoch, layer, kPhaseSetup, TrafficKind::kControl, kStepEdgeReturn)));
  EdgeReturn r;
  LayerExchange& ex = r.rows;
  ex.layer = layer;
  ex.step = kStepEdgeReturn;
  ex.num_owned = c.nnz();  // the rows sent are states
  std::vector<int64_t> received;      // the owned vertex (its row) each received state goes to
  std::vector<int64_t> received_ids;  // and its global id
  std::vector<int32_t> send_index;
  const int64_t* owned = owned_ids.i64();
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    PeerExchange pe;
    pe.peer = q;
    pe.send_rows = Tensor::FromVector(send[q]);
    send_index.insert(send_index.end(), send[q].begin(), send[q].end());
    const std::string& bytes = incoming[q];
    if (bytes.size() % sizeof(int64_t) != 0) {
      return absl::DataLossError(absl::StrCat("layer ", layer, ": worker ", q, " sent an edge list of ",
                                              bytes.size(), " bytes, not whole ids"));
    }
    const int64_t n = static_cast<int64_t>(bytes.size() / sizeof(int64_t));
    std::vector<int32_t> slots(n);
    for (int64_t j = 0; j < n; ++j) {
      int64_t g;
      std::memcpy(&g, bytes.data() + j * sizeof(int64_t), sizeof(g));
      const int64_t* at = std::lower_bound(owned, owned + num_owned, g);
      if (at == owned + num_owned || *at != g) {
        return absl::DataLossError(absl::StrCat("layer ", layer, ": worker ", q, " sent an edge state for vertex ",
                                                g, ", which this worker does not own"));
      }
      slots[j] = static_cast<int32_t>(received.size());
      received.push_back(at - owned);
      received_ids.push_back(g);
    }
    pe.recv_slots = Tensor::FromVector(slots);
    ex.peers.push_back(std::move(pe));
  }
  ex.ghost_ids = Tensor::FromVector(received_ids);
  ex.send_index = Tensor::FromVector(send_index);
  ex.send_grouping = std::make_shared<SparseMatrix>(ops::GroupByIndex(ex.send_index, ex.num_owned));
  ex.rows_sent = static_cast<int64_t>(send_index.size());
  ex.recv_chosen = static_cast<int64_t>(received.size());
  // Groups: per owned vertex, its own entries as a source (entry order), then the received states.
  std::vector<int64_t> offsets(num_owned + 1, 0);
  for (int64_t v = 0; v < num_owned; ++v) offsets[v + 1] = local_count[v];
  for (int64_t v : received) ++offsets[v + 1];
  for (int64_t v = 0; v < num_owned; ++v) offsets[v + 1] += offsets[v];
  std::vector<int64_t> fill(offsets.begin(), offsets.end() - 1);
  std::vector<int32_t> order(offsets.back());
  for (int64_t k = 0; k < c.nnz(); ++k) {
    if (cols[k] < num_owned) order[fill[cols[k]]++] = static_cast<int32_t>(k);
  }
  for (size_t j = 0; j < received.size(); ++j) order[fill[received[j]]++] = static_cast<int32_t>(c.nnz() + j);
  r.offsets = Tensor::FromVector(offsets);
  r.order = Tensor::FromVector(order);
  return r;
}

ag::Var AggregateAtSources(ExchangeContext& ctx, const EdgeReturn& r, const ag::Var& states,
                           const std::vector<ag::EdgeReduce>& reduce) {
  const ag::Var token = PostRows(ctx, r.rows, states);
  const ag::Var got = ReceiveRows(ctx, r.rows, token, states.row_width());
  return ag::AggregateEdgeGroups(r.offsets, r.order, ConcatRows(states, got), reduce);
}

}  // namespace fg::runtime
