// SchemaTree: the shape of a layer's hierarchical dependency graph (HDG). The root's subtree names,
// per level, the node types and their arity. Two shapes cover DNFA/INFA and INHA models:
//
//   Flat (GCN, PinSage):     root -> neighbor vertices                       (1 level)
//   Metapath (MAGNN):        root -> (root, metapath) groups -> instances -> vertices (3 levels)
//                            one group type per metapath; an instance of metapath P has arity len(P)
//
// Levels are numbered bottom-up: level 1 aggregates vertices, the top level produces the roots.
// Immutable value type; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fg::hdg {

enum class SchemaKind { kFlat, kMetapath };

struct MetapathType {
  std::string name;   // e.g. "M-D-M"
  int length = 0;     // vertices per instance
};

class SchemaTree {
 public:
  // root -> neighbors; `weighted` when neighbors carry weights (PinSage visit counts, GCN norms).
  static SchemaTree Flat(std::string neighbor_name = "neighbor", bool weighted = false);
  // root -> one group per metapath -> instances -> vertices.
  static SchemaTree Metapaths(std::vector<MetapathType> metapaths);

  SchemaKind kind() const { return kind_; }
  int num_levels() const { return kind_ == SchemaKind::kFlat ? 1 : 3; }
  bool weighted() const { return weighted_; }
  const std::string& neighbor_name() const { return neighbor_name_; }
  const std::vector<MetapathType>& metapaths() const { return metapaths_; }
  int num_types() const { return kind_ == SchemaKind::kFlat ? 1 : static_cast<int>(metapaths_.size()); }
  // A one-line description: "root -> {M-D-M: instances[3], M-A-M: instances[3]}".
  std::string ToString() const;
  bool operator==(const SchemaTree& o) const;

 private:
  SchemaKind kind_ = SchemaKind::kFlat;
  bool weighted_ = false;
  std::string neighbor_name_ = "neighbor";
  std::vector<MetapathType> metapaths_;
};

}  // namespace fg::hdg
