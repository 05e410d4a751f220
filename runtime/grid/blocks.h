// The block distribution of the process-grid layers (CAGNET): the vertices randomly permuted, then
// cut into contiguous blocks of the permuted order; a sparse matrix's blocks A[R_i, R_k] in local
// coordinates; and a sparse block as bytes on the wire. Thread-safe (values and pure functions).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/autograd/var.h"
#include "flexgraph/tensor/csr.h"
#include "flexgraph/tensor/tensor.h"

namespace fg::grid {

// n vertices in `blocks` blocks: vertex v sits at position position[v] of the permuted order, and
// block b holds positions [Lo(b), Lo(b + 1)), Lo(b) = n b / blocks unless `bounds` says otherwise.
struct VertexBlocks {
  int64_t n = 0;
  int blocks = 1;
  std::vector<int64_t> order;     // order[p]: the vertex at position p
  std::vector<int64_t> position;  // position[v]: v's position
  std::vector<int64_t> bounds;    // empty, or blocks + 1 ascending positions from 0 to n
  int64_t Lo(int b) const { return bounds.empty() ? n * b / blocks : bounds[b]; }
  int64_t Size(int b) const { return Lo(b + 1) - Lo(b); }
  int BlockOf(int64_t pos) const;
  // A uniformly random permutation from `seed` (the same on every platform); seed 0: the identity.
  static VertexBlocks Make(int64_t n, int blocks, uint64_t seed);
  // The identity order cut at `bounds` (a partitioned dataset's parts: blocks.size() - 1 blocks,
  // block b the ids [bounds[b], bounds[b + 1])).
  static VertexBlocks FromBounds(std::vector<int64_t> bounds);
  // The same blocks with each block's vertices in ascending id order: any contiguous range of a
  // block's positions then lists its vertices in id order (a trainer's row order).
  void SortWithinBlocks();
};

// The columns [Lo, Lo + Size) of a `width`-wide dense operand that block j of `parts` holds.
inline int64_t ColumnLo(int64_t width, int parts, int j) { return width * j / parts; }

// Block i's rows of `a` (n x n, rows = outputs) as the grid products take them: blocks.Size(i)
// rows, row r the vertex at position Lo(i) + r, columns as positions (n of them), values carried
// (1 where `a` has none), entries of a row in a's order.
Csr BlockRows(const Csr& a, const VertexBlocks& blocks, int i);

// The entries of `rows` (columns as positions) in column block k, for each k with want[k], in
// k's local columns (the others are left empty): out[k] = A[R_i, R_k] for rows = BlockRows(a, i).
std::vector<Csr> SplitColumnBlocks(const Csr& rows, const VertexBlocks& blocks, const std::vector<bool>& want);

// For each block k: the rows r in [lo, hi) of `rows` (columns as positions) with an entry in a
// column of block k, ascending, as r - lo. With rows = block i's rows of A^T, out[k] lists the
// columns of A[R_k, R_i] (from lo) that hold an entry: what the sparsity-aware products send.
std::vector<std::vector<int32_t>> RowsReaching(const Csr& rows, const VertexBlocks& blocks, int64_t lo, int64_t hi);

// The entries of `block` in columns [lo, hi), as a block of hi - lo columns (column c becomes c - lo).
Csr ColumnRange(const Csr& block, int64_t lo, int64_t hi);

// The distinct columns of `block`, ascending; with `compact`, `block` rewritten over them (column c
// becomes its index in the list), the block the sparsity-aware products use.
std::vector<int32_t> TouchedColumns(const Csr& block, Csr* compact);

// A block on the wire: int32 row lengths, then (int32 column, float value) per entry — exactly
// 4 rows + 8 nnz bytes (runtime/plan/volumes.h counts the same). The receiver knows the shape.
std::string EncodeBlock(const Csr& block);
absl::StatusOr<Csr> DecodeBlock(const std::string& bytes, int64_t rows, int64_t cols, int peer);

// A matrix's entries on the wire, as AddMatrix (grid_aggregation.h) gathers a block's rows: 12 bytes
// each, (int32 row position, int32 column position, float weight). DecodeBlockRows assembles block
// i's rows (BlockRows' layout) from what each worker q sent (got[q]), entries of a row in (sender,
// send) order; an entry outside block i's rows or the n columns, or a length that is no multiple
// of 12, is an error naming the sender.
void AppendEntry(std::string* out, int32_t row, int32_t col, float weight);
absl::StatusOr<Csr> DecodeBlockRows(const std::vector<std::string>& got, const VertexBlocks& blocks, int i);

// Naming of a grid product's messages. Products are calls, counted alike on every worker; call c
// of a product with `stages` steps uses the tag fields (epoch = Name.epoch, step = Name.first + s)
// for s < stages, all below kGridSteps: steps from kGridSteps up are left to the caller's own
// collectives over the whole run (a gradient all-reduce), which then never share a name with a
// product's messages. Name.epoch is at least kGridEpochBase, so that collectives named by a
// training epoch (below it) never share a name with a product's either.
inline constexpr int kGridSteps = 1000;
inline constexpr int kGridEpochBase = 1 << 21;
struct CallName {
  int epoch = 0, first = 0;
};
CallName NameCall(int64_t call, int stages);

// A grid product as a differentiable op named `op`: forward(h) is the result and backward(g) h's
// gradient. A failed forward leaves zeros ([rows, h's width]), a failed backward no gradient, and
// the first error in *status (which must outlive the graph).
using ProductFn = std::function<absl::StatusOr<Tensor>(const Tensor&)>;
ag::Var ProductOp(const ag::Var& h, const char* op, int64_t rows, const ProductFn& forward, ProductFn backward,
                  absl::Status* status);

// Rows `idx` of a dense [rows, w] float tensor, as bytes; and the reverse into a new tensor.
std::string GatherRowBytes(const Tensor& x, const std::vector<int32_t>& idx);
absl::StatusOr<Tensor> BytesToTensor(const std::string& bytes, int64_t rows, int64_t w, int peer);

}  // namespace fg::grid
