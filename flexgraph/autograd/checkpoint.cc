#include "flexgraph/autograd/checkpoint.h"

#include <memory>

#include "flexgraph/base/logging.h"

namespace fg::ag {
namespace {

// Leaves sharing `inputs`' values, requiring gradients where the inputs do.
std::vector<Var> Leaves(const std::vector<Var>& inputs) {
  std::vector<Var> leaves;
  leaves.reserve(inputs.size());
  for (const Var& v : inputs) {
    leaves.push_back(v.defined() ? Var(v.value(), v.requires_grad()) : Var());
  }
  return leaves;
}

// What the outputs' backward closures hand to the piece's backward.
struct Pending {
  std::vector<Tensor> grads;  // per output; undefined: no gradient arrived
};

}  // namespace

std::vector<Var> Checkpoint(const CheckpointFn& fn, const std::vector<Var>& inputs) {
  if (!GradEnabled()) return fn(inputs);
  std::vector<Var> outs;
  std::vector<bool> needs;
  bool any = false;
  {
    // Recorded on leaves, so that the graph (and every intermediate it saved) goes with `outs`.
    std::vector<Var> recorded = fn(Leaves(inputs));
    for (Var& r : recorded) {
      const bool n = r.requires_grad();
      needs.push_back(n);
      any = any || n;
      outs.push_back(r.defined() ? Var(r.value()) : Var());
    }
  }
  if (!any) return outs;
  // The piece's node: its closure runs once the outputs' closures (created after it, so run before
  // it) have handed over their gradients.
  std::vector<Tensor> saved;
  std::vector<GradRef> refs;
  std::vector<std::shared_ptr<Node>> graph_inputs;
  for (const Var& v : inputs) {
    saved.push_back(v.defined() ? v.value() : Tensor());
    refs.push_back(v.defined() ? GradRef(v) : GradRef());
    if (v.requires_grad()) graph_inputs.push_back(v.node());
  }
  auto pending = std::make_shared<Pending>();
  pending->grads.resize(outs.size());
  Var piece(Tensor::Zeros({1}), true);
  piece.node()->op = "Checkpoint";
  piece.node()->inputs = std::move(graph_inputs);
  piece.node()->backward = [fn, saved, refs, pending](const Tensor&) {
    EnableGradGuard record;
    std::vector<Var> leaves;
    for (size_t i = 0; i < saved.size(); ++i) {
      leaves.push_back(saved[i].defined() ? Var(saved[i], refs[i].requires_grad()) : Var());
    }
    std::vector<Var> again = fn(leaves);
    FG_CHECK(again.size() == pending->grads.size())
        << "Checkpoint: the recomputation returned " << again.size() << " outputs, not "
        << pending->grads.size();
    std::vector<Var> roots;
    std::vector<Tensor> seeds;
    for (size_t i = 0; i < again.size(); ++i) {
      if (!pending->grads[i].defined()) continue;
      FG_CHECK(again[i].requires_grad()) << "Checkpoint: output " << i
                                         << " needs no gradient when recomputed";
      roots.push_back(again[i]);
      seeds.push_back(pending->grads[i]);
    }
    pending->grads.clear();
    again.clear();
    Backward(roots, seeds);
    roots.clear();
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (refs[i].requires_grad() && leaves[i].grad().defined()) {
        AccumulateGrad(refs[i], leaves[i].grad(), "Checkpoint");
      }
    }
  };
  const GradRef piece_ref(piece);
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!needs[i]) continue;
    Var o(outs[i].value(), true);
    o.node()->op = "CheckpointOutput";
    o.node()->inputs = {piece.node()};
    o.node()->backward = [pending, piece_ref, i](const Tensor& g) {
      pending->grads[i] = g;
      AccumulateGrad(piece_ref, Tensor::Zeros({1}), "Checkpoint");
    };
    outs[i] = std::move(o);
  }
  return outs;
}

}  // namespace fg::ag
