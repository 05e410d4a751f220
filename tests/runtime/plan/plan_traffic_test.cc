// The 1D model's bytes against the bytes a real run counts: P in-process workers train on an RMAT
// graph under a hash partition, and every worker's counted feature, partial, gradient and
// all-reduce bytes must equal the model's prediction from the same partition exactly (bytes are
// deterministic). Control messages (index lists, loss and metric sums) are not modelled.
#include <gtest/gtest.h>


#include "flexgraph/graph/dataset.h"
#include "partition/partitioner.h"
#include "runtime/comm/communicator.h"
#include "runtime/plan/volumes.h"
#include "runtime/train/trainer.h"
#include "tests/runtime/in_process_workers.h"

namespace fg::plan {
namespace {


struct Case {
  const char* model;
  int64_t features, hidden;
};

void ExpectCountedBytesMatchModel(const Case& c, int parts) {
  const std::string spec = absl::StrCat("rmat:scale=11,edge_factor=8,features=", c.features, ",classes=4");
  auto ds = graph::LoadDataset(spec, {});
  ASSERT_TRUE(ds.ok()) << ds.status();
  const Csr& adj = ds->Adjacency();
  partition::PartitionInput pin{.graph = &adj, .seed = 3};
  auto owners = partition::MakePartitioner(partition::Method::kHash)->Assign(pin, parts);
  ASSERT_TRUE(owners.ok()) << owners.status();

  constexpr int kEpochs = 3;
  flexgraph::RunConfig o;
  o.mutable_model()->set_name(c.model);
  o.mutable_model()->set_hidden(c.hidden);
  o.mutable_model()->set_layers(2);
  o.mutable_model()->set_dropout(0.5);
  o.mutable_dataset()->set_path(spec);
  o.mutable_train()->set_epochs(kEpochs);
  o.mutable_train()->set_eval_every(kEpochs);  // one evaluation pass, after the last epoch
  o.mutable_train()->set_threads(1);
  o.mutable_output()->set_quiet(true);
  const std::vector<runtime::TrainResult> results =
      fg::testing::RunWorkers(o, parts, runtime::ExchangeMode::kAuto, *owners);
  ASSERT_EQ(results[0].epochs, kEpochs);

  const ModelShape shape{*ParseModelKind(c.model), c.features, c.hidden, 4, 2};
  const bool self_loops = shape.kind == ModelKind::kGcn;
  const Cut cut = CountCut(adj, *owners, parts, self_loops);
  const OneDVectors v = CountVectors(cut, OneDMode::kPartial);
  std::vector<double> features(parts, 0), partials(parts, 0), gradients(parts, 0);
  auto forward = [&](const std::vector<Spmm>& spmms, int times) {
    for (const Spmm& s : spmms) {
      for (int r = 0; r < parts; ++r) {
        const double w = 4.0 * s.width * times;
        if (s.backward) {
          gradients[r] += v.received[r] * w;
        } else {
          features[r] += v.rows_sent[r] * w;
          partials[r] += v.partials_sent[r] * w;
        }
      }
    }
  };
  forward(TrainingSpmms(shape), kEpochs);
  forward(EvaluationSpmms(shape), 1);
  for (int r = 0; r < parts; ++r) {
    const runtime::Traffic& t = results[r].traffic;
    SCOPED_TRACE(absl::StrCat(c.model, " P=", parts, " worker ", r));
    EXPECT_EQ(t.bytes_features, static_cast<int64_t>(features[r]));
    EXPECT_EQ(t.bytes_partials, static_cast<int64_t>(partials[r]));
    EXPECT_EQ(t.bytes_gradients, static_cast<int64_t>(gradients[r]));
    EXPECT_EQ(t.bytes_allreduce, kEpochs * RingAllReduceBytesSent(Parameters(shape), parts, r));
  }
  // Both kinds of message took part somewhere (the choice is exercised, not only row fetch).
  double rows = 0, sums = 0;
  for (int r = 0; r < parts; ++r) rows += v.rows_sent[r], sums += v.partials_sent[r];
  EXPECT_GT(rows, 0);
  EXPECT_GT(sums, 0);
}

// GCN with features 32 > hidden 16: both layers project first (16 and 4 wide), both exchange
// gradients back. SAGE with features 8 < hidden 16: layer 0 aggregates the 8-wide input (forward
// only), layer 1 projects to 4.
TEST(PlanTraffic, OneDBytesEqualCountedBytes) {
  for (const Case& c : {Case{"gcn", 32, 16}, Case{"sage", 8, 16}}) {
    for (int parts : {2, 4, 8}) ExpectCountedBytesMatchModel(c, parts);
  }
}

}  // namespace
}  // namespace fg::plan
