#include "runtime/distributed_selection.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"

namespace fg::runtime {
namespace {

// Tags: phase 13 of the selection round; the walks (one round per step), then the key lookup.
constexpr int kPhaseSelection = 13;
constexpr int kStepWalk = 0, kStepKeyRequest = 1, kStepKeyReply = 2;
constexpr int kMaxWalkSteps = 1 << 17;  // the tag's round field

uint64_t Tag(const nau::SelectContext& ctx, int step, int round = 0) {
  return MakeTag(ctx.epoch(), ctx.layer(), kPhaseSelection, TrafficKind::kControl, step, round);
}

struct RootVisit {
  int64_t root;
  int64_t vertex;
};

template <typename T>
void Append(std::string* out, const std::vector<T>& v) {
  const uint64_t n = v.size();
  out->append(reinterpret_cast<const char*>(&n), sizeof(n));
  if (n > 0) out->append(reinterpret_cast<const char*>(v.data()), n * sizeof(T));
}

// Reads a vector written by Append at *pos; errors name the peer.
template <typename T>
absl::Status Take(const std::string& in, size_t* pos, int peer, std::vector<T>* v) {
  uint64_t n = 0;
  if (in.size() - *pos < sizeof(n)) {
    return absl::DataLossError(absl::StrCat("selection message from worker ", peer, " is truncated"));
  }
  std::memcpy(&n, in.data() + *pos, sizeof(n));
  *pos += sizeof(n);
  if (n > (in.size() - *pos) / sizeof(T)) {
    return absl::DataLossError(absl::StrCat("selection message from worker ", peer, " is truncated"));
  }
  v->resize(n);
  if (n > 0) std::memcpy(v->data(), in.data() + *pos, n * sizeof(T));
  *pos += n * sizeof(T);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<hdg::Hdg> SelectByWalks(Communicator& comm, const Ownership& owners,
                                       const nau::WalkSelection& walks,
                                       const nau::SelectContext& ctx, const hdg::SchemaTree& schema,
                                       int64_t num_vertices, const std::vector<int32_t>& roots) {
  const int me = comm.rank(), P = comm.size();
  auto index_of = [&](int64_t root) {
    return std::lower_bound(roots.begin(), roots.end(), static_cast<int32_t>(root)) - roots.begin();
  };
  std::vector<std::vector<int32_t>> visits(roots.size());
  std::vector<nau::Walker> active;
  for (int32_t root : roots) {
    nau::Walker w;
    w.root = root;
    w.root_key = ctx.SourceId(root);
    if (walks.Start(&w)) active.push_back(w);
  }
  std::vector<int32_t> visited;
  for (int step = 0;; ++step) {
    if (step >= kMaxWalkSteps) {
      return absl::InternalError(absl::StrCat("random walks still moving after ", step, " steps"));
    }
    std::vector<std::vector<nau::Walker>> out(P);
    std::vector<std::vector<RootVisit>> out_visits(P);
    for (nau::Walker& w : active) {
      RandomStream rng = ctx.StreamOf(w.root_key);
      rng.Seek(w.draws);
      visited.clear();
      const bool away = walks.Advance(ctx, &w, rng, &visited);
      const int root_owner = owners.Of(w.root);
      for (int32_t v : visited) {
        if (root_owner == me) {
          visits[index_of(w.root)].push_back(v);
        } else {
          out_visits[root_owner].push_back({w.root, v});
        }
      }
      if (away) {
        const int o = owners.Of(w.cur);
        if (o == me) return absl::InternalError(absl::StrCat("a walker stopped at own vertex ", w.cur));
        out[o].push_back(w);
      }
    }
    uint64_t moved = 0;
    for (const auto& v : out) moved += v.size();
    for (int q = 0; q < P; ++q) {
      if (q == me) continue;
      std::string msg(reinterpret_cast<const char*>(&moved), sizeof(moved));
      Append(&msg, out[q]);
      Append(&msg, out_visits[q]);
      comm.Send(q, Tag(ctx, kStepWalk, step), std::move(msg));
    }
    active.clear();
    uint64_t total = moved;
    for (int q = 0; q < P; ++q) {
      if (q == me) continue;
      FG_ASSIGN_OR_RETURN(const std::string msg, comm.Recv(q, Tag(ctx, kStepWalk, step)));
      uint64_t theirs = 0;
      if (msg.size() < sizeof(theirs)) {
        return absl::DataLossError(absl::StrCat("selection message from worker ", q, " is truncated"));
      }
      std::memcpy(&theirs, msg.data(), sizeof(theirs));
      total += theirs;
      size_t pos = sizeof(theirs);
      std::vector<nau::Walker> walkers;
      std::vector<RootVisit> root_visits;
      FG_RETURN_IF_ERROR(Take(msg, &pos, q, &walkers));
      FG_RETURN_IF_ERROR(Take(msg, &pos, q, &root_visits));
      for (const nau::Walker& w : walkers) {
        if (w.cur < 0 || w.cur >= num_vertices || owners.Of(w.cur) != me) {
          return absl::DataLossError(absl::StrCat("worker ", q, " sent a walker at vertex ", w.cur,
                                                  ", which worker ", me, " does not own"));
        }
        active.push_back(w);
      }
      for (const RootVisit& rv : root_visits) {
        const int64_t k = index_of(rv.root);
        if (k >= static_cast<int64_t>(roots.size()) || roots[k] != rv.root || rv.vertex < 0 ||
            rv.vertex >= num_vertices) {
          return absl::DataLossError(absl::StrCat("worker ", q, " sent a visit of root ", rv.root,
                                                  ", which is not a root of worker ", me));
        }
        visits[k].push_back(static_cast<int32_t>(rv.vertex));
      }
    }
    if (total == 0) break;  // every worker saw the same total: all stop together
  }
  // Source ids of the visited vertices: mine directly, the others' from their owners.
  std::vector<std::vector<int32_t>> ask(P);
  for (const auto& vs : visits) {
    for (int32_t v : vs) {
      const int o = owners.Of(v);
      if (o != me) ask[o].push_back(v);
    }
  }
  for (auto& a : ask) {
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
  }
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    std::string msg;
    Append(&msg, ask[q]);
    comm.Send(q, Tag(ctx, kStepKeyRequest), std::move(msg));
  }
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    FG_ASSIGN_OR_RETURN(const std::string msg, comm.Recv(q, Tag(ctx, kStepKeyRequest)));
    size_t pos = 0;
    std::vector<int32_t> wanted;
    FG_RETURN_IF_ERROR(Take(msg, &pos, q, &wanted));
    std::vector<int64_t> keys(wanted.size());
    for (size_t k = 0; k < wanted.size(); ++k) {
      if (wanted[k] < 0 || wanted[k] >= num_vertices || owners.Of(wanted[k]) != me) {
        return absl::DataLossError(absl::StrCat("worker ", q, " asked for vertex ", wanted[k],
                                                ", which worker ", me, " does not own"));
      }
      keys[k] = ctx.SourceId(wanted[k]);
    }
    std::string reply;
    Append(&reply, keys);
    comm.Send(q, Tag(ctx, kStepKeyReply), std::move(reply));
  }
  std::unordered_map<int32_t, int64_t> key_of;
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    FG_ASSIGN_OR_RETURN(const std::string msg, comm.Recv(q, Tag(ctx, kStepKeyReply)));
    size_t pos = 0;
    std::vector<int64_t> keys;
    FG_RETURN_IF_ERROR(Take(msg, &pos, q, &keys));
    if (keys.size() != ask[q].size()) {
      return absl::DataLossError(absl::StrCat("worker ", q, " answered ", keys.size(), " of ",
                                              ask[q].size(), " source ids"));
    }
    for (size_t k = 0; k < keys.size(); ++k) key_of[ask[q][k]] = keys[k];
  }
  return hdg::HdgBuilder(schema, num_vertices)
      .Build(roots, [&](int32_t root, hdg::NeighborWriter& writer) {
        thread_local std::vector<nau::Visit> vs;
        vs.clear();
        for (int32_t v : visits[index_of(root)]) {
          vs.push_back({v, owners.Of(v) == me ? ctx.SourceId(v) : key_of.at(v)});
        }
        walks.Finish(root, vs, writer);
      });
}

}  // namespace fg::runtime
