// What each distributed training scheme moves and holds per worker: the contract that the
// exchange (runtime/distributed, 1D) and the process-grid layers (1.5D, 2D, 3D, to come) are checked
// against. Volumes follow CAGNET (Tripathy, Yelick, Buluç, SC'20) for 1D, 1.5D (replication c),
// 2D (SUMMA on a pr x pc grid) and 3D (Split-3D-SpMM on pr x pc x pf, as Plexus (SC'25) scales it),
// each sparsity-oblivious (whole blocks) or sparsity-aware (only the rows of a dense block whose
// columns are non-zero in the receiver's sparse block: Mukhopadhyay et al.). Words are 4 bytes; a
// sparse entry on the wire is 8 (column, value). Thread-safe (pure functions).
//
// Per SpMM of an n x n matrix with E entries over rows w wide, per worker (T(q): the expected
// columns with a non-zero in a block of rows holding a fraction q of them, DegreeHistogram::ExpectedTouched):
//   1D graph-partitioned  rows: the distinct remote rows its roots read; partial: per peer, the
//                         fewer of those and the roots with a neighbour there (exact for a given
//                         partition; for a random one, (P-1)/P x T(1/P) rows per peer sum)
//   1D oblivious          all-gather: (n - n/P) w
//   1.5D, c | P, c*c <= P  broadcasts (n/c - n/P) w [aware: x T(c/P)/n] + all-reduce of the c
//                         replicas' partial sums 2 (c-1) n w / P
//   2D pr x pc            A: E/pr - E/P entries and (n - n/pc) row lengths (4 bytes each: a
//                         block's structure); dense: (n/pc - n/P) w [aware: x T(1/pr)/n];
//                         the layer's GEMM all-gathers its row block: (n/pr)(1 - 1/pc) min(in,out)
//   3D pr x pc x pf       A: E/(pr pf) - E/P and (n - n/pc) row lengths; dense: (n/(pc pf) - n/P) w [aware: x T(1/pr)/n];
//                         reduce-scatter over the fibre: (1 - 1/pf) n w/(pr pc); GEMM all-gather
//                         (1 - 1/pc) n min(in,out)/(pr pf)
// plus, for every scheme, the ring all-reduce of the parameters' gradients: 2 (P-1)/P x params.
// Bytes sent equal bytes received on average over the workers (every byte has a sender).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flexgraph/tensor/csr.h"
#include "runtime/plan/workload.h"

namespace fg::plan {

enum class Scheme { kOneD, kOnePointFiveD, kTwoD, kThreeD };
// 1D exchanges: every peer by row fetch, or per peer whichever of row fetch and partial
// aggregation sends fewer vectors (FlexGraph's default, --exchange auto), or whole blocks.
enum class OneDMode { kRows, kPartial, kOblivious };

struct StrategySpec {
  Scheme scheme = Scheme::kOneD;
  bool aware = true;             // sparsity-aware (1D: rows or partial; oblivious: false)
  OneDMode mode = OneDMode::kPartial;
  int c = 1;                     // 1.5D replication
  int grid[3] = {1, 1, 1};       // 2D: pr, pc; 3D: pr, pc, pf
  std::string partition;         // 1D: the partition the counts come from ("hash", "metis", ...)
  std::string Name() const;      // e.g. "1d-partial/metis", "1.5d c=4 aware", "2d 16x32 oblivious"
};

// A 1D partition's cut, per ordered pair of workers: rows[q * P + p] distinct vertices of q that
// p's roots read, targets[q * P + p] roots of p with at least one in-neighbour owned by q. Exact
// (CountCut) or expected for a random partition (ExpectedCut, every pair alike).
struct Cut {
  int parts = 1;
  bool exact = false;
  std::vector<double> rows, targets;
  std::vector<double> owned;    // vertices per worker
  std::vector<double> entries;  // aggregation entries per worker's roots (self loops included)
};
// `in_edges`: rows are destinations; `self_loops`: the aggregation adds one entry per root (local).
Cut CountCut(const Csr& in_edges, const std::vector<int32_t>& owners, int parts, bool self_loops);
Cut ExpectedCut(const GraphCounts& g, int parts, bool self_loops);

// Vectors per forward SpMM of each worker under a 1D mode, by kind: what it sends (rows and
// partial sums), receives, and to how many peers it sends a non-empty message.
struct OneDVectors {
  std::vector<double> rows_sent, partials_sent, received, peers;
};
OneDVectors CountVectors(const Cut& cut, OneDMode mode);

// Per worker and epoch: bytes, messages (latency terms) and the busiest worker's bytes.
struct Volume {
  double bytes_sent = 0, bytes_received = 0;  // mean over workers
  double bytes_received_max = 0;              // the busiest worker
  double messages = 0;                        // sequential message steps per worker
  double sparse_bytes = 0;                    // of bytes_received: sparse blocks (2D, 3D)
};
// One SpMM (forward or backward) of `width`, under `spec`, on `g` over P workers. 1D uses `cut`.
// `gemm_width`: the layer's min(in, out) (2D and 3D all-gather it for the dense product; 0: none).
Volume SpmmVolume(const StrategySpec& spec, const GraphCounts& g, bool self_loops, const Cut* cut,
                  int parts, int64_t width, int64_t gemm_width, bool backward);
// The exact counts behind the 1.5D, 2D and 3D formulas for one matrix under one block distribution (rows and
// columns cut alike into `blocks` blocks; block_of[v]: v's block): vertices, entries (all of them,
// the diagonal included), and touched: the sum over row blocks i and column blocks k != i of the
// distinct columns with an entry in block (i, k) — the rows the sparsity-aware variant sends
// (expected: (blocks - 1) T(1/blocks)).
struct BlockCounts {
  double vertices = 0, entries = 0, touched = 0;
};
BlockCounts CountBlocks(const Csr& a, const std::vector<int32_t>& block_of, int blocks);
// SpmmVolume's 2D case from block counts (spec.grid[0] = the counts' blocks): the mean over the
// workers of what each sends and receives per SpMM, exactly for exact counts (runtime/grid/spmm_2d.h).
Volume TwoDVolume(const StrategySpec& spec, const BlockCounts& b, int parts, int64_t width, int64_t gemm_width);

// SpmmVolume's 3D case from block counts over pr blocks (runtime/grid/spmm_3d.h).
Volume ThreeDVolume(const StrategySpec& spec, const BlockCounts& b, int parts, int64_t width, int64_t gemm_width);
// SpmmVolume's 1.5D case from block counts over the P/c blocks (spec.c = c), exactly for exact
// counts (runtime/grid/spmm_15d.h).
Volume OnePointFiveDVolume(const StrategySpec& spec, const BlockCounts& b, int parts, int64_t width);

// The ring all-reduce of `params` floats over P workers (runtime/comm RingAllReduce): bytes rank
// `rank` sends, exactly.
int64_t RingAllReduceBytesSent(int64_t params, int parts, int rank);

// The most nearly square factorisation of P into k factors, ascending (k = 2 or 3).
std::vector<int> NearCubicGrid(int parts, int k);

}  // namespace fg::plan
