#include "flexgraph/nn/optim.h"

#include <cmath>

#include "flexgraph/base/parallel.h"

namespace fg::nn {

Optimizer::Optimizer(OptimizerKind kind, std::vector<NamedParameter> params,
                     OptimizerOptions options)
    : kind_(kind), params_(std::move(params)), options_(options) {
  for (const auto& p : params_) {
    m_.push_back(Tensor::Zeros(p.var.shape()));
    v_.push_back(kind_ == OptimizerKind::kSgd ? Tensor() : Tensor::Zeros(p.var.shape()));
  }
}

void Optimizer::ZeroGrad() {
  for (auto& p : params_) p.var.ZeroGrad();
}

void Optimizer::Step() {
  ++step_;
  const OptimizerOptions& o = options_;
  const float bc1 = 1.0f - std::pow(o.beta1, static_cast<float>(step_));
  const float bc2 = 1.0f - std::pow(o.beta2, static_cast<float>(step_));
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& w = params_[i].var.mutable_value();
    const Tensor& g = params_[i].var.grad();
    float* wp = w.f32();
    const float* gp = g.defined() ? g.f32() : nullptr;
    float* m = m_[i].f32();
    float* v = v_[i].defined() ? v_[i].f32() : nullptr;
    const int64_t n = w.numel();
    ParallelFor(0, (n + 4095) / 4096, [&](int64_t c) {
      const int64_t hi = std::min<int64_t>(n, (c + 1) * 4096);
      for (int64_t j = c * 4096; j < hi; ++j) {
        float gj = gp ? gp[j] : 0.0f;
        switch (kind_) {
          case OptimizerKind::kSgd:
            gj += o.weight_decay * wp[j];
            m[j] = o.momentum * m[j] + gj;
            wp[j] -= o.lr * (o.momentum > 0.0f ? m[j] : gj);
            break;
          case OptimizerKind::kAdam:
          case OptimizerKind::kAdamW: {
            if (kind_ == OptimizerKind::kAdam) gj += o.weight_decay * wp[j];
            m[j] = o.beta1 * m[j] + (1.0f - o.beta1) * gj;
            v[j] = o.beta2 * v[j] + (1.0f - o.beta2) * gj * gj;
            const float mhat = m[j] / bc1;
            const float denom = std::sqrt(v[j] / bc2) + o.eps;
            if (kind_ == OptimizerKind::kAdamW) wp[j] -= o.lr * o.weight_decay * wp[j];
            wp[j] -= o.lr * mhat / denom;
            break;
          }
        }
      }
    });
  }
}

}  // namespace fg::nn
