// Hdg: the hierarchical dependency graphs of a set of roots, stored as a stack of CSR levels.
// Level k (1-based, bottom-up) has n_k nodes; node i's children are entries offsets[i]..offsets[i+1]
// of `children` (int32 indices into level k-1; level 1 indexes the vertex table [owned | ghosts]),
// with optional float weights. Nodes of a level are grouped in blocks by schema type
// (type_offsets), e.g. all M-D-M instances, then all M-A-M instances. The top level has one node
// per root, in root order. Immutable after building; thread-safe for reads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "flexgraph/tensor/csr.h"
#include "hdg/schema.h"

namespace fg::hdg {

struct HdgLevel {
  SparseMatrixPtr matrix;             // rows = nodes of this level, cols = nodes of the level below
  Tensor weights;                     // float [entries] (weighted schemas) or undefined
  std::vector<int64_t> type_offsets;  // node blocks by schema type: size num_types + 1
  // Arity of every node of block t when uniform, else -1.
  std::vector<int64_t> block_arity;

  // A device HDG's weights normalised to sum to one within each node (undefined on the host).
  Tensor normalized_weights;
  int64_t num_nodes() const { return matrix->csr().num_rows; }
  // The weights normalised to sum to one within each node (0 where they sum to 0), on the weights'
  // device: normalized_weights when placed, else computed (on the host).
  Tensor NormalizedWeights() const;
  const Csr& csr() const { return matrix->csr(); }
};

struct HdgStats {
  std::vector<int64_t> nodes_per_level;  // level 1..L, then the vertex table size first
  std::vector<int64_t> entries_per_level;
  // Per level: arity -> count, for arities up to 64 (the last bucket counts larger ones).
  std::vector<std::vector<int64_t>> arity_histogram;
  size_t bytes = 0;
  std::string ToString() const;
};

class Hdg {
 public:
  Hdg(SchemaTree schema, int64_t num_vertices, Tensor roots, std::vector<HdgLevel> levels);

  const SchemaTree& schema() const { return schema_; }
  int num_levels() const { return static_cast<int>(levels_.size()); }
  // Level k in 1..num_levels().
  const HdgLevel& level(int k) const { return levels_[k - 1]; }
  int64_t num_vertices() const { return num_vertices_; }
  // Root vertex ids (int32 indices into the vertex table), one per top-level node.
  const Tensor& roots() const { return roots_; }
  int64_t num_roots() const { return roots_.numel(); }
  // True when root r is vertex-table row r for every r (the roots are the table's first rows).
  bool roots_are_first_rows() const { return roots_are_first_rows_; }
  size_t Bytes() const;
  HdgStats Stats() const;
  // This HDG with its levels (matrices with their transposes, weights) on `device`; level k's
  // normalised weights too where normalized[k - 1]. The roots stay on the host. Stats() and
  // WriteNpy read host levels only.
  Hdg OnDevice(Device device, const std::vector<bool>& normalized) const;

 private:
  SchemaTree schema_;
  int64_t num_vertices_;
  Tensor roots_;
  bool roots_are_first_rows_ = true;
  std::vector<HdgLevel> levels_;
};

using HdgPtr = std::shared_ptr<const Hdg>;

// Writes `hdg` as .npy arrays: <prefix>roots.npy (int64 vertex-table rows) and per level k,
// <prefix>level<k>.{indptr (int64), indices (int32; level 1: vertex-table rows), weights (float,
// weighted schemas)}.npy. Errors name the file.
absl::Status WriteNpy(const Hdg& hdg, const std::string& prefix);

}  // namespace fg::hdg
