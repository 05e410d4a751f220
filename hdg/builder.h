// HdgBuilder: builds an Hdg by calling a NeighborSelection function for every root, in parallel.
// Roots are processed in fixed-size chunks into chunk-local buffers, merged by one prefix sum in
// root order, so the result is identical for any thread count. The selection function must be safe
// to call concurrently for different roots.
//
//   FG_ASSIGN_OR_RETURN(Hdg hdg, HdgBuilder(SchemaTree::Flat(), n).Build(roots,
//       [&](int32_t root, NeighborWriter& out) { for (int32_t u : nbrs(root)) out.Add(u); }));
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hdg/hdg.h"

namespace fg::hdg {

// Receives one root's neighbors. Errors (a vertex outside the table, an instance of the wrong
// length, a call that does not fit the schema) are recorded and reported by Build().
class NeighborWriter {
 public:
  // Flat schemas: one neighbor vertex (weight ignored by unweighted schemas).
  void Add(int32_t vertex, float weight = 1.0f);
  // Metapath schemas: one instance of metapath `type`, its vertices in path order.
  void AddInstance(int type, std::span<const int32_t> vertices);
  void AddInstance(int type, std::initializer_list<int32_t> vertices) {
    AddInstance(type, std::span<const int32_t>(vertices.begin(), vertices.size()));
  }
  int64_t num_vertices() const { return num_vertices_; }

 private:
  friend class HdgBuilder;
  struct Buffer {
    std::vector<int32_t> children;
    std::vector<float> weights;
    std::vector<int64_t> counts;                     // flat: per root
    std::vector<std::vector<int32_t>> instances;     // metapath: per type, flattened
    std::vector<std::vector<int64_t>> inst_counts;   // metapath: per type, per root
    std::string error;
  };
  NeighborWriter(const SchemaTree* schema, int64_t num_vertices, Buffer* buffer, int32_t root)
      : schema_(schema), num_vertices_(num_vertices), buf_(buffer), root_(root) {}
  void Fail(const std::string& message);

  const SchemaTree* schema_;
  int64_t num_vertices_;
  Buffer* buf_;
  int32_t root_;
};

// A one-level HDG of a flat schema from CSR arrays: root i's neighbours are
// children[offsets[i] .. offsets[i + 1]) (int64 offsets, int32 indices into a vertex table of
// `num_vertices` rows), with float `weights` per entry when the schema is weighted. The caller
// guarantees that the indices are in range.
Hdg FlatHdg(SchemaTree schema, int64_t num_vertices, Tensor roots, Tensor offsets, Tensor children,
            Tensor weights);

class HdgBuilder {
 public:
  using SelectFn = std::function<void(int32_t root, NeighborWriter& out)>;

  HdgBuilder(SchemaTree schema, int64_t num_vertices)
      : schema_(std::move(schema)), num_vertices_(num_vertices) {}
  // Roots are vertex-table indices; one top-level node per root, in this order.
  absl::StatusOr<Hdg> Build(const std::vector<int32_t>& roots, const SelectFn& select) const;

 private:
  SchemaTree schema_;
  int64_t num_vertices_;
};

}  // namespace fg::hdg
