// The GCN problem of the grid training tests (an SBM graph, its GCN-normalised adjacency, seeded
// initial weights) and one process's training of it: the reference the grid runs must match.
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/graph/dataset.h"
#include "runtime/grid/grid_gcn.h"

namespace fg::grid::testing {

inline constexpr int kEpochs = 6;
inline constexpr float kLr = 0.5f;

inline Tensor RandomWeights(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, std::sqrt(2.0f / static_cast<float>(rows + cols)));
  Tensor t = Tensor::Empty({rows, cols});
  for (int64_t k = 0; k < rows * cols; ++k) t.f32()[k] = normal(rng);
  return t;
}

inline GcnProblem Problem() {
  auto ds = graph::LoadDataset("sbm:nodes=300,classes=4,features=12,avg_degree=6,seed=3", {});
  FG_CHECK(ds.ok()) << ds.status();
  const std::string type = ds->LabeledType();
  GcnProblem p;
  p.a = GcnNormalized(ds->Adjacency());
  p.features = ds->features.at(type);
  p.labels = ds->labels.at(type);
  p.train = ds->splits.at(type).train;
  p.w1 = RandomWeights(p.features.row_width(), 8, 1);
  p.w2 = RandomWeights(8, 4, 2);
  return p;
}

// One process: the same model and steps on the whole graph.
inline std::vector<double> Reference(const GcnProblem& p) {
  auto a = std::make_shared<const SparseMatrix>(p.a);
  ag::Var w1 = ag::Var::Parameter(p.w1.Clone()), w2 = ag::Var::Parameter(p.w2.Clone());
  const ag::Var x(p.features);
  std::vector<int32_t> rows;
  for (int64_t t = 0; t < p.train.numel(); ++t) rows.push_back(static_cast<int32_t>(p.train.i64()[t]));
  const Tensor rows_t = Tensor::FromVector(rows);
  std::vector<double> losses;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    w1.ZeroGrad();
    w2.ZeroGrad();
    ag::Var h1 = ag::Relu(ag::MatMul(ag::Spmm(a, x, ops::SpmmReduce::kSum), w1));
    ag::Var logits = ag::MatMul(ag::Spmm(a, h1, ops::SpmmReduce::kSum), w2);
    ag::Var loss = ag::NllLoss(ag::LogSoftmax(logits), p.labels, rows_t);
    losses.push_back(loss.value().f32()[0]);
    loss.Backward();
    for (int64_t k = 0; k < p.w1.numel(); ++k) w1.mutable_value().f32()[k] -= kLr * w1.grad().f32()[k];
    for (int64_t k = 0; k < p.w2.numel(); ++k) w2.mutable_value().f32()[k] -= kLr * w2.grad().f32()[k];
  }
  return losses;
}

}  // namespace fg::grid::testing
