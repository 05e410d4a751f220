#include "flexgraph/graph/hetero_graph.h"

#include "absl/strings/str_cat.h"

namespace fg::graph {

int HeteroGraph::TypeIndex(const std::string& type) const {
  for (size_t i = 0; i < node_types.size(); ++i) {
    if (node_types[i] == type) return static_cast<int>(i);
  }
  return -1;
}

int64_t HeteroGraph::NumNodes(const std::string& type) const {
  const int t = TypeIndex(type);
  return t < 0 ? 0 : num_nodes[t];
}

const Relation* HeteroGraph::FindRelation(const std::string& key_or_name) const {
  for (const Relation& r : relations) {
    if (r.Key() == key_or_name) return &r;
  }
  const Relation* found = nullptr;
  for (const Relation& r : relations) {
    if (r.name == key_or_name) {
      if (found != nullptr) return nullptr;  // ambiguous
      found = &r;
    }
  }
  return found;
}

int64_t HeteroGraph::TotalEdges() const {
  int64_t total = 0;
  for (const Relation& r : relations) total += r.by_src.nnz();
  return total;
}

size_t HeteroGraph::Bytes() const {
  size_t bytes = 0;
  for (const Relation& r : relations) {
    bytes += r.by_src.bytes();
    if (r.by_dst.indices.raw() != r.by_src.indices.raw()) bytes += r.by_dst.bytes();
    if (r.edge_feat.defined()) bytes += r.edge_feat.nbytes();
  }
  return bytes;
}

absl::Status HeteroGraph::ToInt32Indices() {
  for (Relation& r : relations) {
    if (!r.by_src.has_int64_indices() && !r.by_dst.has_int64_indices()) continue;
    const bool shared = r.by_dst.indices.raw() == r.by_src.indices.raw();
    for (Csr* c : {&r.by_src, &r.by_dst}) {
      absl::StatusOr<Csr> narrow = c->WithInt32Indices();
      if (!narrow.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("relation ", r.Key(), ": ", narrow.status().message()));
      }
      *c = *std::move(narrow);
      if (shared) {
        r.by_dst = r.by_src;
        break;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace fg::graph
