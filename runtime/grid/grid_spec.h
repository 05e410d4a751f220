// Which process grid a run uses (`--exchange 1.5d:c=2 | 2d[:PRxPC] | 3d[:PRxPCxPF]`, with
// `,oblivious` for the sparsity-oblivious products) and its shape for P workers. Values and pure
// functions; thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace fg::grid {

enum class GridScheme { kNone, kTwoD, kOnePointFiveD, kThreeD };

struct GridSpec {
  GridScheme scheme = GridScheme::kNone;
  int pr = 0, pc = 0, pf = 0;  // 2D and 3D; 0: chosen by Resolve
  int c = 0;                   // 1.5D replication
  bool aware = true;           // sparsity-aware products
  bool active() const { return scheme != GridScheme::kNone; }
};

// "2d", "2d:2x3", "3d", "3d:2x2x2", "1.5d:c=2", each optionally followed by ",oblivious";
// anything else (auto, rows, partial included) is not a grid: an error that says what is
// accepted.
absl::StatusOr<GridSpec> ParseGridSpec(const std::string& text);
// True when `text` names a grid scheme at all ("2d...", "3d...", "1.5d...").
bool IsGridSpec(const std::string& text);

// The spec with its shape filled in for `workers` as runtime/plan shapes its grids (2D: pr x pc
// as square as possible, pr <= pc; 3D: the most cube-like pr <= pc <= pf); an error naming the shape and P
// when they disagree (1.5D: c^2 must divide P, so that c divides the P / c blocks).
absl::StatusOr<GridSpec> ResolveGridSpec(GridSpec spec, int workers);

// The row blocks of a spec resolved for `workers`: pr (2D, 3D), workers / c (1.5D). Worker r's
// block is r / (workers / blocks) (runtime/comm/process_grid.h's row-major ranks).
int GridRowBlocks(const GridSpec& resolved, int workers);

// "2d 2x3 aware", "1.5d c=2 oblivious", for summaries and errors.
std::string DescribeGrid(const GridSpec& spec);

}  // namespace fg::grid
