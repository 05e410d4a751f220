// The particle-tracking pipeline through the real `flexgraph` binary, as README shows it: generate
// events, train the Interaction Network on them (saving the model), and build tracks with it. The
// track command's edge metrics are the training run's test metrics of the same parameters; worker
// processes train data-parallel or vertex-sharded to the single process's losses; bad flags are named.
#include <gtest/gtest.h>

#include <string>

#include "tests/runtime/process_util.h"
#include "tests/runtime/scratch_dir.h"

namespace {

using namespace fg::testing;  // NOLINT: the process helpers

const std::string kTrain =
    " train --model interaction --hidden 16 --layers 3 --epochs 6 --batch_size 4 --lr 0.005 "
    "--threads 1 --quiet";

TEST(TrackingCli, GenerateTrainTrack) {
  const std::string d = ScratchDir("fg_tracking_cli");
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " generate trackml:events=20,particles=30,noise=0.1,seed=3 --format fgc --out " +
                  d + "/events.fgc", &out), 0) << out;
  // A list-valued option among others: aggregation=sum,max then mlp_layers=1.
  ASSERT_EQ(Shell(kFlexgraph + kTrain + " --dataset " + d + "/events.fgc --save_model " + d +
                  "/model --summary_json " + d + "/train.json --model_opt aggregation=sum,max,mlp_layers=1",
                  &out), 0) << out;
  const std::string saved = Read(d + "/model/model.txtpb");
  EXPECT_NE(saved.find("value: \"sum,max\""), std::string::npos) << saved.substr(0, 1500);
  EXPECT_NE(saved.find("layer0.node_mlp.linear0.weight"), std::string::npos);
  EXPECT_EQ(saved.find("layer0.node_mlp.linear1.weight"), std::string::npos);  // one block per MLP
  EXPECT_EQ(Shell(kFlexgraph + kTrain + " --dataset " + d + "/events.fgc --model_opt max", &out), 2);
  EXPECT_NE(out.find("--model_opt: expected key=value, got 'max'"), std::string::npos) << out;
  ASSERT_EQ(Shell(kFlexgraph + " track --model_dir " + d + "/model --threads 1 --summary_json " + d +
                  "/track.json --out " + d + "/tracks.csv", &out), 0) << out;
  const std::string train = Read(d + "/train.json"), track = Read(d + "/track.json");
  // The same parameters on the same test events at the same cut: the same edge metrics.
  EXPECT_NEAR(Field(track, "edge_efficiency"), Field(train, "test_efficiency"), 1e-5) << track;
  EXPECT_NEAR(Field(track, "edge_purity"), Field(train, "test_purity"), 1e-5) << track;
  for (const char* key : {"track_efficiency", "fake_rate", "duplicate_rate"}) {
    EXPECT_GE(Field(track, key), 0.0) << key << ": " << track;
    EXPECT_LE(Field(track, key), 1.0) << key << ": " << track;
  }
  EXPECT_EQ(Field(track, "graphs"), 2);  // 20 events: 16 train, 2 valid, 2 test
  EXPECT_GT(Field(track, "candidates"), 0);
  EXPECT_NE(track.find("\"efficiency_vs_pt\": {\"bin_edges\": ["), std::string::npos) << track;
  EXPECT_NE(track.find("\"efficiency_vs_eta\": {\"bin_edges\": ["), std::string::npos) << track;
  EXPECT_EQ(Read(d + "/tracks.csv").rfind("graph,track,hit\n", 0), 0u);
  // Every graph at another cut: more candidates' worth of graphs, a different edge efficiency.
  ASSERT_EQ(Shell(kFlexgraph + " track --model_dir " + d + "/model --split all --cut 0.99 --threads 1 "
                  "--summary_json " + d + "/all.json", &out), 0) << out;
  EXPECT_EQ(Field(Read(d + "/all.json"), "graphs"), 20);
  EXPECT_LT(Field(Read(d + "/all.json"), "edge_efficiency"), Field(track, "edge_efficiency"));
  // Usage errors name the flag; a model of another task is refused naming the dataset.
  EXPECT_EQ(Shell(kFlexgraph + " track --model_dir " + d + "/model --split bogus", &out), 2);
  EXPECT_NE(out.find("--split bogus"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " track --model_dir " + d + "/model --min_hits x", &out), 2);
  EXPECT_NE(out.find("min_hits"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " track --split test", &out), 2);
  EXPECT_NE(out.find("--model_dir is required"), std::string::npos) << out;
  ASSERT_EQ(Shell(kFlexgraph + " train --dataset " + kCora + " --epochs 1 --threads 1 --quiet --save_model " +
                  d + "/gcn", &out), 0) << out;
  EXPECT_EQ(Shell(kFlexgraph + " track --model_dir " + d + "/gcn", &out), 1);
  EXPECT_NE(out.find("is not a set of graphs"), std::string::npos) << out;
}

// Data parallel (2 workers: each takes its share of a batch's graphs) and vertex sharded (3
// workers: each batch's hits split by METIS, rows of neighbours fetched per layer).
TEST(TrackingCli, WorkerProcessesTrainDataParallelAndVertexShardedToTheSingleProcessLosses) {
  const std::string d = ScratchDir("fg_tracking_cli_launch");
  const std::string data = " --dataset trackml:events=20,particles=20,noise=0.1,seed=4";
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + kTrain + data + " --summary_json " + d + "/single.json", &out), 0) << out;
  const std::vector<double> single = Losses(Read(d + "/single.json"));
  ASSERT_EQ(single.size(), 6u);
  for (const auto& [workers, flags] : {std::pair{2, ""}, std::pair{3, " --batch_sharding vertices"}}) {
    SCOPED_TRACE(flags);
    const std::string run = d + "/launch" + std::to_string(workers);
    ASSERT_EQ(Shell(kFlexgraph + " launch --quiet --workers " + std::to_string(workers) + " --log_dir " + run +
                    " --" + kTrain + data + flags + " --summary_json " + run + ".json", &out), 0) << out;
    const std::vector<double> launch = Losses(Read(run + ".json"));
    ASSERT_EQ(launch.size(), single.size());
    for (size_t e = 0; e < single.size(); ++e) EXPECT_NEAR(launch[e], single[e], 1e-5 * single[e]) << e;
    EXPECT_NEAR(Field(Read(run + ".json"), "test_auc"), Field(Read(d + "/single.json"), "test_auc"), 1e-5);
  }
  // One state per edge (edges=once) over 2 vertex-sharded worker processes: states travel to
  // their sources' owners.
  const std::string once = data + " --model_opt edges=once";
  ASSERT_EQ(Shell(kFlexgraph + kTrain + once + " --summary_json " + d + "/once.json", &out), 0) << out;
  ASSERT_EQ(Shell(kFlexgraph + " launch --quiet --workers 2 --partition hash --log_dir " + d + "/launch-once --" +
                      kTrain + once + " --batch_sharding vertices --summary_json " + d + "/launch-once.json",
                  &out), 0) << out;
  const std::vector<double> want = Losses(Read(d + "/once.json")), got = Losses(Read(d + "/launch-once.json"));
  ASSERT_EQ(got.size(), want.size());
  for (size_t e = 0; e < want.size(); ++e) EXPECT_NEAR(got[e], want[e], 1e-5 * want[e]) << e;
}

TEST(TrackingCli, AutomaticRecomputationKeepsActivationsWhereTheyFit) {
  // A small event: `recompute=auto` keeps every activation (the peak of recompute=0), and
  // recompute=1 holds less at its peak; the three runs give the same losses.
  const std::string d = ScratchDir("fg_tracking_cli_recompute");
  const std::string data = " --dataset trackml:events=3,particles=60,noise=0.1,seed=4,train=0.34,valid=0.33";
  std::string out;
  double peak[3] = {0, 0, 0};
  std::vector<double> losses[3];
  const char* modes[3] = {"auto", "0", "1"};
  for (int k = 0; k < 3; ++k) {
    const std::string json = d + "/" + modes[k] + ".json";
    ASSERT_EQ(Shell(kFlexgraph + kTrain + data + " --epochs 2 --model_opt recompute=" + modes[k] +
                        " --summary_json " + json, &out), 0) << out;
    peak[k] = Field(Read(json), "peak_tensor_bytes");
    losses[k] = Losses(Read(json));
    ASSERT_EQ(losses[k].size(), 2u) << modes[k];
  }
  EXPECT_EQ(peak[0], peak[1]);
  EXPECT_LT(peak[2], peak[1]);
  for (int k = 1; k < 3; ++k) {
    for (size_t e = 0; e < 2; ++e) EXPECT_NEAR(losses[k][e], losses[0][e], 1e-6) << modes[k];
  }
  EXPECT_EQ(Shell(kFlexgraph + kTrain + data + " --model_opt recompute=sometimes", &out), 1);
  EXPECT_NE(out.find("recompute: 'sometimes' is not auto, 1 or 0"), std::string::npos) << out;
}

}  // namespace
