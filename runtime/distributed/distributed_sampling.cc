#include "runtime/distributed/distributed_sampling.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"
#include "runtime/comm/collectives.h"
#include "runtime/distributed/sampling_messages.h"

namespace fg::runtime {
namespace {

using namespace sampling_messages;  // NOLINT: its tags and steps

// One layer: every frontier vertex's row drawn by its owner. Group k (frontier[k]) draws as batch
// number batch[k] of epoch `draw_epoch`; `epoch` names the messages. Workers may hold different
// numbers of groups: a request names its groups' batch numbers.
absl::Status SampleLayer(Communicator& comm, const Ownership& owners,
                         const sampling::NeighbourhoodMatrix& a, const sampling::SamplerOptions& o,
                         int fanout, int draw_epoch, int epoch, int layer, int64_t bulk,
                         const std::vector<int64_t>& batch_of,
                         const std::vector<std::vector<int64_t>>& frontier,
                         std::vector<sampling::SampledRows>* out) {
  const int P = comm.size(), me = comm.rank();
  const int64_t K = static_cast<int64_t>(frontier.size());
  const std::string what = absl::StrCat("sampling layer ", layer);
  // asked[q * K + k]: the vertices of group k that worker q draws (mine), in frontier order.
  std::vector<std::vector<int64_t>> asked(static_cast<size_t>(P) * K);
  std::vector<std::vector<int32_t>> owner(K);
  for (int64_t k = 0; k < K; ++k) {
    owner[k].resize(frontier[k].size());
    for (size_t j = 0; j < frontier[k].size(); ++j) {
      const int64_t v = frontier[k][j];
      if (v < 0 || v >= owners.num_vertices()) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": vertex ", v, " is outside the graph"));
      }
      owner[k][j] = owners.Of(v);
      asked[owner[k][j] * K + k].push_back(v);
    }
  }
  // A request: the batch numbers and sizes of the groups that ask this owner, then their vertices.
  std::vector<std::string> requests(P);
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    std::vector<int64_t> batches, counts, ids;
    for (int64_t k = 0; k < K; ++k) {
      if (asked[q * K + k].empty()) continue;
      batches.push_back(batch_of[k]);
      counts.push_back(static_cast<int64_t>(asked[q * K + k].size()));
      ids.insert(ids.end(), asked[q * K + k].begin(), asked[q * K + k].end());
    }
    AppendVector(&requests[q], batches);
    AppendVector(&requests[q], counts);
    AppendVector(&requests[q], ids);
  }
  FG_ASSIGN_OR_RETURN(std::vector<std::string> got,
                      Exchange(comm, std::move(requests),
                               Tag(epoch, layer, TrafficKind::kControl, kStepRowRequest, bulk), what));
  // Groups to draw, every worker's in rank order (mine: my non-empty groups, in order), with their
  // vertices and rows of `a`; first[q]: worker q's first group.
  std::vector<std::vector<int64_t>> vertices, rows;
  std::vector<int64_t> batch, first(P + 1, 0);
  for (int q = 0; q < P; ++q) {
    first[q] = static_cast<int64_t>(batch.size());
    std::vector<int64_t> batches, counts, ids;
    if (q != me) {
      size_t pos = 0;
      FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "sampling request", q, &batches));
      FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "sampling request", q, &counts));
      FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "sampling request", q, &ids));
      if (batches.size() != counts.size() || !CountsSplit(counts, counts.size(), ids.size())) {
        return absl::DataLossError(absl::StrCat(what, ": worker ", q, " asked for ", ids.size(), " rows in ",
                                                counts.size(), " groups of ", batches.size(), " batch numbers"));
      }
    } else {
      for (int64_t k = 0; k < K; ++k) {
        if (asked[me * K + k].empty()) continue;
        batches.push_back(batch_of[k]);
        counts.push_back(static_cast<int64_t>(asked[me * K + k].size()));
        ids.insert(ids.end(), asked[me * K + k].begin(), asked[me * K + k].end());
      }
    }
    size_t at = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
      batch.push_back(batches[k]);
      std::vector<int64_t>& g = rows.emplace_back(counts[k]);
      std::vector<int64_t>& vs = vertices.emplace_back(counts[k]);
      for (int64_t j = 0; j < counts[k]; ++j) {
        const int64_t v = ids[at++];
        vs[j] = v;
        const int64_t row = v >= 0 && v < a.num_vertices() ? a.RowOf(v) : -1;
        if (row < 0) {
          return q == me ? absl::InvalidArgumentError(absl::StrCat(
                               what, ": vertex ", v, " has no neighbourhood (not one of its roots)"))
                         : absl::DataLossError(absl::StrCat(
                               what, ": worker ", q, " asked for vertex ", v,
                               ", which this worker does not own"));
        }
        g[j] = row;
      }
    }
  }
  first[P] = static_cast<int64_t>(batch.size());
  std::vector<sampling::SampledRows> drawn(batch.size());
  sampling::SampleRows(a, o, fanout, draw_epoch, layer, batch, vertices, rows, &drawn);
  const bool weighted = a.weights() != nullptr;
  std::vector<std::string> replies(P);
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    std::vector<int32_t> lengths, cols;
    std::vector<float> weights;
    for (int64_t g = first[q]; g < first[q + 1]; ++g) {
      const sampling::SampledRows& s = drawn[g];
      for (size_t j = 0; j + 1 < s.offsets.size(); ++j) {
        lengths.push_back(static_cast<int32_t>(s.offsets[j + 1] - s.offsets[j]));
      }
      cols.insert(cols.end(), s.cols.begin(), s.cols.end());
      weights.insert(weights.end(), s.weights.begin(), s.weights.end());
    }
    AppendVector(&replies[q], lengths);
    AppendVector(&replies[q], cols);
    AppendVector(&replies[q], weights);
  }
  FG_ASSIGN_OR_RETURN(got, Exchange(comm, std::move(replies),
                                    Tag(epoch, layer, TrafficKind::kControl, kStepRowReply, bulk), what));
  // Every worker's rows for this one, and where the next batch's start (row, entry).
  struct Reply {
    std::vector<int32_t> lengths, cols;
    std::vector<float> weights;
    size_t row = 0, entry = 0;
  };
  std::vector<Reply> reply(P);
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    Reply& r = reply[q];
    size_t pos = 0;
    FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "sampled rows", q, &r.lengths));
    FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "sampled rows", q, &r.cols));
    FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "sampled rows", q, &r.weights));
    size_t want_rows = 0;
    for (int64_t k = 0; k < K; ++k) want_rows += asked[q * K + k].size();
    int64_t entries = 0;
    bool negative = false;
    for (int32_t n : r.lengths) {
      entries += n;
      negative |= n < 0;
    }
    if (r.lengths.size() != want_rows || negative || entries != static_cast<int64_t>(r.cols.size()) ||
        r.weights.size() != (weighted ? r.cols.size() : 0)) {
      return absl::DataLossError(absl::StrCat(what, ": worker ", q, " replied ", r.lengths.size(),
                                              " rows with ", r.cols.size(), " entries and ",
                                              r.weights.size(), " weights for ", want_rows,
                                              " rows asked"));
    }
  }
  // Each batch's rows in frontier order, from this worker's draws and the replies.
  int64_t mine = first[me];  // my next non-empty group's draws
  for (int64_t k = 0; k < K; ++k) {
    sampling::SampledRows& s = (*out)[k];
    static const sampling::SampledRows kNone;
    const sampling::SampledRows& local = asked[me * K + k].empty() ? kNone : drawn[mine++];
    size_t local_row = 0;
    s.offsets.assign(frontier[k].size() + 1, 0);
    s.cols.clear();
    s.weights.clear();
    for (size_t j = 0; j < frontier[k].size(); ++j) {
      const int q = owner[k][j];
      if (q == me) {
        const int64_t lo = local.offsets[local_row], hi = local.offsets[local_row + 1];
        s.cols.insert(s.cols.end(), local.cols.begin() + lo, local.cols.begin() + hi);
        if (weighted) s.weights.insert(s.weights.end(), local.weights.begin() + lo, local.weights.begin() + hi);
        ++local_row;
      } else {
        Reply& r = reply[q];
        const size_t n = static_cast<size_t>(r.lengths[r.row++]);
        s.cols.insert(s.cols.end(), r.cols.begin() + r.entry, r.cols.begin() + r.entry + n);
        if (weighted) s.weights.insert(s.weights.end(), r.weights.begin() + r.entry, r.weights.begin() + r.entry + n);
        r.entry += n;
      }
      s.offsets[j + 1] = static_cast<int64_t>(s.cols.size());
    }
  }
  return absl::OkStatus();
}

// The input rows' features and keys of every batch: this worker's, the cache's, and the others'
// from their owners.
absl::Status FetchInputs(Communicator& comm, const Ownership& owners, const OwnedRows& mine,
                         int epoch, int64_t bulk, RemoteRowCache* cache,
                         std::vector<sampling::MiniBatch>* batches) {
  const int P = comm.size(), me = comm.rank();
  const int64_t f = mine.features.dim(1), owned = mine.keys.numel();
  const std::string what = "sampled input rows";
  // Per owner, the other workers' rows the batches read (sorted, distinct), each row's source
  // (the cache, or the reply to the request of those not kept) and key.
  std::vector<std::vector<int64_t>> read(P), wanted(P), key(P);
  std::vector<std::vector<const float*>> source(P);
  for (const sampling::MiniBatch& b : *batches) {
    const Tensor& table = b.blocks[0].table;
    for (int64_t r = 0; r < table.numel(); ++r) {
      const int64_t v = table.i64()[r];
      const int q = owners.Of(v);
      if (q != me) read[q].push_back(v);
    }
  }
  if (cache != nullptr) cache->BeginBulk(epoch);
  std::vector<std::string> requests(P);
  int64_t fetched = 0, from_cache = 0;
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    std::sort(read[q].begin(), read[q].end());
    read[q].erase(std::unique(read[q].begin(), read[q].end()), read[q].end());
    if (cache != nullptr) cache->Count(read[q]);
    source[q].assign(read[q].size(), nullptr);
    key[q].resize(read[q].size());
    for (size_t i = 0; i < read[q].size(); ++i) {
      if (cache != nullptr) source[q][i] = cache->Find(read[q][i], &key[q][i]);
      if (source[q][i] == nullptr) wanted[q].push_back(read[q][i]);
    }
    AppendVector(&requests[q], wanted[q]);
    fetched += static_cast<int64_t>(wanted[q].size());
    from_cache += static_cast<int64_t>(read[q].size() - wanted[q].size());
  }
  if (cache != nullptr) cache->Record(fetched, from_cache);
  FG_ASSIGN_OR_RETURN(std::vector<std::string> got,
                      Exchange(comm, std::move(requests),
                               Tag(epoch, 0, TrafficKind::kControl, kStepInputRequest, bulk), what));
  std::vector<std::string> replies(P);
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    std::vector<int64_t> ids;
    size_t pos = 0;
    FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "input row request", q, &ids));
    std::vector<int64_t> keys(ids.size());
    std::vector<float> rows(ids.size() * f);
    for (size_t i = 0; i < ids.size(); ++i) {
      const int64_t local = ids[i] - mine.begin;
      if (local < 0 || local >= owned) {
        return absl::DataLossError(absl::StrCat(what, ": worker ", q, " asked for vertex ", ids[i],
                                                ", which this worker does not own"));
      }
      keys[i] = mine.keys.i64()[local];
      std::memcpy(rows.data() + i * f, mine.features.f32() + local * f, f * sizeof(float));
    }
    AppendVector(&replies[q], keys);
    AppendVector(&replies[q], rows);
  }
  FG_ASSIGN_OR_RETURN(got, Exchange(comm, std::move(replies),
                                    Tag(epoch, 0, TrafficKind::kFeatures, kStepInputReply, bulk), what));
  std::vector<std::vector<int64_t>> keys(P);
  std::vector<std::vector<float>> rows(P);
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    size_t pos = 0;
    FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, what.c_str(), q, &keys[q]));
    FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, what.c_str(), q, &rows[q]));
    if (keys[q].size() != wanted[q].size() || rows[q].size() != wanted[q].size() * f) {
      return absl::DataLossError(absl::StrCat(what, ": worker ", q, " sent ", keys[q].size(),
                                              " rows of ", rows[q].size(), " values for ",
                                              wanted[q].size(), " rows of width ", f));
    }
    // The fetched rows fill the sources the cache left empty, in order.
    for (size_t i = 0, j = 0; i < read[q].size(); ++i) {
      if (source[q][i] != nullptr) continue;
      source[q][i] = rows[q].data() + j * f;
      key[q][i] = keys[q][j];
      if (cache != nullptr) cache->Keep(wanted[q][j], keys[q][j], source[q][i]);
      ++j;
    }
  }
  std::vector<IdPositions> position;
  for (int q = 0; q < P; ++q) position.emplace_back(read[q].data(), static_cast<int64_t>(read[q].size()));
  for (sampling::MiniBatch& b : *batches) {
    const Tensor& table = b.blocks[0].table;
    const int64_t n = table.numel();
    b.inputs = Tensor::Empty({n, f}, DType::kFloat32);
    b.keys = Tensor::Empty({n}, DType::kInt64);
    ParallelFor(0, n, [&](int64_t r) {
      const int64_t v = table.i64()[r];
      const int q = owners.Of(v);
      const float* src;
      if (q == me) {
        src = mine.features.f32() + (v - mine.begin) * f;
        b.keys.i64()[r] = mine.keys.i64()[v - mine.begin];
      } else {
        const int64_t i = position[q].Of(v);
        src = source[q][i];
        b.keys.i64()[r] = key[q][i];
      }
      std::memcpy(b.inputs.f32() + r * f, src, f * sizeof(float));
    });
  }
  return absl::OkStatus();
}

}  // namespace

namespace sampling_messages {

uint64_t Tag(int epoch, int layer, TrafficKind kind, int step, int64_t bulk) {
  return MakeTag(epoch, layer, kPhaseSampling, kind, step,
                 static_cast<int>(bulk % (static_cast<int64_t>(kMaxTagRound) + 1)));
}

absl::StatusOr<std::vector<std::string>> Exchange(Communicator& comm, std::vector<std::string> parts,
                                                  uint64_t tag, const std::string& what) {
  absl::StatusOr<std::vector<std::string>> got = AllToAllVOverMessages(comm, std::move(parts), tag);
  if (!got.ok()) return Annotate(got.status(), what);
  return got;
}

}  // namespace sampling_messages

namespace {

// ShaDow batches over the parts (sampling/shadow.cc: SampleShadowBulk): each root's hops drawn by
// the frontier's owners under the root's draw number, then every layer's rows of the sets' vertices
// fetched from their owners for the induced subgraphs. Draws keyed by `draw_epoch`, messages
// named by `epoch`.
absl::StatusOr<std::vector<sampling::MiniBatch>> SampleShadowAcrossParts(
    Communicator& comm, const Ownership& owners, const std::vector<const sampling::NeighbourhoodMatrix*>& layers,
    const sampling::SamplerOptions& options, int draw_epoch, int epoch, int64_t bulk, int64_t first_index,
    const std::vector<Tensor>& seeds) {
  const sampling::NeighbourhoodMatrix& top = *layers.back();
  const int hops_layer = static_cast<int>(layers.size()) - 1;
  std::vector<int64_t> roots, draw;
  for (size_t k = 0; k < seeds.size(); ++k) {
    for (int64_t j = 0; j < seeds[k].numel(); ++j) {
      const int64_t v = seeds[k].i64()[j];
      const int64_t row = v >= 0 && v < top.num_vertices() ? top.RowOf(v) : -1;
      if (row < 0) {
        return absl::InvalidArgumentError(absl::StrCat("sampler: shadow over parts draws subgraphs of the workers' "
                                                       "own vertices; seed ", v, " is not this worker's"));
      }
      roots.push_back(v);
      draw.push_back(sampling::ShadowDrawBatch(first_index + static_cast<int64_t>(k),
                                               top.keys() != nullptr ? top.keys()[row] : v));
    }
  }
  // Hop h draws with the top matrix's layer number h, as one process does; its messages are named
  // by the hop.
  auto hop = [&](int h, int fanout, const std::vector<int64_t>& batch,
                 const std::vector<std::vector<int64_t>>& frontier, std::vector<sampling::SampledRows>* out) {
    return SampleLayer(comm, owners, top, options, fanout, draw_epoch, epoch, h, bulk, batch, frontier, out);
  };
  FG_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> sets,
                      sampling::ShadowVertexSets(options.fanouts, top.num_vertices(), draw, roots, hop));
  // Every layer's rows of the sets' vertices; their messages named above the hops' layers.
  std::vector<sampling::GatheredRows> gathered(layers.size());
  auto induced = [&](int l, const std::vector<int64_t>& vertices, sampling::InducedRows* out) -> absl::Status {
    std::vector<std::vector<int64_t>> rows;
    FG_RETURN_IF_ERROR(FetchRows(comm, owners, *layers[l], epoch, kMaxTagLayer - hops_layer + l, bulk, {vertices},
                                 nullptr, &gathered[l], &rows));
    out->row_ptr = gathered[l].offsets.data();
    out->col = gathered[l].cols.data();
    out->weights = gathered[l].weights.empty() ? nullptr : gathered[l].weights.data();
    out->row = std::move(rows[0]);
    return absl::OkStatus();
  };
  return sampling::ShadowBatches(layers, options, first_index, seeds, sets, induced);
}

}  // namespace

absl::StatusOr<std::vector<sampling::MiniBatch>> SampleAcrossParts(
    Communicator& comm, const Ownership& owners, const OwnedRows& mine,
    const std::vector<const sampling::NeighbourhoodMatrix*>& layers,
    const sampling::SamplerOptions& options, int epoch, int64_t bulk, int64_t first_index,
    const std::vector<Tensor>& seeds, RemoteRowCache* cache, RemoteNeighbourhoodCache* neighbourhoods) {
  const int num_layers = static_cast<int>(layers.size());
  // Evaluation's ShaDow draws are keyed by a negative epoch; their messages are named epoch 0.
  const int named = std::max(epoch, 0);
  std::vector<sampling::MiniBatch> batches;
  if (options.kind == sampling::SamplerKind::kShadow) {
    FG_ASSIGN_OR_RETURN(batches, SampleShadowAcrossParts(comm, owners, layers, options, epoch, named, bulk,
                                                         first_index, seeds));
  } else if (options.kind == sampling::SamplerKind::kLayerWise) {
    // The seeds' keys (the source dataset's ids): a seed is one of this worker's training vertices.
    std::vector<Tensor> keys;
    for (const Tensor& s : seeds) {
      std::vector<int64_t> k(s.numel());
      for (int64_t j = 0; j < s.numel(); ++j) {
        const int64_t local = s.i64()[j] - mine.begin;
        if (local < 0 || local >= mine.keys.numel()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "sampler: ladies over a partitioned dataset draws batches of the workers' own vertices; seed ",
              s.i64()[j], " is not this worker's"));
        }
        k[j] = mine.keys.i64()[local];
      }
      keys.push_back(Tensor::FromVector(k));
    }
    FG_ASSIGN_OR_RETURN(batches, SampleLayerWiseAcrossWorkers(comm, &owners, layers, options, epoch, bulk,
                                                              first_index, seeds, keys, neighbourhoods));
  } else {
    if (static_cast<int>(options.fanouts.size()) != num_layers) {
      return absl::InvalidArgumentError(
          absl::StrCat("fanouts: ", options.fanouts.size(), " given for a model of ", num_layers, " layers"));
    }
    auto step = [&](int l, const std::vector<std::vector<int64_t>>& frontier,
                    std::vector<sampling::SampledRows>* out, const sampling::RowsReady&) {
      std::vector<int64_t> batch(frontier.size());
      for (size_t k = 0; k < batch.size(); ++k) batch[k] = first_index + static_cast<int64_t>(k);
      return SampleLayer(comm, owners, *layers[l], options, options.fanouts[num_layers - 1 - l], epoch, epoch,
                         l, bulk, batch, frontier, out);
    };
    FG_ASSIGN_OR_RETURN(batches, sampling::SampleBlocks(layers, first_index, seeds, step));
  }
  FG_RETURN_IF_ERROR(FetchInputs(comm, owners, mine, named, bulk, cache, &batches));
  return batches;
}

absl::StatusOr<std::vector<int64_t>> GatherInt64(Communicator& comm, const std::vector<int64_t>& mine) {
  std::string part;
  AppendVector(&part, mine);
  FG_ASSIGN_OR_RETURN(std::vector<std::string> got,
                      comm.AllToAllV(std::vector<std::string>(comm.size(), part),
                                     Tag(0, 0, TrafficKind::kControl, kStepGather, 0)));
  std::vector<int64_t> all;
  for (int q = 0; q < comm.size(); ++q) {
    std::vector<int64_t> v;
    size_t pos = 0;
    FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "training items", q, &v));
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

}  // namespace fg::runtime
