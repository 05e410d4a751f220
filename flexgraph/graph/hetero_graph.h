// HeteroGraph: named node types with counts and typed relations (src_type, name, dst_type), each
// stored in both directions as Csr (by_src: rows are source ids, columns destination ids; by_dst:
// rows are destination ids, columns source ids). Ids are local to their node type. A homogeneous
// graph has one node type "node" and one relation "node___edge___node". Neighbours within a row
// are sorted. Column ids are int32, or int64 for node types beyond 2^31 - 1 nodes (storage, info,
// conversion); training takes int32 ids (ToInt32Indices). Immutable after building (except
// ToInt32Indices); thread-safe for reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/tensor/csr.h"

namespace fg::graph {

struct Relation {
  std::string src_type, name, dst_type;
  Csr by_src;        // [num(src_type) x num(dst_type)]
  Csr by_dst;        // [num(dst_type) x num(src_type)], the transpose of by_src
  Tensor edge_feat;  // float [num_edges, f] in by_src entry order, or undefined
  // True when the relation is undirected (src_type == dst_type, by_src == by_dst, sharing storage),
  // e.g. a homogeneous graph after add_reverse_edges. Then each edge {u, v} appears as u -> v and v -> u.
  bool symmetric = false;
  // "src___name___dst" as in the OGB raw layout.
  std::string Key() const { return src_type + "___" + name + "___" + dst_type; }
};

struct HeteroGraph {
  std::vector<std::string> node_types;
  std::vector<int64_t> num_nodes;  // per node type
  std::vector<Relation> relations;

  int TypeIndex(const std::string& type) const;  // -1 when absent
  int64_t NumNodes(const std::string& type) const;
  // Relation by key "src___name___dst" or by name when unique; nullptr when absent.
  const Relation* FindRelation(const std::string& key_or_name) const;
  int64_t TotalEdges() const;
  size_t Bytes() const;
  bool IsHomogeneous() const { return node_types.size() == 1 && relations.size() == 1; }
  // Converts every relation to int32 column ids (symmetric relations keep sharing storage); fails,
  // naming the relation, when a node type has more than 2^31 - 1 nodes.
  absl::Status ToInt32Indices();
};

}  // namespace fg::graph
