// ProcessGrid: the P workers of a run arranged as a 2D (pr x pc), 3D (pr x pc x pf) or 1.5D
// (P/c row blocks x c replicas) grid, with the sub-communicators (Communicator::Split) of its rows,
// columns and fibres. Ranks are row-major: 2D rank = i pc + j; 3D rank = (i pc + j) pf + l;
// 1.5D rank = b c + r (block b, replica r), the 2D grid P/c x c.
// Groups, each ranked by the coordinate it varies:
//   row(i, ., l)    the pc workers of grid row i (2D: l = 0)       — rank j
//   column(., j, l) the pr workers of grid column j                — rank i
//   fibre(i, j, .)  the pf workers of one (i, j) (3D only)         — rank l
//   1.5D: replicas() = row (the c copies of block b, rank r), layer() = column (the P/c blocks of
//   replica r, rank b).
// No two of these groups share a pair of workers, so they may run at the same time with the same
// tags (communicator.h, Split). Building one is collective over `world`, which must outlive it.
// Thread-compatible; its groups are each used by one thread at a time.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "runtime/comm/communicator.h"

namespace fg::runtime {

class ProcessGrid {
 public:
  // Errors name the grid and the worker count when the shape does not cover `world` exactly.
  static absl::StatusOr<ProcessGrid> Make2D(Communicator& world, int pr, int pc);
  static absl::StatusOr<ProcessGrid> Make3D(Communicator& world, int pr, int pc, int pf);
  // c divides P (1.5D with replication c).
  static absl::StatusOr<ProcessGrid> Make15D(Communicator& world, int c);

  int rows() const { return dims_[0]; }     // pr (1.5D: P/c)
  int columns() const { return dims_[1]; }  // pc (1.5D: c)
  int fibres() const { return dims_[2]; }   // pf (1 unless 3D)
  // This worker's coordinates.
  int i() const { return coord_[0]; }
  int j() const { return coord_[1]; }
  int l() const { return coord_[2]; }
  // The rank in `world` of the worker at (i, j, l).
  int RankOf(int i, int j, int l = 0) const { return (i * dims_[1] + j) * dims_[2] + l; }

  Communicator& row() const { return *row_; }
  Communicator& column() const { return *column_; }
  Communicator& fibre() const;  // 3D only
  Communicator& replicas() const { return *row_; }
  Communicator& layer() const { return *column_; }

 private:
  static absl::StatusOr<ProcessGrid> Make(Communicator& world, int pr, int pc, int pf, const char* what);
  int dims_[3] = {1, 1, 1};
  int coord_[3] = {0, 0, 0};
  std::unique_ptr<Communicator> row_, column_, fibre_;
};

}  // namespace fg::runtime
