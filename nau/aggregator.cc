#include "nau/aggregator.h"

#include "flexgraph/base/logging.h"

namespace fg::nau {

const char* StrategyName(Strategy s) {
  switch (s) {
    case Strategy::kDense:
      return "dense";
    case Strategy::kSparse:
      return "sparse";
    case Strategy::kGraph:
      return "graph";
  }
  return "?";
}

bool ParseStrategy(const std::string& name, Strategy* out) {
  for (Strategy s : {Strategy::kDense, Strategy::kSparse, Strategy::kGraph}) {
    if (name == StrategyName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

const char* ReductionName(Reduction r) {
  switch (r) {
    case Reduction::kSum:
      return "sum";
    case Reduction::kMean:
      return "mean";
    case Reduction::kMax:
      return "max";
    case Reduction::kWeightedSum:
      return "weighted-sum";
    case Reduction::kCustom:
      return "custom";
  }
  return "?";
}

ag::Var LevelInput::GatherBlock(int t) const {
  const hdg::HdgLevel& l = lvl();
  const int64_t arity = l.block_arity[t];
  FG_CHECK(arity >= 0) << "GatherBlock: block " << t << " of level " << level
                       << " has variable arity";
  const int64_t lo = l.type_offsets[t], hi = l.type_offsets[t + 1];
  const Csr host = l.csr().offsets.device() == Device::kCpu
                       ? l.csr()
                       : Csr{.offsets = l.csr().offsets.To(Device::kCpu),
                             .indices = l.csr().indices.To(Device::kCpu),
                             .values = Tensor()};
  const int64_t e_lo = host.row_ptr()[lo], e_hi = host.row_ptr()[hi];
  Tensor idx = Tensor::Empty({e_hi - e_lo}, DType::kInt32);
  std::copy(host.col() + e_lo, host.col() + e_hi, idx.i32());
  ag::Var g = ag::GatherRows(children, idx.To(children.value().device()));
  return ag::Reshape(g, {hi - lo, arity, children.row_width()});
}

Tensor LevelInput::NodeRoots() const {
  // Walk down from the roots: a node's root is its parent's root.
  const int levels = hdg->num_levels();
  Tensor current = Tensor::Empty({hdg->num_roots()}, DType::kInt32);
  for (int64_t r = 0; r < hdg->num_roots(); ++r) current.i32()[r] = static_cast<int32_t>(r);
  for (int k = levels; k > level; --k) {
    const Csr& c = hdg->level(k).csr();
    Tensor next = Tensor::Empty({c.num_cols}, DType::kInt32);
    for (int64_t i = 0; i < c.num_cols; ++i) next.i32()[i] = -1;
    for (int64_t i = 0; i < c.num_rows; ++i) {
      for (int64_t e = c.row_ptr()[i]; e < c.row_ptr()[i + 1]; ++e) {
        next.i32()[c.col()[e]] = current.i32()[i];
      }
    }
    current = next;
  }
  return current;
}

}  // namespace fg::nau
