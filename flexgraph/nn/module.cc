#include "flexgraph/nn/module.h"

#include <cmath>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/rng.h"

namespace fg::nn {

Tensor Initialize(const Shape& shape, Init init, uint64_t seed, uint64_t stream, float scale) {
  Tensor t = Tensor::Empty(shape);
  const int64_t fan_in = shape.size() >= 2 ? shape[shape.size() - 2] : shape[0];
  const int64_t fan_out = shape.back();
  RandomStream rng(seed, MixKey(stream, 0x1A17));
  float* p = t.f32();
  switch (init) {
    case Init::kZeros:
      t.SetZero();
      break;
    case Init::kGlorot: {
      const float a = scale * std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = (2.0f * rng.Uniform() - 1.0f) * a;
      break;
    }
    case Init::kKaiming: {
      const float a = scale * std::sqrt(6.0f / static_cast<float>(fan_in));
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = (2.0f * rng.Uniform() - 1.0f) * a;
      break;
    }
    case Init::kNormal:
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = scale * rng.Normal();
      break;
  }
  return t;
}

int64_t Module::NumParameterElements() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.var.value().numel();
  return n;
}

ag::Var Module::AddParameter(const std::string& name, Tensor value) {
  ag::Var v = ag::Var::Parameter(std::move(value));
  params_.push_back({name, v});
  return v;
}

void Module::AddChild(const std::string& prefix, const Module& child) {
  for (const auto& p : child.parameters()) params_.push_back({prefix.empty() ? p.name : prefix + "." + p.name, p.var});
}

Linear::Linear(int64_t in, int64_t out, bool bias, Init init, uint64_t seed, uint64_t stream)
    : in_(in), out_(out) {
  FG_CHECK(in > 0 && out > 0) << "Linear: sizes must be positive, got " << in << "x" << out;
  weight_ = AddParameter("weight", Initialize({in, out}, init, seed, stream));
  if (bias) bias_ = AddParameter("bias", Tensor::Zeros({out}));
}

ag::Var Linear::Rows(const ag::Var& x) const {
  FG_CHECK(x.row_width() == in_) << "Linear: input " << x.value().ShapeString() << " for a " << in_
                                 << "x" << out_ << " layer";
  return x.value().rank() == 2 ? x : ag::Reshape(x, {x.rows(), in_});
}

ag::Var Linear::Forward(const ag::Var& x) const {
  ag::Var y = ag::MatMul(Rows(x), weight_);
  return bias_.defined() ? ag::AddBias(y, bias_) : y;
}

ag::Var Linear::ForwardRelu(const ag::Var& x) const {
  return bias_.defined() ? ag::LinearBiasRelu(Rows(x), weight_, bias_)
                         : ag::Relu(ag::MatMul(Rows(x), weight_));
}

Embedding::Embedding(int64_t count, int64_t dim, uint64_t seed, uint64_t stream) {
  table_ = AddParameter("table", Initialize({count, dim}, Init::kGlorot, seed, stream));
}

ag::Var Embedding::Forward(const Tensor& idx) const { return ag::GatherRows(table_, idx); }

}  // namespace fg::nn
