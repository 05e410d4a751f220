// Activation recomputation (gradient checkpointing, Chen et al. 2016): a sub-computation whose
// intermediates are not kept for the backward pass. Its inputs' values are kept instead; when the
// backward pass reaches it, it is run again, recording, on those values, and differentiated there.
// Memory: the inputs and outputs of each checkpointed piece plus one piece's intermediates at a
// time, for a second forward pass of the piece. Thread-compatible, as var.h.
//
//   std::vector<Var> out = ag::Checkpoint(
//       [&](const std::vector<Var>& in) { return std::vector<Var>{mlp.Forward(in[0])}; }, {x});
//   // out[0] holds mlp(x); its gradient reaches x and mlp's parameters as without Checkpoint.
#pragma once

#include <functional>
#include <vector>

#include "flexgraph/autograd/var.h"

namespace fg::ag {

using CheckpointFn = std::function<std::vector<Var>(const std::vector<Var>& inputs)>;

// Returns fn(inputs). When gradients are enabled, fn runs on leaves that share the inputs' values
// and its recorded graph is dropped before returning: the outputs are new nodes whose backward
// runs fn again on the saved input values, with recording, and propagates their gradients through
// it into the inputs and into every parameter fn reads. Contract: fn is a function of its inputs
// and of parameter values that do not change before the backward pass (randomness keyed by
// counters, as ag::Dropout); it may keep `fn` state of its own only if a second call returns the
// same values; inputs and outputs may be undefined Vars. Without gradients, fn(inputs) as it is.
std::vector<Var> Checkpoint(const CheckpointFn& fn, const std::vector<Var>& inputs);

}  // namespace fg::ag
