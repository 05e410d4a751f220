// Process-grid training with real processes: `flexgraph launch --workers 4 --exchange 2d | 1.5d:c=2
// | 3d` starts a coordinator and four worker processes on loopback; their losses equal one
// process's within 1e-4 relative at every epoch, with the same test accuracy (GCN; SGC loaded from
// its out-of-tree library; GCN over a dataset partitioned into the grid's row blocks). --exchange auto chooses a grid where the plan predicts fewer bytes. A
// grid that does not fit the workers is refused before anything starts.
#include <gtest/gtest.h>

#include <string>

#include "tests/runtime/cluster/launch_util.h"

namespace {

using namespace fg::testing;  // NOLINT: the process helpers

const std::string kSgc = std::string(FG_BINARY_DIR) + "/udf_examples/external_model/libsgc_model.so";

void ExpectLaunchMatches(const std::string& d, const std::string& model_args, const std::string& exchange,
                         const std::string& described) {
  const std::string train = " --dataset " + kCora + " --epochs 5 --threads 1 --quiet " + model_args;
  ASSERT_EQ(Shell(kFlexgraph + " train" + train + " --summary_json " + d + "/single.json"), 0);
  const std::string single = Read(d + "/single.json");
  const auto base = Losses(single);
  ASSERT_EQ(base.size(), 5u);
  const std::string json = d + "/grid.json";
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " launch --quiet --workers 4 --exchange " + exchange + " --log_dir " + d + "/logs -- train" +
                      train + " --summary_json " + json,
                  &out),
            0)
      << out;
  const std::string summary = Read(json);
  const auto losses = Losses(summary);
  ASSERT_EQ(losses.size(), base.size()) << summary;
  for (size_t e = 0; e < base.size(); ++e) {
    EXPECT_NEAR(losses[e], base[e], 1e-4 * base[e]) << model_args << " " << exchange << " epoch " << e + 1;
  }
  EXPECT_EQ(Field(summary, "test_accuracy"), Field(single, "test_accuracy")) << model_args << " " << exchange;
  EXPECT_EQ(Field(summary, "world_size"), 4);
  EXPECT_NE(summary.find("\"exchange\": \"" + described + "\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"bytes_features_per_epoch\""), std::string::npos) << summary;
  EXPECT_GT(Field(summary, "bytes_total"), 0) << summary;
  // The grid cuts the vertices itself: the coordinator plans no partition (nor loads the graph).
  EXPECT_NE(Read(d + "/logs/coordinator.log").find("--exchange " + described + ": no partition"), std::string::npos);
}

TEST(GridLaunch, FourWorkerProcessesMatchSingleProcess) {
  ExpectLaunchMatches(Dir("fg_grid_launch_gcn"), "--model gcn", "2d", "2d 2x2 aware");
  ExpectLaunchMatches(Dir("fg_grid_launch_sgc"), "--udf_library " + kSgc + " --model sgc", "1.5d:c=2", "1.5d c=2 aware");
}

// Over a partitioned dataset (`flexgraph partition --parts 2`), `launch --workers 4 --exchange 2d`
// gives each grid row's two worker processes the same part, and the losses are one process's.
TEST(GridLaunch, FourProcessesOverTwoPartsMatchSingleProcess) {
  const std::string d = Dir("fg_grid_launch_parts");
  const std::string parts = d + "/cora-2";
  ASSERT_EQ(Shell(kFlexgraph + " partition --quiet --dataset " + kCora + " --parts 2 --method metis --model gcn --out " +
                  parts),
            0);
  const std::string train = " --epochs 4 --threads 1 --quiet --model gcn";
  ASSERT_EQ(Shell(kFlexgraph + " train --dataset " + kCora + train + " --summary_json " + d + "/single.json"), 0);
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " launch --quiet --workers 4 --exchange 2d --log_dir " + d + "/logs -- train --dataset " +
                      parts + train + " --summary_json " + d + "/grid.json",
                  &out),
            0)
      << out;
  const std::string single = Read(d + "/single.json"), summary = Read(d + "/grid.json");
  const auto base = Losses(single), losses = Losses(summary);
  ASSERT_EQ(losses.size(), base.size()) << summary;
  for (size_t e = 0; e < base.size(); ++e) EXPECT_NEAR(losses[e], base[e], 1e-4 * base[e]) << "epoch " << e + 1;
  EXPECT_EQ(Field(summary, "test_accuracy"), Field(single, "test_accuracy"));
  EXPECT_NE(summary.find("\"exchange\": \"2d 2x2 aware\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"bytes_setup\""), std::string::npos) << summary;
  // Eight workers on a 4 x 2 grid need four parts: refused, naming the parts and the grid.
  EXPECT_NE(Shell(kFlexgraph + " launch --quiet --workers 8 --exchange 2d:4x2 --log_dir " + d + "/bad -- train --dataset " +
                      parts + train,
                  &out),
            0);
  EXPECT_NE(out.find("a partitioned dataset of 2 parts needs one per row block of --exchange 2d 4x2 aware over 8 "
                     "workers (4)"), std::string::npos) << out;
}

// --exchange auto: on an SBM at P = 8 the workers choose 1.5D (runtime/train/exchange_choice.h),
// and --exchange 1d keeps the per-peer exchange; both give the same losses.
TEST(GridLaunch, AutoChoosesAGridWhereThePlanPredictsFewerBytes) {
  const std::string d = Dir("fg_grid_launch_auto");
  const std::string train = " -- train --dataset sbm:nodes=4096,classes=8,features=64,avg_degree=32,seed=3 --epochs 2 "
                            "--threads 1 --quiet --summary_json ";
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " launch --quiet --workers 8 --exchange auto --log_dir " + d + "/auto" + train + d +
                      "/auto.json",
                  &out),
            0)
      << out;
  ASSERT_EQ(Shell(kFlexgraph + " launch --quiet --workers 8 --exchange 1d --log_dir " + d + "/1d" + train + d + "/1d.json",
                  &out),
            0)
      << out;
  const std::string automatic = Read(d + "/auto.json"), one_d = Read(d + "/1d.json");
  EXPECT_NE(automatic.find("\"exchange\": \"1.5d c=2 aware (auto)\""), std::string::npos) << automatic;
  EXPECT_NE(one_d.find("\"exchange\": \"1d auto\""), std::string::npos) << one_d;
  const auto a = Losses(automatic), b = Losses(one_d);
  ASSERT_EQ(a.size(), b.size());
  for (size_t e = 0; e < a.size(); ++e) EXPECT_NEAR(a[e], b[e], 1e-4 * b[e]) << "epoch " << e + 1;
}

TEST(GridLaunch, AGridThatDoesNotFitIsRefusedBeforeAnythingStarts) {
  const std::string d = Dir("fg_grid_launch_bad");
  for (const auto& [exchange, why] : {std::pair<std::string, std::string>{"2d:3x3", "the grid has 9 workers, the run 4"},
                                      {"1.5d:c=4", "c^2 = 16 does not divide the 4 workers"},
                                      {"4d", "takes auto, 1d, rows, partial or a process grid"}}) {
    std::string out;
    EXPECT_EQ(Shell(kFlexgraph + " launch --workers 4 --exchange " + exchange + " --log_dir " + d + "/" +
                        std::to_string(exchange.size()) + " -- train --dataset " + kCora + " --epochs 1",
                    &out),
              2)
        << exchange;
    EXPECT_NE(out.find(why), std::string::npos) << out;
  }
}

}  // namespace
