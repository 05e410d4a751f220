// The summary readers of the multi-process tests fail the test on a missing key, so two runs that
// both lack a field never compare equal.
#include "tests/runtime/process_util.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>

namespace fg::testing {
namespace {

const char kSummary[] =
    R"({"epochs": 2, "test_accuracy": 0.8125, "losses": [1.5, 0.25e1], "valid_accuracy": null})";

TEST(SummaryFields, ReadPresentNumbers) {
  EXPECT_EQ(Field(kSummary, "epochs"), 2);
  EXPECT_EQ(Field(kSummary, "test_accuracy"), 0.8125);
  EXPECT_EQ(Losses(kSummary), (std::vector<double>{1.5, 2.5}));
  EXPECT_TRUE(Losses(R"({"losses": []})").empty());
}

TEST(SummaryFields, AMissingOrNonNumericKeyIsAFailure) {
  double missing = 0;
  EXPECT_NONFATAL_FAILURE(missing = Field(kSummary, "test_macro_f1"),
                          "no numeric field \"test_macro_f1\"");
  EXPECT_TRUE(std::isnan(missing));
  EXPECT_NONFATAL_FAILURE(Field(kSummary, "valid_accuracy"), "no numeric field \"valid_accuracy\"");
  // Two summaries that both lack the key do not compare equal.
  double a = 0, b = 0;
  EXPECT_NONFATAL_FAILURE(a = Field("{}", "test_accuracy"), "test_accuracy");
  EXPECT_NONFATAL_FAILURE(b = Field("{}", "test_accuracy"), "test_accuracy");
  EXPECT_NE(a, b);
}

// The per-epoch history's fields are not the summary's: only top-level keys are read.
TEST(SummaryFields, OnlyTopLevelKeysAreRead) {
  const std::string nested =
      R"({"history": [{"epoch": 1, "test_accuracy": 0.125, "losses": [9]}], )"
      R"("test_accuracy": 0.625, "losses": [2, 1], "name": "a \"test_accuracy\": 3"})";
  EXPECT_EQ(Field(nested, "test_accuracy"), 0.625);
  EXPECT_EQ(Losses(nested), (std::vector<double>{2, 1}));
  EXPECT_NONFATAL_FAILURE(Field(R"({"history": [{"test_accuracy": 0.125}]})", "test_accuracy"),
                          "no numeric field");
  EXPECT_NONFATAL_FAILURE(Field(nested, "epoch"), "no numeric field \"epoch\"");
}

TEST(SummaryFields, AMissingLossListIsAFailure) {
  std::vector<double> losses = {1};
  EXPECT_NONFATAL_FAILURE(losses = Losses(R"({"epochs": 2})"), "no \"losses\" list");
  EXPECT_TRUE(losses.empty());
}

}  // namespace
}  // namespace fg::testing
