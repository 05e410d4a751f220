// Differentiable functions of metapath-instance models (MAGNN), over the ops of ops/instances.h:
// complex rotations, the fused instance encoder, per-head weighted sums and row picks. Gradients
// are summed in a fixed order (independent of the thread count). Thread-compatible.
//
//   Var rot = ag::ComplexMul(prev, r);                                   // RotatE step
//   Var h = ag::EncodeInstances(table, {mdm, mam}, {rot_mdm, rot_mam});   // [n_mdm + n_mam, d]
#pragma once

#include <vector>

#include "flexgraph/autograd/var.h"
#include "flexgraph/ops/instances.h"

namespace fg::ag {

// x ∘ r, complex (interleaved pairs): x [n, d] or [n, L, d], r [L, d] broadcast over n.
Var ComplexMul(const Var& x, const Var& r);
// Instances in blocks, block b: vertices[b] int32 [n_b, L_b] (rows of table [rows, d]) encoded as
// 1/L Σ_l r_bl ∘ table[v_il] with rotations[b] [L_b, d], or as their mean when rotations[b] is
// undefined; blocks one after the other: [Σ n_b, d]. Equals the mean over the middle axis of
// ComplexMul of the gathered [n, L, d] batch, without materialising it or its gradient.
Var EncodeInstances(const Var& table, const std::vector<Tensor>& vertices,
                    const std::vector<Var>& rotations);
// y[r, h d + j] = Σ_{e in row r of a} alpha[e, h] x[col(e), j]: heads weight the same rows of x.
Var HeadWeightedSum(const SparseMatrixPtr& a, const Var& x, const Var& alpha);
// Rows idx (distinct, int32) of x. Unlike GatherRows, backward adds into x's gradient in place,
// so picking many small row sets of a large x allocates x's gradient once.
Var PickRows(const Var& x, const Tensor& idx);

}  // namespace fg::ag
