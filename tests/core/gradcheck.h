// Test helper: compares autograd gradients with central finite differences (in double-checked
// float32), and builds random inputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/rng.h"

namespace fg::testing {

inline Tensor RandomTensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t = Tensor::Empty(shape);
  RandomStream rng(seed, 7);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = lo + (hi - lo) * rng.Uniform();
  return t;
}

// A [rows, size / rows] float tensor of the values, row by row.
inline Tensor Rows(std::vector<float> values, int64_t rows) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Tensor::FromVector(values, {rows, n / rows});
}

// f maps the inputs to any tensor; the checked scalar is sum(f(x) * R) for a fixed random R.
// Each input element is perturbed by +-eps; relative error bound `tol`.
inline void ExpectGradientsMatch(const std::function<ag::Var(const std::vector<ag::Var>&)>& f,
                                 std::vector<Tensor> inputs, float eps = 1e-2f,
                                 float tol = 2e-2f) {
  std::vector<ag::Var> vars;
  for (auto& t : inputs) vars.push_back(ag::Var::Parameter(t.Clone()));
  ag::Var out = f(vars);
  Tensor r = RandomTensor(out.shape(), 99, 0.5f, 1.5f);
  ag::Var loss = ag::Sum(ag::Mul(out, ag::Var(r)));
  loss.Backward();
  auto eval = [&](const std::vector<Tensor>& xs) {
    ag::NoGradGuard guard;
    std::vector<ag::Var> vs;
    for (auto& t : xs) vs.push_back(ag::Var(t));
    Tensor o = f(vs).value();
    double s = 0.0;
    for (int64_t i = 0; i < o.numel(); ++i) s += static_cast<double>(o.f32()[i]) * r.f32()[i];
    return s;
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& g = vars[k].grad();
    for (int64_t i = 0; i < inputs[k].numel(); ++i) {
      std::vector<Tensor> plus, minus;
      for (auto& t : inputs) {
        plus.push_back(t.Clone());
        minus.push_back(t.Clone());
      }
      plus[k].f32()[i] += eps;
      minus[k].f32()[i] -= eps;
      const double numeric = (eval(plus) - eval(minus)) / (2.0 * eps);
      const double analytic = g.defined() ? g.f32()[i] : 0.0;
      const double scale = std::max(1.0, std::fabs(numeric));
      EXPECT_NEAR(analytic, numeric, tol * scale) << "input " << k << " element " << i;
    }
  }
}

}  // namespace fg::testing
