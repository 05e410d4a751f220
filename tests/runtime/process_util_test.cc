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

TEST(SummaryFields, AMissingLossListIsAFailure) {
  std::vector<double> losses = {1};
  EXPECT_NONFATAL_FAILURE(losses = Losses(R"({"epochs": 2})"), "no \"losses\" list");
  EXPECT_TRUE(losses.empty());
}

}  // namespace
}  // namespace fg::testing
