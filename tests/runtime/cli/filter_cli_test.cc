// The high-pileup tracking pipeline's filter stage through the real `flexgraph` binary, sized for
// CI: generate small events, train the edge filter briefly, filter them at the cut that keeps 98%
// of the validation events' true edges (the other splits' efficiency above a bound, fewer edges),
// train the Interaction Network on the filtered events and build tracks: `track` counts the true
// edges the filter dropped as lost (its true edges are the unfiltered ones). Bad flags are named.
#include <gtest/gtest.h>

#include <string>

#include "tests/runtime/process_util.h"
#include "tests/runtime/scratch_dir.h"

namespace {

using namespace fg::testing;  // NOLINT: the process helpers

// The object `name` nested in a JSON summary (for Field).
std::string Nested(const std::string& json, const std::string& name) {
  const size_t at = json.find("\"" + name + "\": {");
  if (at == std::string::npos) {
    ADD_FAILURE() << "no \"" << name << "\" object in " << json;
    return "{}";
  }
  const size_t open = json.find('{', at), close = json.find('}', open);
  return json.substr(open, close - open + 1);
}

TEST(FilterCli, GenerateTrainFilterFilterTrainTrack) {
  const std::string d = ScratchDir("fg_filter_cli");
  std::string out;
  ASSERT_EQ(
      Shell(kFlexgraph +
                " generate trackml:events=12,particles=150,noise=0.1,seed=6 --format fgc --out " +
                d + "/events.fgc",
            &out),
      0)
      << out;
  ASSERT_EQ(Shell(kFlexgraph +
                      " train --model filter --hidden 16 --epochs 6 --lr 0.005 --threads 1 --quiet "
                      "--dataset " +
                      d + "/events.fgc --save_model " + d + "/filter",
                  &out),
            0)
      << out;
  const std::string saved = Read(d + "/filter/model.txtpb");
  EXPECT_NE(saved.find("edge_encoder.linear0.weight"), std::string::npos) << saved.substr(0, 1500);
  ASSERT_EQ(Shell(kFlexgraph + " filter --model_dir " + d +
                      "/filter --efficiency 0.98 --threads 1 --out " + d +
                      "/filtered.fgc --summary_json " + d + "/filter.json",
                  &out),
            0)
      << out;
  EXPECT_NE(out.find("keeps 0.98 of the true edges of the valid graphs"), std::string::npos) << out;
  const std::string summary = Read(d + "/filter.json");
  const std::string valid = Nested(summary, "valid"), test = Nested(summary, "test");
  EXPECT_GE(Field(valid, "efficiency"), 0.98) << summary;
  EXPECT_GE(Field(test, "efficiency"), 0.9) << summary;
  EXPECT_LT(Field(summary, "kept_edges"), Field(summary, "edges")) << summary;
  EXPECT_GT(Field(summary, "purity_after"), Field(summary, "purity_before")) << summary;
  const double dropped = Field(test, "true_edges") - Field(test, "kept_true_edges");
  EXPECT_GT(Field(summary, "true_edges") - Field(summary, "kept_true_edges"), 0) << summary;
  // The filtered events train the Interaction Network as any tracking dataset does.
  ASSERT_EQ(
      Shell(kFlexgraph +
                " train --model interaction --hidden 8 --layers 2 --epochs 2 --threads 1 --quiet "
                "--dataset " +
                d + "/filtered.fgc --save_model " + d + "/gnn",
            &out),
      0)
      << out;
  ASSERT_EQ(Shell(kFlexgraph + " track --model_dir " + d + "/gnn --threads 1 --summary_json " + d +
                      "/track.json",
                  &out),
            0)
      << out;
  const std::string track = Read(d + "/track.json");
  EXPECT_EQ(Field(track, "filter_dropped_true_edges"), dropped) << track;
  EXPECT_EQ(Field(track, "true_edges"), Field(test, "true_edges"))
      << track;  // the unfiltered count
  EXPECT_LE(Field(track, "edge_efficiency"), Field(test, "efficiency") + 1e-9) << track;
  // Filtering the filtered events again (every edge kept at cut -1): nothing more dropped, and the
  // first stage's dropped true edges still counted.
  ASSERT_EQ(Shell(kFlexgraph + " filter --model_dir " + d + "/filter --dataset " + d +
                      "/filtered.fgc --cut -1 "
                      "--threads 1 --out " +
                      d + "/again.fgc --summary_json " + d + "/again.json",
                  &out),
            0)
      << out;
  const std::string again = Read(d + "/again.json");
  EXPECT_EQ(Field(again, "kept_edges"), Field(summary, "kept_edges")) << again;
  EXPECT_EQ(Field(Nested(again, "test"), "earlier_dropped_true_edges"), dropped) << again;
  EXPECT_NEAR(Field(Nested(again, "test"), "pipeline_efficiency"), Field(test, "efficiency"), 1e-9)
      << again;
  // Usage errors name the flag, before anything is loaded.
  EXPECT_EQ(Shell(kFlexgraph + " filter --model_dir " + d + "/filter --out " + d + "/x.txt", &out),
            2);
  EXPECT_NE(out.find("expected a .fgc file"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " filter --model_dir " + d + "/filter --out " + d +
                      "/x.fgc --cut 0.1 --efficiency 0.9",
                  &out),
            2);
  EXPECT_NE(out.find("give one"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " filter --model_dir " + d + "/filter --out " + d +
                      "/x.fgc --efficiency 1.5",
                  &out),
            2);
  EXPECT_NE(out.find("--efficiency 1.5"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " filter --out " + d + "/x.fgc", &out), 2);
  EXPECT_NE(out.find("--model_dir is required"), std::string::npos) << out;
}

}  // namespace
