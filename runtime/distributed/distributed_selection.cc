#include "runtime/distributed/distributed_selection.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"

namespace fg::runtime {
namespace {

// Tags: phase 13 of the selection round; the walks (one round per step), then the key lookup.
constexpr int kPhaseSelection = 13;
constexpr int kStepWalk = 0, kStepKeyRequest = 1, kStepKeyReply = 2;
constexpr int kStepCountRequest = 3, kStepCountReply = 4, kStepDecode = 5;
constexpr int kMaxWalkSteps = 1 << 17;  // the tag's round field

uint64_t Tag(const nau::SelectContext& ctx, int step, int round = 0) {
  return MakeTag(ctx.epoch(), ctx.layer(), kPhaseSelection, TrafficKind::kControl, step, round);
}

// A metapath instance being decoded: `index` counts within the suffixes at path[pos]; `order` is
// its index among the root's instances of metapath m (the single-process order).
constexpr int kMaxPathLength = 8;
struct PathTask {
  int64_t root;
  int64_t index;
  int64_t order;
  int32_t m, pos;
  int32_t path[kMaxPathLength];  // type-local ids
};

struct RootVisit {
  int64_t root;
  int64_t vertex;
};

// One bulk-synchronous step: sends every peer, in one message, the items moving to it and the
// finished ones it collects, receives the peers' and hands each item to `on_moving` or `on_ended`
// with its sender. Returns how many items moved over all workers: the same on every worker, so
// all stop together when it is 0.
template <typename M, typename E, typename OnMoving, typename OnEnded>
absl::StatusOr<uint64_t> Step(Communicator& comm, uint64_t tag,
                              const std::vector<std::vector<M>>& moving,
                              const std::vector<std::vector<E>>& ended, OnMoving on_moving,
                              OnEnded on_ended) {
  const int me = comm.rank(), P = comm.size();
  uint64_t moved = 0;
  for (const auto& v : moving) moved += v.size();
  std::vector<std::string> outgoing(P);
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    std::string& msg = outgoing[q];
    msg.assign(reinterpret_cast<const char*>(&moved), sizeof(moved));
    AppendVector(&msg, moving[q]);
    AppendVector(&msg, ended[q]);
  }
  FG_ASSIGN_OR_RETURN(const std::vector<std::string> incoming, comm.AllToAllV(std::move(outgoing), tag));
  uint64_t total = moved;
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    const std::string& msg = incoming[q];
    uint64_t theirs = 0;
    if (msg.size() < sizeof(theirs)) {
      return absl::DataLossError(absl::StrCat("selection message from worker ", q, " is truncated"));
    }
    std::memcpy(&theirs, msg.data(), sizeof(theirs));
    total += theirs;
    size_t pos = sizeof(theirs);
    std::vector<M> in_moving;
    std::vector<E> in_ended;
    FG_RETURN_IF_ERROR(TakeVector(msg, &pos, "selection", q, &in_moving));
    FG_RETURN_IF_ERROR(TakeVector(msg, &pos, "selection", q, &in_ended));
    for (const M& m : in_moving) FG_RETURN_IF_ERROR(on_moving(q, m));
    for (const E& e : in_ended) FG_RETURN_IF_ERROR(on_ended(q, e));
  }
  return total;
}

// Asks every peer q for one value per id of ask[q] and answers the peers' questions with
// answer(q, id) (a StatusOr<int64_t>); stores the replies in *got (id -> value). `what` names the
// values in errors. Collective.
template <typename Answer>
absl::Status Lookup(Communicator& comm, uint64_t request_tag, uint64_t reply_tag,
                    std::vector<std::vector<int32_t>> ask, const char* what, Answer answer,
                    std::unordered_map<int32_t, int64_t>* got) {
  const int me = comm.rank(), P = comm.size();
  std::vector<std::string> questions(P);
  for (int q = 0; q < P; ++q) {
    std::sort(ask[q].begin(), ask[q].end());
    ask[q].erase(std::unique(ask[q].begin(), ask[q].end()), ask[q].end());
    if (q != me) AppendVector(&questions[q], ask[q]);
  }
  FG_ASSIGN_OR_RETURN(questions, comm.AllToAllV(std::move(questions), request_tag));
  std::vector<std::string> replies(P);
  for (int q = 0; q < P; ++q) {  // replies keep the order: the k-th value answers the k-th id
    if (q == me) continue;
    size_t pos = 0;
    std::vector<int32_t> wanted;
    FG_RETURN_IF_ERROR(TakeVector(questions[q], &pos, "selection", q, &wanted));
    std::vector<int64_t> values(wanted.size());
    for (size_t k = 0; k < wanted.size(); ++k) {
      FG_ASSIGN_OR_RETURN(values[k], answer(q, wanted[k]));
    }
    AppendVector(&replies[q], values);
  }
  FG_ASSIGN_OR_RETURN(replies, comm.AllToAllV(std::move(replies), reply_tag));
  for (int q = 0; q < P; ++q) {
    if (q == me) continue;
    const std::string& msg = replies[q];
    size_t pos = 0;
    std::vector<int64_t> values;
    FG_RETURN_IF_ERROR(TakeVector(msg, &pos, "selection", q, &values));
    if (values.size() != ask[q].size()) {
      return absl::DataLossError(absl::StrCat("worker ", q, " answered ", values.size(), " of ",
                                              ask[q].size(), " ", what));
    }
    for (size_t k = 0; k < values.size(); ++k) (*got)[ask[q][k]] = values[k];
  }
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
    active.clear();
    FG_ASSIGN_OR_RETURN(
        const uint64_t total,
        Step(comm, Tag(ctx, kStepWalk, step), out, out_visits,
             [&](int q, const nau::Walker& w) -> absl::Status {
               if (w.cur < 0 || w.cur >= num_vertices || owners.Of(w.cur) != me) {
                 return absl::DataLossError(absl::StrCat("worker ", q, " sent a walker at vertex ",
                                                         w.cur, ", which worker ", me, " does not own"));
               }
               active.push_back(w);
               return absl::OkStatus();
             },
             [&](int q, const RootVisit& rv) -> absl::Status {
               const int64_t k = index_of(rv.root);
               if (k >= static_cast<int64_t>(roots.size()) || roots[k] != rv.root || rv.vertex < 0 ||
                   rv.vertex >= num_vertices) {
                 return absl::DataLossError(absl::StrCat("worker ", q, " sent a visit of root ",
                                                         rv.root, ", which is not a root of worker ", me));
               }
               visits[k].push_back(static_cast<int32_t>(rv.vertex));
               return absl::OkStatus();
             }));
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
  std::unordered_map<int32_t, int64_t> key_of;
  FG_RETURN_IF_ERROR(Lookup(
      comm, Tag(ctx, kStepKeyRequest), Tag(ctx, kStepKeyReply), std::move(ask), "source ids",
      [&](int q, int32_t v) -> absl::StatusOr<int64_t> {
        if (v < 0 || v >= num_vertices || owners.Of(v) != me) {
          return absl::DataLossError(absl::StrCat("worker ", q, " asked for vertex ", v,
                                                  ", which worker ", me, " does not own"));
        }
        return ctx.SourceId(v);
      },
      &key_of));
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

namespace fg::runtime {

absl::StatusOr<hdg::Hdg> SelectByMetapaths(Communicator& comm, const Ownership& owners,
                                           const nau::MetapathSelection& selection,
                                           const nau::SelectContext& ctx,
                                           const hdg::SchemaTree& schema, int64_t num_vertices,
                                           const std::vector<int32_t>& roots) {
  const int me = comm.rank(), P = comm.size();
  const graph::HeteroGraph& g = ctx.graph();
  const graph::PartInfo& part = *ctx.dataset().part;
  const nau::VertexSpace& space = ctx.vertices();
  const std::vector<nau::Metapath>& mps = selection.metapaths;
  const int M = static_cast<int>(mps.size());
  auto owner_of = [&](int type, int64_t local) { return owners.Of(space.type_offset(type) + local); };
  // Neighbours (type-local ids) of own vertex v at step s of metapath mp.
  auto next = [&](const nau::Metapath& mp, int s, int64_t v) {
    const graph::Relation& rel = g.relations[mp.steps[s].relation];
    const Csr& c = mp.steps[s].forward ? rel.by_src : rel.by_dst;
    const int64_t row = v - part.begin(mp.node_types[s]);
    return std::span<const int32_t>(c.col() + c.row_ptr()[row], static_cast<size_t>(c.degree(row)));
  };
  for (const nau::Metapath& mp : mps) {
    if (mp.length() > kMaxPathLength) {
      return absl::UnimplementedError(absl::StrCat("metapath ", mp.name, " has ", mp.length(),
                                                   " types; across workers at most ",
                                                   kMaxPathLength));
    }
  }
  // Suffix counts per metapath and position: own vertices, and the foreign neighbours of own
  // vertices at the position before (fetched from their owners).
  std::vector<std::vector<std::vector<int64_t>>> counts(M);
  std::vector<std::vector<std::unordered_map<int32_t, int64_t>>> foreign(M);
  int round = 0;
  for (int m = 0; m < M; ++m) {
    const nau::Metapath& mp = mps[m];
    const int len = mp.length();
    counts[m].resize(len);
    foreign[m].resize(len);
    const int last = mp.node_types[len - 1];
    counts[m][len - 1].assign(part.end(last) - part.begin(last), 1);
    for (int i = len - 2; i >= 0; --i, ++round) {
      const int t = mp.node_types[i], tn = mp.node_types[i + 1];
      std::vector<std::vector<int32_t>> ask(P);
      for (int64_t v = part.begin(t); v < part.end(t); ++v) {
        for (int32_t u : next(mp, i, v)) {
          const int o = owner_of(tn, u);
          if (o != me) ask[o].push_back(u);
        }
      }
      const std::vector<int64_t>& here = counts[m][i + 1];
      FG_RETURN_IF_ERROR(Lookup(
          comm, Tag(ctx, kStepCountRequest, round), Tag(ctx, kStepCountReply, round), std::move(ask),
          "instance counts",
          [&](int q, int32_t u) -> absl::StatusOr<int64_t> {
            if (u < part.begin(tn) || u >= part.end(tn)) {
              return absl::DataLossError(absl::StrCat("worker ", q, " asked for the instance count of ",
                                                      space.type_name(tn), " ", u, ", which worker ",
                                                      me, " does not own"));
            }
            return here[u - part.begin(tn)];
          },
          &foreign[m][i + 1]));
      std::vector<int64_t>& mine = counts[m][i];
      mine.assign(part.end(t) - part.begin(t), 0);
      for (int64_t v = part.begin(t); v < part.end(t); ++v) {
        int64_t c = 0;
        for (int32_t u : next(mp, i, v)) {
          const int64_t cu = owner_of(tn, u) == me ? here[u - part.begin(tn)] : foreign[m][i + 1].at(u);
          c = std::min(nau::kMaxInstanceCount, c + cu);
        }
        mine[v - part.begin(t)] = c;
      }
    }
  }
  // The count of the suffixes of metapath m at position j from vertex u (own, or a foreign
  // neighbour of an own vertex at position j - 1).
  auto count = [&](int m, int j, int32_t u) -> int64_t {
    const int t = mps[m].node_types[j];
    if (owner_of(t, u) == me) return counts[m][j][u - part.begin(t)];
    auto it = foreign[m][j].find(u);
    return it == foreign[m][j].end() ? -1 : it->second;
  };
  // Instance indices at the roots' owner; decoding at the owner of each instance's current vertex.
  auto index_of = [&](int64_t root) {
    return std::lower_bound(roots.begin(), roots.end(), static_cast<int32_t>(root)) - roots.begin();
  };
  std::vector<std::vector<PathTask>> done(roots.size());
  std::vector<PathTask> active;
  for (int32_t root : roots) {
    const int t = space.TypeOf(root);
    const int64_t local = root - space.type_offset(t);
    RandomStream rng = ctx.Rng(root);
    for (int m : selection.by_type[t]) {
      const int64_t total = counts[m][0][local - part.begin(t)];
      if (total == 0) continue;
      std::vector<int64_t> indices;
      if (selection.max_instances > 0 && total > selection.max_instances) {
        indices = nau::SampleInstanceIndices(total, selection.max_instances, &rng);
      } else {
        for (int64_t k = 0; k < total; ++k) indices.push_back(k);
      }
      for (int64_t k : indices) {
        PathTask task{root, k, k, m, 0, {}};
        task.path[0] = static_cast<int32_t>(local);
        (mps[m].length() == 1 ? done[index_of(root)] : active).push_back(task);
      }
    }
  }
  for (int step = 0;; ++step) {
    if (step >= kMaxPathLength * 4 + 4) return absl::InternalError("metapath instances did not finish");
    std::vector<std::vector<PathTask>> out(P), finished(P);
    for (PathTask task : active) {
      const nau::Metapath& mp = mps[task.m];
      const int len = mp.length();
      while (true) {
        int32_t chosen = -1;
        for (int32_t u : next(mp, task.pos, task.path[task.pos])) {
          const int64_t c = count(task.m, task.pos + 1, u);
          if (c < 0) return absl::InternalError(absl::StrCat("no instance count for vertex ", u));
          if (task.index < c) {
            chosen = u;
            break;
          }
          task.index -= c;
        }
        if (chosen < 0) return absl::InternalError(absl::StrCat("instance ", task.order, " of root ",
                                                                task.root, " is out of range"));
        task.path[++task.pos] = chosen;
        if (task.pos == len - 1) {
          const int o = owners.Of(task.root);
          (o == me ? done[index_of(task.root)] : finished[o]).push_back(task);
          break;
        }
        const int o = owner_of(mp.node_types[task.pos], chosen);
        if (o != me) {
          out[o].push_back(task);
          break;
        }
      }
    }
    active.clear();
    FG_ASSIGN_OR_RETURN(
        const uint64_t total,
        Step(comm, Tag(ctx, kStepDecode, step), out, finished,
             [&](int q, const PathTask& task) -> absl::Status {
               const bool ok = task.m >= 0 && task.m < M && task.pos >= 0 &&
                               task.pos + 1 < mps[task.m].length() &&
                               owner_of(mps[task.m].node_types[task.pos], task.path[task.pos]) == me;
               if (!ok) return absl::DataLossError(absl::StrCat("worker ", q, " sent a malformed instance"));
               active.push_back(task);
               return absl::OkStatus();
             },
             [&](int q, const PathTask& task) -> absl::Status {
               const int64_t k = index_of(task.root);
               if (k >= static_cast<int64_t>(roots.size()) || roots[k] != task.root || task.m < 0 ||
                   task.m >= M) {
                 return absl::DataLossError(absl::StrCat("worker ", q, " sent an instance of root ",
                                                         task.root, ", which is not a root of worker ", me));
               }
               done[k].push_back(task);
               return absl::OkStatus();
             }));
    if (total == 0) break;
  }
  return hdg::HdgBuilder(schema, num_vertices)
      .Build(roots, [&](int32_t root, hdg::NeighborWriter& writer) {
        std::vector<PathTask>& mine = done[index_of(root)];
        std::sort(mine.begin(), mine.end(), [](const PathTask& a, const PathTask& b) {
          return a.m != b.m ? a.m < b.m : a.order < b.order;
        });
        int32_t ids[kMaxPathLength];
        for (const PathTask& task : mine) {
          const nau::Metapath& mp = mps[task.m];
          for (int j = 0; j < mp.length(); ++j) {
            ids[j] = static_cast<int32_t>(space.type_offset(mp.node_types[j]) + task.path[j]);
          }
          writer.AddInstance(task.m, std::span<const int32_t>(ids, mp.length()));
        }
      });
}

}  // namespace fg::runtime
