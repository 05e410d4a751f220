// Reverse-mode automatic differentiation. A Var is a handle to a node holding a value tensor, its
// gradient and, for results of differentiable functions, a backward closure and its inputs. Nodes are
// numbered in creation order (the tape); Backward() runs closures in reverse tape order over the
// nodes reachable from the root, accumulating gradients into leaves (parameters) across calls until
// ZeroGrad(). Thread-compatible: build and differentiate one graph per thread.
//
// Memory: a result's value lives while some Var handle to it does. Backward closures refer to their
// inputs through GradRef, which does not keep values alive, and capture the tensors they need
// explicitly; so an intermediate result that no backward needs is freed as soon as the forward
// code drops its last Var (as PyTorch frees unsaved activations).
//
//   Var w = Var::Parameter(Tensor::Zeros({16, 7}));
//   Var loss = ag::NllLoss(ag::LogSoftmax(ag::MatMul(x, w)), labels, train_rows);
//   loss.Backward();            // w.grad() now holds dloss/dw
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "flexgraph/tensor/tensor.h"

namespace fg::ag {

struct Node {
  // Released (undefined) once a result node (one with a backward closure) has no Var handles.
  Tensor value;
  Shape shape;      // value's shape, kept after a release
  int handles = 0;  // live Var handles
  Tensor grad;  // undefined until a gradient arrives
  bool grad_owned = false;  // false: `grad` may alias a tensor held elsewhere (copy on write)
  bool requires_grad = false;
  const char* op = "leaf";
  uint64_t seq = 0;
  std::vector<std::shared_ptr<Node>> inputs;
  // Reads `grad` of this node and accumulates into inputs' gradients.
  std::function<void(const Tensor& grad_out)> backward;
};

class Var {
 public:
  Var() = default;
  explicit Var(Tensor value, bool requires_grad = false);
  Var(const Var& other) : node_(other.node_) { Retain(); }
  Var(Var&& other) noexcept : node_(std::move(other.node_)) {}
  Var& operator=(const Var& other);
  Var& operator=(Var&& other) noexcept;
  ~Var() { Release(); }
  // A trainable leaf.
  static Var Parameter(Tensor value) { return Var(std::move(value), true); }

  bool defined() const { return node_ != nullptr; }
  const Tensor& value() const { return node_->value; }
  const Tensor& grad() const { return node_->grad; }
  bool requires_grad() const { return node_ && node_->requires_grad; }
  const Shape& shape() const { return node_->value.shape(); }
  int64_t dim(int i) const { return node_->value.dim(i); }
  int64_t rows() const { return node_->value.rows(); }
  int64_t row_width() const { return node_->value.row_width(); }
  const char* op() const { return node_->op; }

  // Differentiates this scalar (seed 1) or, with `seed`, a tensor of the same shape. Each node's
  // gradient and closure (with the tensors it saved) are released as soon as the closure has run;
  // only leaves keep gradients.
  void Backward() const;
  void Backward(const Tensor& seed) const;
  // Drops the accumulated gradient.
  void ZeroGrad() const;
  // Replaces the value in place (optimizers, checkpoints); keeps the node identity and must keep
  // the shape (gradients are checked against the shape recorded at creation).
  Tensor& mutable_value() const { return node_->value; }
  Tensor& mutable_grad() const { return node_->grad; }
  // The gradient as a tensor this node owns, for writing in place (zeros when none yet).
  Tensor& OwnedGrad() const;
  const std::shared_ptr<Node>& node() const { return node_; }
  // A new handle to an existing node (whose value must still be defined).
  static Var FromNode(std::shared_ptr<Node> node);

 private:
  void Retain() {
    if (node_) ++node_->handles;
  }
  // Drops this handle; the last handle of a result node releases its value.
  void Release() {
    if (node_ && --node_->handles == 0 && node_->backward) node_->value = Tensor();
  }
  std::shared_ptr<Node> node_;
};

// A node reference for backward closures: gradients and shape, but not the value (see above).
// Capture `x = GradRef(x)` and, where the backward reads it, the value tensor itself.
class GradRef {
 public:
  GradRef() = default;
  explicit GradRef(const Var& v) : node_(v.node()) {}
  bool defined() const { return node_ != nullptr; }
  bool requires_grad() const { return node_ && node_->requires_grad; }
  const Shape& shape() const { return node_->shape; }
  int64_t rows() const { return node_->shape.empty() ? 1 : node_->shape[0]; }
  int64_t row_width() const {
    int64_t w = 1;
    for (size_t i = 1; i < node_->shape.size(); ++i) w *= node_->shape[i];
    return w;
  }
  const std::shared_ptr<Node>& node() const { return node_; }

 private:
  std::shared_ptr<Node> node_;
};

// While alive, functions on this thread record no graph (evaluation).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};
bool GradEnabled();
// While alive, functions on this thread record a graph again (inside a NoGradGuard's scope).
class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

// Differentiates several results at once: roots[i] seeded with seeds[i] (same element count), in
// one pass over the union of their graphs (Var::Backward with one root is the special case).
void Backward(const std::vector<Var>& roots, const std::vector<Tensor>& seeds);

// For implementing differentiable functions: wraps `value` as the result of `op` on `inputs`. When
// gradients are enabled and some input requires them, `backward(grad_out)` is recorded and must call
// AccumulateGrad on the inputs that require gradients.
Var MakeResult(Tensor value, const char* op, std::vector<Var> inputs,
               std::function<void(const Tensor& grad_out)> backward);
// Adds g to v's gradient (allocating it on first use). Checks shapes, naming the op.
void AccumulateGrad(const Var& v, const Tensor& g, const char* op);
void AccumulateGrad(const GradRef& v, const Tensor& g, const char* op);
// Adds the rows of g to rows idx (distinct, int32) of v's gradient, in place (allocating a zero
// gradient on first use): many small row sets of a large input cost one gradient, not one each.
void AccumulateGradRows(const GradRef& v, const Tensor& idx, const Tensor& g, const char* op);
// The same for rows [first, first + g.rows()) of v.
void AccumulateGradRowRange(const GradRef& v, int64_t first, const Tensor& g, const char* op);

}  // namespace fg::ag
