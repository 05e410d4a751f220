#include "flexgraph/nn/optim.h"

#include <cmath>

#include "flexgraph/base/logging.h"
#include "flexgraph/ops/kernels.h"

namespace fg::nn {

Optimizer::Optimizer(OptimizerKind kind, std::vector<NamedParameter> params,
                     OptimizerOptions options)
    : kind_(kind), params_(std::move(params)), options_(options) {
  for (const auto& p : params_) {
    const Device device = p.var.value().device();
    m_.push_back(Tensor::Zeros(p.var.shape(), DType::kFloat32, device));
    v_.push_back(kind_ == OptimizerKind::kSgd
                     ? Tensor()
                     : Tensor::Zeros(p.var.shape(), DType::kFloat32, device));
  }
}

void Optimizer::ZeroGrad() {
  for (auto& p : params_) p.var.ZeroGrad();
}

void Optimizer::Step() {
  ++step_;
  const OptimizerOptions& o = options_;
  ops::OptimizerStepArgs args{
      .kind = kind_ == OptimizerKind::kSgd ? 0 : kind_ == OptimizerKind::kAdam ? 1 : 2,
      .lr = o.lr, .weight_decay = o.weight_decay, .momentum = o.momentum, .beta1 = o.beta1,
      .beta2 = o.beta2, .eps = o.eps,
      .bc1 = 1.0f - std::pow(o.beta1, static_cast<float>(step_)),
      .bc2 = 1.0f - std::pow(o.beta2, static_cast<float>(step_))};
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& w = params_[i].var.mutable_value();
    const Tensor& g = params_[i].var.grad();
    FG_CHECK((!g.defined() || g.device() == w.device()) && m_[i].device() == w.device())
        << "optimizer: parameter " << params_[i].name << " on " << DeviceName(w.device())
        << ", its gradient or state elsewhere (place parameters before making the optimizer)";
    FG_DISPATCH(w.device(), OptimizerStep, args, w.f32(), g.defined() ? g.f32() : nullptr,
                m_[i].f32(), v_[i].defined() ? v_[i].f32() : nullptr, w.numel());
  }
}

bool ParseLrSchedule(const std::string& name, LrSchedule* out) {
  if (name == "constant") {
    *out = LrSchedule::kConstant;
  } else if (name == "cosine") {
    *out = LrSchedule::kCosine;
  } else {
    return false;
  }
  return true;
}

float ScheduledLr(LrSchedule schedule, float base, int epoch, int epochs, int warmup) {
  FG_CHECK(epoch >= 0 && epoch < epochs && warmup >= 0) << "ScheduledLr: epoch " << epoch << " of " << epochs;
  if (schedule == LrSchedule::kConstant) return base;
  if (epoch < warmup) return base * static_cast<float>(epoch + 1) / static_cast<float>(warmup + 1);
  constexpr double kFloor = 0.01;  // the last epoch's rate, relative to the base
  const int span = epochs - 1 - warmup;
  const double t = span <= 0 ? 0.0 : static_cast<double>(epoch - warmup) / span;
  return static_cast<float>(base * (kFloor + (1 - kFloor) * 0.5 * (1 + std::cos(M_PI * t))));
}

}  // namespace fg::nn
