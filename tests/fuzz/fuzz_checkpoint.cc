// libFuzzer target: checkpoint files. Any input is restored into a two-parameter Adam state or
// refused with a Status; a refused input leaves the parameters untouched.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/train/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using fg::Tensor;
  fg::ag::Var w = fg::ag::Var::Parameter(Tensor::Full({2, 2}, 1.0f));
  fg::ag::Var b = fg::ag::Var::Parameter(Tensor::Full({2}, 1.0f));
  fg::nn::Optimizer opt(fg::nn::OptimizerKind::kAdam, {{"layer0.w", w}, {"layer0.b", b}}, {});
  flexgraph::RunConfig config;
  config.mutable_model()->set_name("gcn");
  fg::runtime::TrainResult progress;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto epochs = fg::runtime::DecodeCheckpoint(bytes, "fuzz.ckpt", fg::runtime::IdentityOf(config, 1),
                                              opt, &progress);
  if (!epochs.ok() && w.value().f32()[0] != 1.0f) __builtin_trap();
  if (epochs.ok() && static_cast<size_t>(*epochs) != progress.losses.size()) __builtin_trap();
  return 0;
}
