// A two-layer GCN trained over process grids of in-process workers (2D 2 x 2 and 3 x 3; 1.5D with
// c = 2 at P = 4 and 8; sparsity-aware and oblivious) against one process's training of the same
// model (a reference loop here: the same normalised adjacency, initial weights and steps on the
// whole graph): every epoch's loss equals the reference's within 1e-4 relative, and falls.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/graph/dataset.h"
#include "runtime/grid/grid_gcn.h"

namespace fg::grid {
namespace {

constexpr int kEpochs = 6;
constexpr float kLr = 0.5f;

Tensor RandomWeights(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, std::sqrt(2.0f / static_cast<float>(rows + cols)));
  Tensor t = Tensor::Empty({rows, cols});
  for (int64_t k = 0; k < rows * cols; ++k) t.f32()[k] = normal(rng);
  return t;
}

GcnProblem Problem() {
  auto ds = graph::LoadDataset("sbm:nodes=300,classes=4,features=12,avg_degree=6,seed=3", {});
  EXPECT_TRUE(ds.ok()) << ds.status();
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
std::vector<double> Reference(const GcnProblem& p) {
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

void ExpectGridTrainingMatches(int parts, const GridGcnOptions& options, const GcnProblem& p,
                               const std::vector<double>& want) {
  auto world = runtime::MakeInProcessGroup(parts);
  std::vector<absl::StatusOr<std::vector<double>>> got(parts, std::vector<double>{});
  std::vector<std::thread> threads;
  for (int r = 0; r < parts; ++r) {
    threads.emplace_back([&, r] {
      world[r]->set_timeout(std::chrono::seconds(60));
      got[r] = TrainGridGcn(*world[r], p, options);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < parts; ++r) {
    ASSERT_TRUE(got[r].ok()) << "worker " << r << ": " << got[r].status();
    ASSERT_EQ(got[r]->size(), want.size());
    for (size_t e = 0; e < want.size(); ++e) {
      EXPECT_NEAR((*got[r])[e], want[e], 1e-4 * std::fabs(want[e])) << "worker " << r << " epoch " << e;
    }
  }
}

TEST(GridGcn, TwoDLossesEqualOneProcess) {
  const GcnProblem p = Problem();
  const std::vector<double> want = Reference(p);
  EXPECT_LT(want.back(), want.front());  // it trains
  for (bool aware : {false, true}) {
    GridGcnOptions o;
    o.scheme = GridScheme::kTwoD;
    o.aware = aware;
    o.epochs = kEpochs;
    o.lr = kLr;
    o.pr = o.pc = 2;
    ExpectGridTrainingMatches(4, o, p, want);
    o.pr = o.pc = 3;
    ExpectGridTrainingMatches(9, o, p, want);
  }
}

TEST(GridGcn, OnePointFiveDLossesEqualOneProcess) {
  const GcnProblem p = Problem();
  const std::vector<double> want = Reference(p);
  for (bool aware : {false, true}) {
    GridGcnOptions o;
    o.scheme = GridScheme::kOnePointFiveD;
    o.aware = aware;
    o.epochs = kEpochs;
    o.lr = kLr;
    o.c = 2;
    ExpectGridTrainingMatches(4, o, p, want);
    ExpectGridTrainingMatches(8, o, p, want);
  }
}

TEST(GridGcn, AGridThatDoesNotCoverTheRunIsAClearError) {
  const GcnProblem p = Problem();
  auto world = runtime::MakeInProcessGroup(1);
  GridGcnOptions o;
  o.pr = 2, o.pc = 2;
  auto got = TrainGridGcn(*world[0], p, o);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("2 x 2 does not cover the run's 1 workers"), std::string::npos) << got.status();
}

}  // namespace
}  // namespace fg::grid
