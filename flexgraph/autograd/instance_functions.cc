#include "flexgraph/autograd/instance_functions.h"

#include "flexgraph/base/logging.h"
#include "flexgraph/ops/ops.h"

namespace fg::ag {

Var ComplexMul(const Var& x, const Var& r) {
  Tensor y = ops::ComplexMul(x.value(), r.value());
  return MakeResult(y, "ComplexMul", {x, r},
                    [x = GradRef(x), r = GradRef(r), xv = x.value(), rv = r.value()](const Tensor& g) {
                      if (x.requires_grad()) AccumulateGrad(x, ops::ComplexMulGradX(g, rv), "ComplexMul");
                      if (r.requires_grad()) {
                        AccumulateGrad(r, ops::ComplexMulGradR(g, xv, rv.shape()), "ComplexMul");
                      }
                    });
}

Var EncodeInstances(const Var& table, const std::vector<Tensor>& vertices,
                    const std::vector<Var>& rotations) {
  FG_CHECK(vertices.size() == rotations.size())
      << "EncodeInstances: " << vertices.size() << " blocks, " << rotations.size() << " rotations";
  ops::InstanceBlocks blocks{vertices, {}};
  std::vector<Var> inputs = {table};
  std::vector<GradRef> rotation_refs;
  for (const Var& r : rotations) {
    blocks.rotations.push_back(r.defined() ? r.value() : Tensor());
    rotation_refs.push_back(r.defined() ? GradRef(r) : GradRef());
    if (r.defined()) inputs.push_back(r);
  }
  Tensor y = ops::EncodeInstances(table.value(), blocks);
  return MakeResult(
      y, "EncodeInstances", inputs,
      [t = GradRef(table), tv = table.value(), blocks, rotation_refs](const Tensor& g) {
        if (t.requires_grad()) {
          AccumulateGrad(t, ops::EncodeInstancesGradTable(g, blocks, tv.rows()), "EncodeInstances");
        }
        for (size_t b = 0; b < rotation_refs.size(); ++b) {
          if (!rotation_refs[b].defined() || !rotation_refs[b].requires_grad()) continue;
          AccumulateGrad(rotation_refs[b], ops::EncodeInstancesGradRotation(g, tv, blocks, b),
                         "EncodeInstances");
        }
      });
}

Var HeadWeightedSum(const SparseMatrixPtr& a, const Var& x, const Var& alpha) {
  Tensor y = ops::HeadWeightedSum(a->csr(), x.value(), alpha.value());
  return MakeResult(y, "HeadWeightedSum", {x, alpha},
                    [a, x = GradRef(x), alpha = GradRef(alpha), xv = x.value(),
                     av = alpha.value()](const Tensor& g) {
                      if (x.requires_grad()) {
                        AccumulateGrad(x, ops::HeadWeightedSumGradX(*a, av, g), "HeadWeightedSum");
                      }
                      if (alpha.requires_grad()) {
                        AccumulateGrad(alpha, ops::HeadWeightedSumGradAlpha(a->csr(), xv, g),
                                       "HeadWeightedSum");
                      }
                    });
}

Var PickRows(const Var& x, const Tensor& idx) {
  Tensor y = ops::GatherRows(x.value(), idx);
  return MakeResult(y, "PickRows", {x}, [x = GradRef(x), idx](const Tensor& g) {
    AccumulateGradRows(x, idx, g, "PickRows");
  });
}

}  // namespace fg::ag
