// Layer-wise (LADIES) sampling across workers: leaders draw whole batches, workers keep their seeds'
// part (distributed_sampling.h).
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "runtime/distributed/distributed_sampling.h"
#include "runtime/distributed/sampling_messages.h"

namespace fg::runtime {
namespace sampling_messages {

absl::Status FetchRows(Communicator& comm, const Ownership& owners, const sampling::NeighbourhoodMatrix& a,
                       int epoch, int layer, int64_t bulk, const std::vector<std::vector<int64_t>>& frontier,
                       RemoteNeighbourhoodCache* cache, sampling::GatheredRows* gathered,
                       std::vector<std::vector<int64_t>>* rows) {
  const int P = comm.size(), me = comm.rank();
  const std::string what = absl::StrCat("sampling layer ", layer);
  // Per owner, the distinct vertices asked of it (ascending), those not kept (requested), and the
  // kept ones' rows (in order).
  std::vector<std::vector<int64_t>> asked(P), wanted(P);
  std::vector<std::vector<RemoteNeighbourhoodCache::Row>> kept(P);
  for (const std::vector<int64_t>& f : frontier) {
    for (int64_t v : f) {
      if (v < 0 || v >= owners.num_vertices()) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": vertex ", v, " is outside the graph"));
      }
      asked[owners.Of(v)].push_back(v);
    }
  }
  std::vector<std::string> requests(P);
  for (int q = 0; q < P; ++q) {
    std::sort(asked[q].begin(), asked[q].end());
    asked[q].erase(std::unique(asked[q].begin(), asked[q].end()), asked[q].end());
    if (q == me) continue;
    for (int64_t v : asked[q]) {
      RemoteNeighbourhoodCache::Row row;
      if (cache != nullptr && cache->Find(layer, v, &row)) {
        kept[q].push_back(row);
      } else {
        wanted[q].push_back(v);
      }
    }
    AppendVector(&requests[q], wanted[q]);
  }
  FG_ASSIGN_OR_RETURN(std::vector<std::string> got,
                      Exchange(comm, std::move(requests),
                               Tag(epoch, layer, TrafficKind::kControl, kStepRowRequest, bulk), what));
  const int64_t* row_ptr = a.csr().row_ptr();
  const int32_t* col = a.csr().col();
  const float* w = a.weights();
  const int32_t* own = a.own_entries();
  // Rows of `ids`, all of them this worker's, appended to `out`.
  auto append = [&](const std::vector<int64_t>& ids, sampling::GatheredRows* out, int asker) -> absl::Status {
    for (int64_t v : ids) {
      const int64_t row = v >= 0 && v < a.num_vertices() ? a.RowOf(v) : -1;
      if (row < 0) {
        return asker == me ? absl::InvalidArgumentError(absl::StrCat(
                                 what, ": vertex ", v, " has no neighbourhood (not one of its roots)"))
                           : absl::DataLossError(absl::StrCat(what, ": worker ", asker, " asked for vertex ", v,
                                                              ", which this worker does not own"));
      }
      const int64_t b = row_ptr[row], e = row_ptr[row + 1];
      out->cols.insert(out->cols.end(), col + b, col + e);
      if (w != nullptr) out->weights.insert(out->weights.end(), w + b, w + e);
      out->own.push_back(own != nullptr ? own[row] : -1);
      out->offsets.push_back(static_cast<int64_t>(out->cols.size()));
    }
    return absl::OkStatus();
  };
  std::vector<std::string> replies(P);
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    std::vector<int64_t> ids;
    size_t pos = 0;
    FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "row request", q, &ids));
    sampling::GatheredRows part;
    FG_RETURN_IF_ERROR(append(ids, &part, q));
    std::vector<int32_t> lengths(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) lengths[i] = static_cast<int32_t>(part.offsets[i + 1] - part.offsets[i]);
    AppendVector(&replies[q], lengths);
    AppendVector(&replies[q], part.own);
    AppendVector(&replies[q], part.cols);
    AppendVector(&replies[q], part.weights);
  }
  FG_ASSIGN_OR_RETURN(got, Exchange(comm, std::move(replies),
                                    Tag(epoch, layer, TrafficKind::kControl, kStepRowReply, bulk), what));
  // Gathered in owner order, each owner's in ascending order; first[q]: the gathered row of
  // asked[q][0].
  *gathered = sampling::GatheredRows();
  std::vector<int64_t> first(P, 0);
  int64_t fetched = 0, from_cache = 0;
  for (int q = 0; q < P; ++q) {
    first[q] = static_cast<int64_t>(gathered->own.size());
    if (q == me) {
      FG_RETURN_IF_ERROR(append(asked[me], gathered, me));
      continue;
    }
    std::vector<int32_t> lengths, owns, cols;
    std::vector<float> weights;
    size_t pos = 0;
    FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "rows", q, &lengths));
    FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "rows", q, &owns));
    FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "rows", q, &cols));
    FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "rows", q, &weights));
    int64_t entries = 0;
    bool bad = false;
    for (size_t i = 0; i < lengths.size() && i < owns.size(); ++i) {
      bad |= lengths[i] < 0 || owns[i] >= lengths[i] || owns[i] < -1;
      entries += lengths[i];
    }
    if (bad || lengths.size() != wanted[q].size() || owns.size() != lengths.size() ||
        entries != static_cast<int64_t>(cols.size()) || weights.size() != (w != nullptr ? cols.size() : 0)) {
      return absl::DataLossError(absl::StrCat(what, ": worker ", q, " replied ", lengths.size(), " rows with ",
                                              cols.size(), " entries and ", weights.size(), " weights for ",
                                              wanted[q].size(), " rows asked"));
    }
    for (int32_t c : cols) {
      if (c < 0 || c >= owners.num_vertices()) {
        return absl::DataLossError(absl::StrCat(what, ": worker ", q, " replied column ", c,
                                                ", outside the graph's ", owners.num_vertices(), " vertices"));
      }
    }
    // The asked rows in order: the requested ones from the reply, the others from the cache.
    size_t next = 0, next_kept = 0;
    int64_t at = 0;
    for (int64_t v : asked[q]) {
      RemoteNeighbourhoodCache::Row row;
      if (next < wanted[q].size() && wanted[q][next] == v) {
        row = {cols.data() + at, w != nullptr ? weights.data() + at : nullptr, lengths[next], owns[next]};
        if (cache != nullptr) cache->Fetched(layer, v, row);
        at += lengths[next++];
        fetched += row.size;
      } else {
        row = kept[q][next_kept++];
        from_cache += row.size;
      }
      gathered->cols.insert(gathered->cols.end(), row.cols, row.cols + row.size);
      if (row.weights != nullptr) gathered->weights.insert(gathered->weights.end(), row.weights, row.weights + row.size);
      gathered->own.push_back(row.own);
      gathered->offsets.push_back(static_cast<int64_t>(gathered->cols.size()));
    }
  }
  if (cache != nullptr) cache->Record(fetched, from_cache);
  rows->assign(frontier.size(), {});
  for (size_t i = 0; i < frontier.size(); ++i) {
    for (int64_t v : frontier[i]) {
      const int q = owners.Of(v);
      const int64_t at = std::lower_bound(asked[q].begin(), asked[q].end(), v) - asked[q].begin();
      (*rows)[i].push_back(first[q] + at);
    }
  }
  return absl::OkStatus();
}

}  // namespace sampling_messages

namespace {

using namespace sampling_messages;  // NOLINT: its tags and steps

// A batch's whole sample, as its leader drew it: per layer, the frontier and its rows.
struct WholeBatch {
  std::vector<std::vector<int64_t>> frontier;
  std::vector<sampling::SampledRows> rows;
};

// The batches of the bulk that `worker` leads: k with (first_index + k) % P == worker, ascending.
std::vector<int64_t> Led(int64_t first_index, int64_t K, int P, int worker) {
  std::vector<int64_t> led;
  for (int64_t k = 0; k < K; ++k) {
    if ((first_index + k) % P == worker) led.push_back(k);
  }
  return led;
}

// Every worker's seeds of the batches this one leads, in a single process's order: by key, each
// vertex once.
absl::StatusOr<std::vector<Tensor>> GatherSeeds(Communicator& comm, int epoch, int64_t bulk, int64_t first_index,
                                                const std::vector<Tensor>& seeds,
                                                const std::vector<Tensor>& seed_keys) {
  const int P = comm.size(), me = comm.rank();
  const int64_t K = static_cast<int64_t>(seeds.size());
  std::vector<std::string> send(P);
  for (int q = 0; q < P; ++q) {
    std::vector<int64_t> counts, ids, keys;
    for (int64_t k : Led(first_index, K, P, q)) {
      counts.push_back(seeds[k].numel());
      ids.insert(ids.end(), seeds[k].i64(), seeds[k].i64() + seeds[k].numel());
      keys.insert(keys.end(), seed_keys[k].i64(), seed_keys[k].i64() + seed_keys[k].numel());
    }
    AppendVector(&send[q], counts);
    AppendVector(&send[q], ids);
    AppendVector(&send[q], keys);
  }
  FG_ASSIGN_OR_RETURN(std::vector<std::string> got,
                      Exchange(comm, std::move(send), Tag(epoch, 0, TrafficKind::kControl, kStepLeaderSeeds, bulk),
                               "gathering a batch's seeds"));
  const std::vector<int64_t> led = Led(first_index, K, P, me);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> merged(led.size());  // (key, id)
  for (int p = 0; p < P; ++p) {
    std::vector<int64_t> counts, ids, keys;
    size_t pos = 0;
    FG_RETURN_IF_ERROR(TakeVector(got[p], &pos, "batch seeds", p, &counts));
    FG_RETURN_IF_ERROR(TakeVector(got[p], &pos, "batch seeds", p, &ids));
    FG_RETURN_IF_ERROR(TakeVector(got[p], &pos, "batch seeds", p, &keys));
    if (!CountsSplit(counts, led.size(), ids.size()) || keys.size() != ids.size()) {
      return absl::DataLossError(absl::StrCat("batch seeds: worker ", p, " sent ", ids.size(), " seeds and ",
                                              keys.size(), " keys in ", counts.size(), " batches; expected ",
                                              led.size(), " batches"));
    }
    size_t at = 0;
    for (size_t i = 0; i < led.size(); ++i) {
      for (int64_t j = 0; j < counts[i]; ++j, ++at) merged[i].push_back({keys[at], ids[at]});
    }
  }
  std::vector<Tensor> out;
  for (auto& m : merged) {
    std::sort(m.begin(), m.end());
    m.erase(std::unique(m.begin(), m.end()), m.end());
    std::vector<int64_t> ids;
    for (const auto& [key, id] : m) ids.push_back(id);
    out.push_back(Tensor::FromVector(ids));
  }
  return out;
}

// The led batches drawn whole; every worker calls it for every layer (it serves the others' row
// requests).
absl::StatusOr<std::vector<WholeBatch>> DrawLedBatches(
    Communicator& comm, const Ownership* owners, const std::vector<const sampling::NeighbourhoodMatrix*>& layers,
    const sampling::SamplerOptions& options, int epoch, int64_t bulk, const std::vector<int64_t>& batch,
    const std::vector<Tensor>& seeds, RemoteNeighbourhoodCache* cache) {
  const int num_layers = static_cast<int>(layers.size());
  const size_t n = seeds.size();
  std::vector<WholeBatch> whole(n);
  for (WholeBatch& b : whole) {
    b.frontier.resize(num_layers);
    b.rows.resize(num_layers);
  }
  auto step = [&](int l, const std::vector<std::vector<int64_t>>& frontier, std::vector<sampling::SampledRows>* out,
                  const sampling::RowsReady&) -> absl::Status {
    const sampling::NeighbourhoodMatrix& a = *layers[l];
    std::vector<std::vector<int64_t>> rows(n);
    if (owners != nullptr) {
      sampling::GatheredRows gathered;
      FG_RETURN_IF_ERROR(FetchRows(comm, *owners, a, epoch, l, bulk, frontier, cache, &gathered, &rows));
      sampling::SampleLayerWiseRows(gathered, a.num_vertices(), options, epoch, l, batch, rows, out);
    } else {
      for (size_t i = 0; i < n; ++i) {
        for (int64_t v : frontier[i]) {
          const int64_t row = v >= 0 && v < a.num_vertices() ? a.RowOf(v) : -1;
          if (row < 0) {
            return absl::InvalidArgumentError(
                absl::StrCat("vertex ", v, " has no neighbourhood in layer ", l, " (not one of its roots)"));
          }
          rows[i].push_back(row);
        }
      }
      sampling::SampleLayerWiseRows(a, options, epoch, l, batch, rows, out);
    }
    for (size_t i = 0; i < n; ++i) {
      whole[i].frontier[l] = frontier[i];
      whole[i].rows[l] = (*out)[i];
    }
    return absl::OkStatus();
  };
  FG_RETURN_IF_ERROR(sampling::SampleBlocks(layers, 0, seeds, step).status());
  return whole;
}

// The led batches' samples sent to every worker; the whole samples of all K batches.
absl::StatusOr<std::vector<WholeBatch>> ShareWholeBatches(
    Communicator& comm, const std::vector<const sampling::NeighbourhoodMatrix*>& layers, int epoch, int64_t bulk,
    int64_t first_index, int64_t K, std::vector<WholeBatch> mine) {
  const int P = comm.size(), me = comm.rank();
  const int num_layers = static_cast<int>(layers.size());
  std::string message;
  for (const WholeBatch& b : mine) {
    for (int l = 0; l < num_layers; ++l) {
      const sampling::SampledRows& s = b.rows[l];
      std::vector<int32_t> lengths(b.frontier[l].size());
      for (size_t j = 0; j < lengths.size(); ++j) lengths[j] = static_cast<int32_t>(s.offsets[j + 1] - s.offsets[j]);
      AppendVector(&message, b.frontier[l]);
      AppendVector(&message, lengths);
      AppendVector(&message, s.cols);
      AppendVector(&message, s.weights);
    }
  }
  std::vector<std::string> send(P);
  for (int q = 0; q < P; ++q) {
    if (q != me) send[q] = message;
  }
  FG_ASSIGN_OR_RETURN(std::vector<std::string> got,
                      Exchange(comm, std::move(send), Tag(epoch, 0, TrafficKind::kControl, kStepLeaderRows, bulk),
                               "sharing sampled batches"));
  std::vector<WholeBatch> all(K);
  for (int q = 0; q < P; ++q) {
    const std::vector<int64_t> led = Led(first_index, K, P, q);
    if (q == me) {
      for (size_t i = 0; i < led.size(); ++i) all[led[i]] = std::move(mine[i]);
      continue;
    }
    size_t pos = 0;
    for (int64_t k : led) {
      WholeBatch& b = all[k];
      b.frontier.resize(num_layers);
      b.rows.resize(num_layers);
      for (int l = 0; l < num_layers; ++l) {
        sampling::SampledRows& s = b.rows[l];
        std::vector<int32_t> lengths;
        FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "sampled batches", q, &b.frontier[l]));
        FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "sampled batches", q, &lengths));
        FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "sampled batches", q, &s.cols));
        FG_RETURN_IF_ERROR(TakeVector(got[q], &pos, "sampled batches", q, &s.weights));
        s.offsets.assign(1, 0);
        bool negative = false;
        for (int32_t n : lengths) {
          negative |= n < 0;
          s.offsets.push_back(s.offsets.back() + std::max(n, 0));
        }
        const int64_t n = layers[l]->num_vertices();
        const bool in_graph =
            std::all_of(s.cols.begin(), s.cols.end(), [n](int32_t c) { return c >= 0 && c < n; }) &&
            std::all_of(b.frontier[l].begin(), b.frontier[l].end(), [n](int64_t v) { return v >= 0 && v < n; });
        if (!in_graph || negative || lengths.size() != b.frontier[l].size() ||
            s.offsets.back() != static_cast<int64_t>(s.cols.size()) ||
            s.weights.size() != (layers[l]->weights() != nullptr ? s.cols.size() : 0)) {
          return absl::DataLossError(absl::StrCat("sampled batches: worker ", q, " sent batch ", first_index + k,
                                                  " layer ", l, " with ", lengths.size(), " rows for ",
                                                  b.frontier[l].size(), " vertices, ", s.cols.size(),
                                                  " entries and ", s.weights.size(), " weights",
                                                  in_graph ? "" : ", not all of them in the graph"));
        }
      }
    }
  }
  return all;
}

}  // namespace

absl::StatusOr<std::vector<sampling::MiniBatch>> SampleLayerWiseAcrossWorkers(
    Communicator& comm, const Ownership* owners, const std::vector<const sampling::NeighbourhoodMatrix*>& layers,
    const sampling::SamplerOptions& options, int epoch, int64_t bulk, int64_t first_index,
    const std::vector<Tensor>& seeds, const std::vector<Tensor>& seed_keys, RemoteNeighbourhoodCache* cache) {
  if (options.layer_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer_size: must be positive for the ladies sampler, got ", options.layer_size));
  }
  const int64_t K = static_cast<int64_t>(seeds.size());
  if (cache != nullptr) cache->BeginBulk(epoch);
  FG_ASSIGN_OR_RETURN(std::vector<Tensor> led_seeds,
                      GatherSeeds(comm, epoch, bulk, first_index, seeds, seed_keys));
  std::vector<int64_t> batch;
  for (int64_t k : Led(first_index, K, comm.size(), comm.rank())) batch.push_back(first_index + k);
  FG_ASSIGN_OR_RETURN(std::vector<WholeBatch> led,
                      DrawLedBatches(comm, owners, layers, options, epoch, bulk, batch, led_seeds, cache));
  FG_ASSIGN_OR_RETURN(std::vector<WholeBatch> whole,
                      ShareWholeBatches(comm, layers, epoch, bulk, first_index, K, std::move(led)));
  // This worker's seeds' part of each: every frontier vertex's row from the whole batch's.
  auto keep = [&](int l, const std::vector<std::vector<int64_t>>& frontier, std::vector<sampling::SampledRows>* out,
                  const sampling::RowsReady&) -> absl::Status {
    for (int64_t k = 0; k < K; ++k) {
      const WholeBatch& b = whole[k];
      std::vector<std::pair<int64_t, int64_t>> position;  // (vertex, row)
      for (size_t j = 0; j < b.frontier[l].size(); ++j) position.push_back({b.frontier[l][j], j});
      std::sort(position.begin(), position.end());
      const sampling::SampledRows& from = b.rows[l];
      sampling::SampledRows& s = (*out)[k];
      s.offsets.assign(1, 0);
      s.cols.clear();
      s.weights.clear();
      for (int64_t v : frontier[k]) {
        auto it = std::lower_bound(position.begin(), position.end(), std::pair<int64_t, int64_t>(v, -1));
        if (it == position.end() || it->first != v) {
          return absl::DataLossError(absl::StrCat("sampled batches: batch ", first_index + k, " layer ", l,
                                                  " has no row of vertex ", v, ", which this worker's seeds reach"));
        }
        const int64_t lo = from.offsets[it->second], hi = from.offsets[it->second + 1];
        s.cols.insert(s.cols.end(), from.cols.begin() + lo, from.cols.begin() + hi);
        if (!from.weights.empty()) s.weights.insert(s.weights.end(), from.weights.begin() + lo, from.weights.begin() + hi);
        s.offsets.push_back(static_cast<int64_t>(s.cols.size()));
      }
    }
    return absl::OkStatus();
  };
  return sampling::SampleBlocks(layers, first_index, seeds, keep);
}

}  // namespace fg::runtime
