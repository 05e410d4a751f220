// The checks of sub-communicators that every backend's test runs on each worker (in-process threads,
// gRPC servers on loopback, MPI ranks): a 2D process grid's row and column groups have the right
// sizes and ranks, and all-reduces (floats and doubles), broadcasts and all-to-alls inside them give
// each group's own sums while the row and the column groups run at the same time with the same call
// names; keys order a group's ranks; a group splits again. Returns the first failure, naming the worker.
#pragma once

#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/process_grid.h"

namespace fg::testing {

inline absl::Status Failed(const runtime::Communicator& world, const std::string& what) {
  return absl::InternalError(absl::StrCat("worker ", world.rank(), ": ", what));
}

// Rounds of collectives on `group`, whose members' world ranks are `members` (by group rank):
// every result must be the group's own.
inline absl::Status ExerciseGroup(runtime::Communicator& world, runtime::Communicator& group,
                                  const std::vector<int>& members, int rounds) {
  using runtime::Communicator;
  const int g = group.size(), me = group.rank();
  if (members[me] != world.rank()) return Failed(world, "group rank does not match its member list");
  for (int round = 0; round < rounds; ++round) {
    // Ring all-reduce of floats: several chunks, integer values (exact sums).
    const int64_t n = 1000 + 7 * round;
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>((members[me] + 1) * (i % 11 + 1) + round);
    FG_RETURN_IF_ERROR(group.AllReduce(x.data(), n, round, 1));
    for (int64_t i = 0; i < n; ++i) {
      float want = 0;
      for (int q = 0; q < g; ++q) want += static_cast<float>((members[q] + 1) * (i % 11 + 1) + round);
      if (x[i] != want) return Failed(world, absl::StrCat("all-reduce entry ", i, " is ", x[i], ", not ", want));
    }
    std::vector<double> d = {static_cast<double>(world.rank()), 1.0};
    FG_RETURN_IF_ERROR(group.AllReduce(&d, round, 2));
    double sum = 0;
    for (int q : members) sum += q;
    if (d[0] != sum || d[1] != g) return Failed(world, absl::StrCat("double all-reduce gave ", d[0], ", ", d[1]));
    // Broadcast from a different root each round.
    const int root = round % g;
    std::string payload = me == root ? absl::StrCat("from world worker ", world.rank(), " round ", round) : "";
    FG_RETURN_IF_ERROR(group.Broadcast(&payload, root, round, 3, runtime::TrafficKind::kFeatures));
    if (payload != absl::StrCat("from world worker ", members[root], " round ", round)) {
      return Failed(world, "broadcast delivered '" + payload + "'");
    }
    // All-to-all: q receives "a->q" from every a.
    std::vector<std::string> send(g);
    for (int q = 0; q < g; ++q) send[q] = absl::StrCat(members[me], "->", members[q], "@", round);
    FG_ASSIGN_OR_RETURN(std::vector<std::string> got,
                        group.AllToAllV(std::move(send), runtime::MakeTag(round, 0, 1, runtime::TrafficKind::kControl)));
    for (int q = 0; q < g; ++q) {
      if (got[q] != absl::StrCat(members[q], "->", members[me], "@", round)) {
        return Failed(world, "all-to-all delivered '" + got[q] + "'");
      }
    }
  }
  return absl::OkStatus();
}

// The world ranks of a group's members, by group rank (an all-to-all inside the group).
inline absl::StatusOr<std::vector<int>> Members(runtime::Communicator& world, runtime::Communicator& group) {
  std::vector<std::string> send(group.size(), std::to_string(world.rank()));
  FG_ASSIGN_OR_RETURN(std::vector<std::string> got,
                      group.AllToAllV(std::move(send), runtime::MakeTag(0, 0, 2, runtime::TrafficKind::kControl)));
  std::vector<int> m;
  for (const std::string& s : got) m.push_back(std::stoi(s));
  return m;
}

// All the checks on a world of pr x pc workers.
inline absl::Status CheckSubCommunicators(runtime::Communicator& world, int pr, int pc) {
  FG_ASSIGN_OR_RETURN(runtime::ProcessGrid grid, runtime::ProcessGrid::Make2D(world, pr, pc));
  const int i = world.rank() / pc, j = world.rank() % pc;
  if (grid.i() != i || grid.j() != j) return Failed(world, "grid coordinates");
  if (grid.row().size() != pc || grid.row().rank() != j) return Failed(world, "row group size or rank");
  if (grid.column().size() != pr || grid.column().rank() != i) return Failed(world, "column group size or rank");
  std::vector<int> row(pc), column(pr);
  for (int q = 0; q < pc; ++q) row[q] = grid.RankOf(i, q);
  for (int q = 0; q < pr; ++q) column[q] = grid.RankOf(q, j);
  // Row and column groups at once, from two threads, with the same call names.
  absl::Status row_status, column_status;
  std::thread t([&] { row_status = ExerciseGroup(world, grid.row(), row, 4); });
  column_status = ExerciseGroup(world, grid.column(), column, 4);
  t.join();
  FG_RETURN_IF_ERROR(row_status);
  FG_RETURN_IF_ERROR(column_status);
  // Keys order the ranks: odd and even workers, ranked by descending world rank.
  FG_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Communicator> parity, world.Split(world.rank() % 2, -world.rank()));
  FG_ASSIGN_OR_RETURN(std::vector<int> members, Members(world, *parity));
  for (size_t q = 0; q < members.size(); ++q) {
    const int want = world.size() - 1 - static_cast<int>(q) * 2 - ((world.size() - 1 - world.rank()) % 2);
    if (members[q] != want) return Failed(world, absl::StrCat("parity group rank ", q, " is worker ", members[q], ", not ", want));
  }
  FG_RETURN_IF_ERROR(ExerciseGroup(world, *parity, members, 2));
  // A group splits again: the row's even and odd columns.
  FG_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Communicator> half, grid.row().Split(j % 2, j));
  std::vector<int> half_members;
  for (int q = j % 2; q < pc; q += 2) half_members.push_back(grid.RankOf(i, q));
  return ExerciseGroup(world, *half, half_members, 2);
}

}  // namespace fg::testing
