// Neural-network building blocks: parameters with names, Linear, Embedding and seeded initialisers.
// A Module owns named parameters; models collect them for optimizers, checkpoints and all-reduce.
// Thread-compatible.
//
//   nn::Linear fc(in, out, /*bias=*/true, nn::Init::kGlorot, seed);
//   ag::Var y = fc.Forward(x);
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flexgraph/autograd/var.h"

namespace fg::nn {

enum class Init { kGlorot, kKaiming, kZeros, kNormal };

// Fills a [fan_in, fan_out] (or any) tensor from a Philox stream keyed by (seed, stream).
// Glorot uniform: U(-a, a), a = sqrt(6 / (fan_in + fan_out)); Kaiming uniform (ReLU gain):
// a = sqrt(6 / fan_in); Normal: N(0, 0.1^2) ... scaled by `scale`.
Tensor Initialize(const Shape& shape, Init init, uint64_t seed, uint64_t stream,
                  float scale = 1.0f);

struct NamedParameter {
  std::string name;
  ag::Var var;
};

class Module {
 public:
  virtual ~Module() = default;
  // Parameters of this module and its children, in a stable order.
  const std::vector<NamedParameter>& parameters() const { return params_; }
  int64_t NumParameterElements() const;

 protected:
  ag::Var AddParameter(const std::string& name, Tensor value);
  // Adopts a child's parameters under `prefix.` (under their own names when prefix is empty).
  void AddChild(const std::string& prefix, const Module& child);

 private:
  std::vector<NamedParameter> params_;
};

// y = x W + b with W [in, out].
class Linear : public Module {
 public:
  Linear() = default;
  Linear(int64_t in, int64_t out, bool bias, Init init, uint64_t seed, uint64_t stream = 0);
  ag::Var Forward(const ag::Var& x) const;
  // ReLU(x W + b), the bias and ReLU in the product's epilogue (ag::LinearBiasRelu).
  ag::Var ForwardRelu(const ag::Var& x) const;
  const ag::Var& weight() const { return weight_; }
  const ag::Var& bias() const { return bias_; }
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }

 private:
  // x as [rows, in] (checked).
  ag::Var Rows(const ag::Var& x) const;
  int64_t in_ = 0, out_ = 0;
  ag::Var weight_, bias_;
};

// A table of `count` learnable rows of width `dim`.
class Embedding : public Module {
 public:
  Embedding() = default;
  Embedding(int64_t count, int64_t dim, uint64_t seed, uint64_t stream = 0);
  // Rows idx (int32) of the table.
  ag::Var Forward(const Tensor& idx) const;
  const ag::Var& table() const { return table_; }

 private:
  ag::Var table_;
};

}  // namespace fg::nn
