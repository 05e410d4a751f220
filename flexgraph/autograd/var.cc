#include "flexgraph/autograd/var.h"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <unordered_set>

#include "flexgraph/base/logging.h"
#include "flexgraph/ops/instances.h"
#include "flexgraph/ops/ops.h"

namespace fg::ag {
namespace {
thread_local bool t_grad_enabled = true;
std::atomic<uint64_t> g_seq{0};
}  // namespace

Var::Var(Tensor value, bool requires_grad) : node_(std::make_shared<Node>()) {
  node_->value = std::move(value);
  node_->shape = node_->value.shape();
  node_->handles = 1;
  node_->requires_grad = requires_grad;
  node_->seq = g_seq.fetch_add(1, std::memory_order_relaxed);
}

Var Var::FromNode(std::shared_ptr<Node> node) {
  FG_CHECK(node != nullptr && node->value.defined()) << "Var::FromNode: no value";
  Var v;
  v.node_ = std::move(node);
  v.Retain();
  return v;
}

Var& Var::operator=(const Var& other) {
  if (node_ != other.node_) {
    Release();
    node_ = other.node_;
    Retain();
  }
  return *this;
}

Var& Var::operator=(Var&& other) noexcept {
  if (this != &other) {
    Release();
    node_ = std::move(other.node_);
  }
  return *this;
}

NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }
bool GradEnabled() { return t_grad_enabled; }
EnableGradGuard::EnableGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = true; }
EnableGradGuard::~EnableGradGuard() { t_grad_enabled = previous_; }

Var MakeResult(Tensor value, const char* op, std::vector<Var> inputs,
               std::function<void(const Tensor&)> backward) {
  bool needs = false;
  if (t_grad_enabled) {
    for (const Var& v : inputs) needs = needs || v.requires_grad();
  }
  Var out(std::move(value), needs);
  out.node()->op = op;
  if (needs) {
    for (Var& v : inputs) {
      if (v.requires_grad()) out.node()->inputs.push_back(v.node());
    }
    out.node()->backward = std::move(backward);
  }
  return out;
}

namespace {
// Makes n.grad a tensor n alone may write: kept when no other tensor holds its storage any more
// (the op that made it has let go), copied otherwise.
void TakeOwnership(Node& n) {
  if (n.grad_owned) return;
  if (!n.grad.sole_owner()) n.grad = n.grad.Clone();
  n.grad_owned = true;
}
}  // namespace

void AccumulateGrad(const Var& v, const Tensor& g, const char* op) {
  AccumulateGrad(GradRef(v), g, op);
}

void AccumulateGrad(const GradRef& v, const Tensor& g, const char* op) {
  if (!v.requires_grad()) return;
  Node& n = *v.node();
  int64_t numel = 1;
  for (int64_t d : n.shape) numel *= d;
  FG_CHECK(g.numel() == numel) << op << ": gradient shape " << g.ShapeString()
                               << " does not match input shape " << ShapeToString(n.shape);
  if (!n.grad.defined()) {
    // The first gradient is kept without a copy; it is copied only if another one is added.
    n.grad = g.shape() == n.shape ? g : g.Reshape(n.shape);
    n.grad_owned = false;
  } else {
    TakeOwnership(n);
    ops::AddInPlace(&n.grad, g);
  }
}

void Var::Backward() const {
  FG_CHECK(node_->value.numel() == 1)
      << "Backward() without a seed needs a scalar, got " << node_->value.ShapeString();
  Backward(Tensor::Full(node_->value.shape(), 1.0f).To(node_->value.device()));
}

void Var::Backward(const Tensor& seed) const { ag::Backward({*this}, {seed}); }

void Backward(const std::vector<Var>& roots, const std::vector<Tensor>& seeds) {
  FG_CHECK(roots.size() == seeds.size()) << "Backward: " << roots.size() << " roots, " << seeds.size()
                                         << " seeds";
  // Collect the reachable graph (owning references: releasing closures below may drop the last
  // other reference to a node), then run closures in reverse creation order.
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_set<Node*> seen;
  std::vector<std::shared_ptr<Node>> stack;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Var& r = roots[i];
    FG_CHECK(seeds[i].numel() == r.value().numel())
        << "Backward: seed " << seeds[i].ShapeString() << " for value " << r.value().ShapeString();
    if (r.requires_grad()) stack.push_back(r.node());
  }
  if (stack.empty()) return;
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(n.get()).second) continue;
    for (const auto& in : n->inputs) {
      if (in->requires_grad) stack.push_back(in);
    }
    order.push_back(std::move(n));
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a->seq > b->seq; });
  for (size_t i = 0; i < roots.size(); ++i) {
    if (roots[i].requires_grad()) AccumulateGrad(roots[i], seeds[i], "Backward");
  }
  // In reverse creation order a node's gradient is complete when it is reached (its consumers
  // came later): after its closure has run, its gradient and the closure's saved tensors are
  // released at once, so intermediate gradients do not pile up over the pass.
  for (const auto& n : order) {
    if (!n->backward) continue;
    if (n->grad.defined()) n->backward(n->grad);
    n->backward = nullptr;
    n->grad = Tensor();
    n->inputs.clear();
  }
  // Leaves keep their gradients, as tensors of their own (callers such as all-reduce write into
  // them).
  for (const auto& n : order) {
    if (n->grad.defined()) TakeOwnership(*n);
  }
}

void AccumulateGradRows(const GradRef& v, const Tensor& idx, const Tensor& g, const char* op) {
  if (!v.requires_grad()) return;
  Node& n = *v.node();
  if (!n.grad.defined()) {
    n.grad = Tensor::Zeros(n.shape, DType::kFloat32, g.device());
    n.grad_owned = true;
  } else {
    TakeOwnership(n);
  }
  FG_CHECK(g.row_width() == v.row_width()) << op << ": gradient rows " << g.ShapeString()
                                           << " for input " << ShapeToString(n.shape);
  ops::AddRowsInPlace(&n.grad, idx, g);
}

void AccumulateGradRowRange(const GradRef& v, int64_t first, const Tensor& g, const char* op) {
  if (!v.requires_grad()) return;
  std::vector<int32_t> rows(g.rows());
  std::iota(rows.begin(), rows.end(), static_cast<int32_t>(first));
  AccumulateGradRows(v, Tensor::FromVector(rows).To(g.device()), g, op);
}

Tensor& Var::OwnedGrad() const {
  Node& n = *node_;
  if (!n.grad.defined()) {
    n.grad = Tensor::Zeros(n.shape, DType::kFloat32, n.value.device());
    n.grad_owned = true;
  } else {
    TakeOwnership(n);
  }
  return n.grad;
}

void Var::ZeroGrad() const {
  if (node_) node_->grad = Tensor();
}

}  // namespace fg::ag
