#include "runtime/comm/process_grid.h"

#include "absl/strings/str_cat.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/status.h"

namespace fg::runtime {

absl::StatusOr<ProcessGrid> ProcessGrid::Make(Communicator& world, int pr, int pc, int pf, const char* what) {
  if (pr < 1 || pc < 1 || pf < 1 || static_cast<int64_t>(pr) * pc * pf != world.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a ", what, " grid of ", pr, " x ", pc,
                                                   pf > 1 ? absl::StrCat(" x ", pf) : std::string(),
                                                   " does not cover the run's ", world.size(), " workers"));
  }
  ProcessGrid g;
  g.dims_[0] = pr, g.dims_[1] = pc, g.dims_[2] = pf;
  const int r = world.rank();
  g.coord_[2] = r % pf;
  g.coord_[1] = (r / pf) % pc;
  g.coord_[0] = r / (pf * pc);
  const int i = g.coord_[0], j = g.coord_[1], l = g.coord_[2];
  // Colours: the fixed coordinates, numbered; keys: the varying one.
  FG_ASSIGN_OR_RETURN(g.row_, world.Split(i * pf + l, j));
  FG_ASSIGN_OR_RETURN(g.column_, world.Split(j * pf + l, i));
  if (pf > 1) {
    FG_ASSIGN_OR_RETURN(g.fibre_, world.Split(i * pc + j, l));
  }
  return g;
}

absl::StatusOr<ProcessGrid> ProcessGrid::Make2D(Communicator& world, int pr, int pc) {
  return Make(world, pr, pc, 1, "2D");
}

absl::StatusOr<ProcessGrid> ProcessGrid::Make3D(Communicator& world, int pr, int pc, int pf) {
  return Make(world, pr, pc, pf, "3D");
}

absl::StatusOr<ProcessGrid> ProcessGrid::Make15D(Communicator& world, int c) {
  if (c < 1 || world.size() % c != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("1.5D replication c=", c, " does not divide the run's ", world.size(), " workers"));
  }
  return Make(world, world.size() / c, c, 1, "1.5D");
}

Communicator& ProcessGrid::fibre() const {
  FG_CHECK(fibre_ != nullptr) << "fibre() of a grid without fibres (" << dims_[0] << " x " << dims_[1] << ")";
  return *fibre_;
}

}  // namespace fg::runtime
