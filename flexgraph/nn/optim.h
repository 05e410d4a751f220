// Optimizers over a list of named parameters: SGD (momentum), Adam (L2 weight decay added to the
// gradient, as torch.optim.Adam) and AdamW (decoupled weight decay). State is exportable for
// checkpoints. Thread-compatible.
//
//   nn::Adam opt(model.parameters(), {.lr = 0.01f, .weight_decay = 5e-4f});
//   loss.Backward(); opt.Step(); opt.ZeroGrad();
#pragma once

#include <string>
#include <vector>

#include "flexgraph/nn/module.h"

namespace fg::nn {

struct OptimizerOptions {
  float lr = 0.01f;
  float weight_decay = 0.0f;
  float momentum = 0.0f;  // SGD
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;  // Adam
};

enum class OptimizerKind { kSgd, kAdam, kAdamW };

class Optimizer {
 public:
  Optimizer(OptimizerKind kind, std::vector<NamedParameter> params, OptimizerOptions options);
  // Applies one update from the parameters' current gradients (missing gradients count as zero).
  void Step();
  void ZeroGrad();
  int64_t step_count() const { return step_; }
  const std::vector<NamedParameter>& params() const { return params_; }
  // State tensors (per parameter: first and second moments / momentum), for checkpoints.
  std::vector<Tensor>& first_moments() { return m_; }
  std::vector<Tensor>& second_moments() { return v_; }
  void set_step_count(int64_t s) { step_ = s; }
  OptimizerOptions& options() { return options_; }

 private:
  OptimizerKind kind_;
  std::vector<NamedParameter> params_;
  OptimizerOptions options_;
  std::vector<Tensor> m_, v_;
  int64_t step_ = 0;
};

// A learning rate per epoch. kConstant: the base rate throughout. kCosine: rises linearly over the
// first `warmup` epochs (epoch e < warmup: base * (e + 1) / (warmup + 1)), then follows half a cosine
// from the base rate down to base / 100 at the last epoch. A function of the epoch alone, so that a
// resumed run and every worker of a distributed one agree on it.
enum class LrSchedule { kConstant, kCosine };

bool ParseLrSchedule(const std::string& name, LrSchedule* out);
// Requires 0 <= epoch < epochs and warmup >= 0.
float ScheduledLr(LrSchedule schedule, float base, int epoch, int epochs, int warmup);

}  // namespace fg::nn
