#include "hdg/schema.h"

#include "absl/strings/str_cat.h"

namespace fg::hdg {

SchemaTree SchemaTree::Flat(std::string neighbor_name, bool weighted) {
  SchemaTree s;
  s.kind_ = SchemaKind::kFlat;
  s.neighbor_name_ = std::move(neighbor_name);
  s.weighted_ = weighted;
  return s;
}

SchemaTree SchemaTree::Metapaths(std::vector<MetapathType> metapaths) {
  SchemaTree s;
  s.kind_ = SchemaKind::kMetapath;
  s.metapaths_ = std::move(metapaths);
  return s;
}

std::string SchemaTree::ToString() const {
  if (kind_ == SchemaKind::kFlat) {
    return absl::StrCat("root -> ", neighbor_name_, weighted_ ? "[weighted]" : "", " vertices");
  }
  std::string s = "root -> {";
  for (size_t i = 0; i < metapaths_.size(); ++i) {
    absl::StrAppend(&s, i ? ", " : "", metapaths_[i].name, ": instances[", metapaths_[i].length,
                    "]");
  }
  return s + "}";
}

bool SchemaTree::operator==(const SchemaTree& o) const {
  if (kind_ != o.kind_ || weighted_ != o.weighted_ || neighbor_name_ != o.neighbor_name_ ||
      metapaths_.size() != o.metapaths_.size()) {
    return false;
  }
  for (size_t i = 0; i < metapaths_.size(); ++i) {
    if (metapaths_[i].name != o.metapaths_[i].name ||
        metapaths_[i].length != o.metapaths_[i].length) {
      return false;
    }
  }
  return true;
}

}  // namespace fg::hdg
