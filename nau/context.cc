#include "nau/context.h"

#include <algorithm>

#include "flexgraph/autograd/functions.h"

namespace fg::nau {

VertexSpace::VertexSpace(const graph::HeteroGraph& g) : types_(g.node_types) {
  offsets_.push_back(0);
  for (int64_t n : g.num_nodes) offsets_.push_back(offsets_.back() + n);
}

int VertexSpace::TypeIndex(const std::string& name) const {
  auto it = std::find(types_.begin(), types_.end(), name);
  return it == types_.end() ? -1 : static_cast<int>(it - types_.begin());
}

int VertexSpace::TypeOf(int64_t global) const {
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), global);
  return static_cast<int>(it - offsets_.begin()) - 1;
}

ag::Var LayerContext::MeanOverRoots(const ag::Var& x) const {
  auto across = [&](const ag::Var& v) { return sum_across_workers ? sum_across_workers(v) : v; };
  const float total =
      across(ag::Var(Tensor::Full({1}, static_cast<float>(x.rows())))).value().Item();
  return ag::Scale(across(ag::SumRows(x)), total > 0 ? 1.0f / total : 0.0f);
}

}  // namespace fg::nau
