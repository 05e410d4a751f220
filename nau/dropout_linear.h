// DropoutLinear: Linear(Dropout(x)) for a layer's input rows, computed as an SpMM over the
// non-zeros when the context holds a sparse view of a constant input (bag-of-words features), and
// densely otherwise. Both paths use the same counter-based mask, so they agree exactly.
// Thread-compatible.
#pragma once

#include "flexgraph/autograd/functions.h"
#include "flexgraph/nn/module.h"
#include "nau/context.h"

namespace fg::nau {

// `x` are the layer-input rows with global ids `row_ids` (the table or the roots); `site` picks
// the dropout stream as LayerContext::DropoutSeed.
ag::Var DropoutLinear(const LayerContext& ctx, const ag::Var& x, const Tensor& row_ids,
                      const nn::Linear& fc, float p, int site);

// The same with explicit parameters: Dropout(x) weight (+ plus_x plus_w when both are defined)
// (+ bias when defined), e.g. for a row block of a larger weight matrix. The second product
// accumulates into the first's output on the dense path. With `relu`, ReLU of all that (bias
// required), fused where the path allows, so that no pre-activation is kept.
ag::Var DropoutMatMul(const LayerContext& ctx, const ag::Var& x, const Tensor& row_ids,
                      const ag::Var& weight, const ag::Var& bias, float p, int site,
                      const ag::Var& plus_x = ag::Var(), const ag::Var& plus_w = ag::Var(),
                      bool relu = false);

}  // namespace fg::nau
