#include "runtime/tasks/graph_batch.h"

#include <numeric>
#include <span>

#include "flexgraph/base/logging.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/graph/builder.h"
#include "flexgraph/graph/tracking.h"

namespace fg::runtime {
namespace {

// Rows `rows` (in order) of a [n, ...] table of 8-byte or 4-byte elements, concatenated.
Tensor GatherRanges(const Tensor& t, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  if (!t.defined()) return Tensor();
  int64_t n = 0;
  for (const auto& [b, e] : ranges) n += e - b;
  Shape shape = t.shape();
  shape[0] = n;
  Tensor out = Tensor::Empty(shape, t.dtype());
  const size_t row_bytes = t.nbytes() / std::max<int64_t>(1, t.dim(0));
  int64_t at = 0;
  for (const auto& [b, e] : ranges) {
    std::memcpy(static_cast<char*>(out.raw()) + at * row_bytes,
                static_cast<const char*>(t.raw()) + b * row_bytes, (e - b) * row_bytes);
    at += e - b;
  }
  return out;
}

}  // namespace

GraphBatch BatchGraphs(const graph::Dataset& ds, const std::vector<int64_t>& ids) {
  FG_CHECK(ds.IsGraphSet()) << "BatchGraphs: dataset " << ds.name << " is not a graph set";
  const graph::GraphSet& gs = *ds.graphs;
  const Csr& a = ds.Adjacency();
  const int64_t M = gs.num_edges();
  auto batch = std::make_shared<graph::Dataset>();
  graph::GraphSet& bs = batch->graphs.emplace();
  std::vector<std::pair<int64_t, int64_t>> node_ranges, edge_ranges, graph_rows;
  std::vector<int64_t> node_off = {0}, edge_off = {0}, offsets = {0};
  std::vector<int32_t> cols;
  std::vector<int64_t> entry_edges;
  for (int64_t g : ids) {
    FG_CHECK(g >= 0 && g < gs.num_graphs()) << "BatchGraphs: graph " << g << " of " << gs.num_graphs();
    node_ranges.push_back({gs.NodeBegin(g), gs.NodeEnd(g)});
    edge_ranges.push_back({gs.EdgeBegin(g), gs.EdgeEnd(g)});
    graph_rows.push_back({g, g + 1});
    node_off.push_back(node_off.back() + gs.NodeEnd(g) - gs.NodeBegin(g));
    edge_off.push_back(edge_off.back() + gs.EdgeEnd(g) - gs.EdgeBegin(g));
  }
  const int64_t new_m = edge_off.back();
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t g = ids[i];
    const int64_t node_shift = node_off[i] - gs.NodeBegin(g);
    const int64_t edge_shift = edge_off[i] - gs.EdgeBegin(g);
    for (int64_t r = gs.NodeBegin(g); r < gs.NodeEnd(g); ++r) {
      for (int64_t k = a.row_ptr()[r]; k < a.row_ptr()[r + 1]; ++k) {
        cols.push_back(static_cast<int32_t>(a.col()[k] + node_shift));
        const int64_t e = gs.entry_edges.i64()[k];
        entry_edges.push_back(e < 0 ? -1 : e < M ? e + edge_shift : new_m + (e - M) + edge_shift);
      }
      offsets.push_back(static_cast<int64_t>(cols.size()));
    }
  }
  const int64_t n = node_off.back();
  batch->name = ds.name;
  batch->graph.node_types = {"node"};
  batch->graph.num_nodes = {n};
  graph::Relation rel;
  rel.src_type = rel.dst_type = "node";
  rel.name = ds.graph.relations[0].name;
  rel.by_dst = Csr::FromVectors(n, n, offsets, cols);
  batch->graph.relations.push_back(std::move(rel));
  for (const auto& [type, f] : ds.features) batch->features[type] = GatherRanges(f, node_ranges);
  bs.node_offsets = Tensor::FromVector(node_off);
  bs.edge_offsets = Tensor::FromVector(edge_off);
  bs.edges = GatherRanges(gs.edges, edge_ranges);
  for (size_t i = 0; i < ids.size() && bs.edges.defined(); ++i) {
    const int64_t shift = node_off[i] - gs.NodeBegin(ids[i]);
    for (int64_t k = edge_off[i]; k < edge_off[i + 1]; ++k) {
      bs.edges.i64()[2 * k] += shift;
      bs.edges.i64()[2 * k + 1] += shift;
    }
  }
  bs.entry_edges = Tensor::FromVector(entry_edges);
  bs.edge_feat = GatherRanges(gs.edge_feat, edge_ranges);
  bs.edge_labels = GatherRanges(gs.edge_labels, edge_ranges);
  bs.num_edge_classes = gs.num_edge_classes;
  bs.graph_labels = GatherRanges(gs.graph_labels, graph_rows);
  bs.num_graph_classes = gs.num_graph_classes;
  GraphBatch out;
  out.graphs = ids;
  out.owned = batch;
  out.data = batch.get();
  if (bs.edge_feat.defined()) out.entry_features = graph::GatherEntryRows(bs.edge_feat, bs.entry_edges, new_m);
  return out;
}

GraphBatch WholeSet(const graph::Dataset& ds) {
  FG_CHECK(ds.IsGraphSet()) << "WholeSet: dataset " << ds.name << " is not a graph set";
  GraphBatch out;
  out.graphs.resize(ds.graphs->num_graphs());
  std::iota(out.graphs.begin(), out.graphs.end(), 0);
  out.data = &ds;
  const graph::GraphSet& gs = *ds.graphs;
  if (gs.edge_feat.defined()) {
    out.entry_features = graph::GatherEntryRows(gs.edge_feat, gs.entry_edges, gs.num_edges());
  }
  return out;
}

GraphBatch ReflectEvents(const GraphBatch& batch, uint64_t seed, int epoch) {
  auto data = std::make_shared<graph::Dataset>(*batch.data);
  graph::GraphSet& gs = *data->graphs;
  Tensor& nodes = data->features.at("node");
  nodes = nodes.Clone();
  Tensor entries = batch.entry_features.defined() ? batch.entry_features.Clone() : Tensor();
  if (gs.edge_feat.defined()) gs.edge_feat = gs.edge_feat.Clone();
  const Csr& a = data->Adjacency();
  // Negates `columns` of rows [lo, hi) of `t` (float [rows, width]).
  auto negate = [](Tensor& t, int64_t lo, int64_t hi, std::span<const int> columns) {
    if (!t.defined()) return;
    const int64_t width = t.row_width();
    for (int64_t r = lo; r < hi; ++r) {
      for (int c : columns) t.f32()[r * width + c] = -t.f32()[r * width + c];
    }
  };
  for (int64_t i = 0; i < batch.num_graphs(); ++i) {
    RandomStream rng(seed, MixKey(0x2EF1EC7, static_cast<uint64_t>(epoch), static_cast<uint64_t>(batch.graphs[i])));
    const uint64_t image = rng.Below(4);
    const int64_t v0 = gs.NodeBegin(i), v1 = gs.NodeEnd(i), e0 = gs.EdgeBegin(i), e1 = gs.EdgeEnd(i);
    const int64_t k0 = a.row_ptr()[v0], k1 = a.row_ptr()[v1];
    if (image & 1) {
      negate(nodes, v0, v1, {&graph::kNodeZColumn, 1});
      negate(gs.edge_feat, e0, e1, graph::kEdgeZColumns);
      negate(entries, k0, k1, graph::kEdgeZColumns);
    }
    if (image & 2) {
      negate(nodes, v0, v1, {&graph::kNodePhiColumn, 1});
      negate(gs.edge_feat, e0, e1, graph::kEdgePhiColumns);
      negate(entries, k0, k1, graph::kEdgePhiColumns);
    }
  }
  GraphBatch out;
  out.graphs = batch.graphs;
  out.data = data.get();
  out.owned = std::move(data);
  out.entry_features = std::move(entries);
  return out;
}

std::vector<std::vector<int64_t>> ShuffledBatches(const Tensor& split, int64_t batch_size,
                                                  uint64_t seed, int epoch) {
  std::vector<int64_t> ids;
  for (int64_t k = 0; split.defined() && k < split.numel(); ++k) ids.push_back(split.i64()[k]);
  RandomStream rng(seed, MixKey(0x6BA7C4, static_cast<uint64_t>(epoch)));
  for (int64_t i = static_cast<int64_t>(ids.size()) - 1; i > 0; --i) {  // Fisher-Yates
    std::swap(ids[i], ids[rng.Below(static_cast<uint64_t>(i + 1))]);
  }
  std::vector<std::vector<int64_t>> out;
  const int64_t b = batch_size > 0 ? batch_size : std::max<int64_t>(1, ids.size());
  for (size_t at = 0; at < ids.size(); at += b) {
    out.emplace_back(ids.begin() + at, ids.begin() + std::min<size_t>(ids.size(), at + b));
  }
  return out;
}

std::vector<std::vector<int64_t>> OrderedBatches(const Tensor& split, int64_t batch_size) {
  std::vector<int64_t> ids;
  for (int64_t k = 0; split.defined() && k < split.numel(); ++k) ids.push_back(split.i64()[k]);
  std::vector<std::vector<int64_t>> out;
  const int64_t b = batch_size > 0 ? batch_size : std::max<int64_t>(1, ids.size());
  for (size_t at = 0; at < ids.size(); at += b) {
    out.emplace_back(ids.begin() + at, ids.begin() + std::min<size_t>(ids.size(), at + b));
  }
  return out;
}

}  // namespace fg::runtime
