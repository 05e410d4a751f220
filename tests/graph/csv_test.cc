// CSV parsing: values, separators, chunking independence, gzip, and every kind of bad input.
#include "flexgraph/graph/io/csv.h"

#include <cmath>
#include <string>

#include "flexgraph/base/rng.h"
#include "flexgraph/graph/io/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/test_util.h"

namespace fg::graph::io {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

CsvOptions Cols(int64_t c) {
  CsvOptions o;
  o.columns = c;
  return o;
}

TEST(CsvTest, ParsesIntegersWithBlankLinesAndCrlf) {
  auto t = ParseCsv("1,2\r\n\n-3, 4\n5 ,6", "x.csv", CsvType::kInt64, Cols(2));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->rows, 3);
  EXPECT_EQ(t->cols, 2);
  EXPECT_EQ(t->values.ToVector<int64_t>(), (std::vector<int64_t>{1, 2, -3, 4, 5, 6}));
}

TEST(CsvTest, ParsesFloatsExactly) {
  auto t = ParseCsv("0.5,-1e-3,3\n1.25E2,0,-0\n.5,7.,nan\n", "f.csv", CsvType::kFloat32, CsvOptions());
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->cols, 3);
  const float* v = t->values.f32();
  EXPECT_EQ(v[0], 0.5f);
  EXPECT_EQ(v[1], -1e-3f);
  EXPECT_EQ(v[2], 3.0f);
  EXPECT_EQ(v[3], 125.0f);
  EXPECT_EQ(v[6], 0.5f);
  EXPECT_EQ(v[7], 7.0f);
  EXPECT_TRUE(std::isnan(v[8]));
}

TEST(CsvTest, FloatTextRoundTrips) {
  RandomStream rng(7, 1);
  std::vector<float> values;
  for (int i = 0; i < 20000; ++i) values.push_back((rng.Uniform() - 0.5f) * std::pow(10.0f, rng.Below(12) - 6.0f));
  Tensor t = Tensor::FromVector(values, {10000, 2});
  auto back = ParseCsv(FormatCsv(t), "r.csv", CsvType::kFloat32, Cols(2));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->values.ToVector<float>(), values);
}

TEST(CsvTest, WhitespaceAndComments) {
  CsvOptions o;
  o.whitespace = true;
  o.comment = '#';
  o.min_columns = 2;
  o.max_columns = 3;
  auto t = ParseCsv("# FromNodeId\tToNodeId\n0\t1\n  2   3 \n# more\n4 5\n", "g.txt", CsvType::kInt64, o);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->values.ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

// Many small chunks through the parser pool give the same table as one thread.
TEST(CsvTest, ChunkedParallelParseMatchesSerial) {
  std::string text;
  RandomStream rng(3, 1);
  for (int i = 0; i < 50000; ++i) {
    text += std::to_string(rng.Below(1000000)) + "," + std::to_string(rng.Below(100)) + "\n";
    if (i % 977 == 0) text += "\n";
  }
  const std::string gz = GzipCompress(text);
  CsvOptions serial = Cols(2);
  serial.threads = 1;
  CsvOptions parallel = Cols(2);
  parallel.threads = 3;
  parallel.chunk_bytes = 4096;
  auto a = ParseCsv(text, "a.csv", CsvType::kInt64, serial);
  auto b = ParseCsv(gz, "b.csv.gz", CsvType::kInt64, parallel);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->rows, 50000);
  EXPECT_EQ(a->values.ToVector<int64_t>(), b->values.ToVector<int64_t>());
}

TEST(CsvTest, ReadsMultiMemberGzipFiles) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 700000; ++i) text += std::to_string(i) + "\n";
  const std::string path = dir.path() + "/ids.csv.gz";
  ASSERT_TRUE(WriteGzipFile(path, text).ok());  // ~5 MB: two 4 MiB members
  std::string twice = GzipCompress("1\n2\n") + GzipCompress("3\n");
  ASSERT_TRUE(WriteStringToFile(dir.path() + "/two.csv.gz", twice).ok());
  auto t = ReadCsv(path, CsvType::kInt64, Cols(1));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->rows, 700000);
  EXPECT_EQ(t->values.i64()[699999], 699999);
  auto two = ReadCsv(dir.path() + "/two.csv.gz", CsvType::kInt64, Cols(1));
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->values.ToVector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
}

// --- bad input: each error names the file and the line -------------------------------------------

std::string ErrorOf(const std::string& text, CsvType type, CsvOptions o) {
  auto t = ParseCsv(text, "bad.csv", type, o);
  EXPECT_FALSE(t.ok());
  return t.ok() ? "" : std::string(t.status().message());
}

TEST(CsvBadInputTest, WrongColumnCount) {
  EXPECT_THAT(ErrorOf("1,2\n3,4\n5,6,7\n", CsvType::kInt64, Cols(2)),
              HasSubstr("bad.csv:3: expected 2 columns, found 3"));
  EXPECT_THAT(ErrorOf("1,2\n3\n", CsvType::kInt64, Cols(2)), HasSubstr("bad.csv:2: expected 2 columns, found 1"));
  // Without a fixed count, lines must agree with the first.
  EXPECT_THAT(ErrorOf("1,2\n3,4,5\n", CsvType::kFloat32, CsvOptions()), HasSubstr("bad.csv:2:"));
}

TEST(CsvBadInputTest, NonNumericToken) {
  EXPECT_THAT(ErrorOf("1,2\n3,x7\n", CsvType::kInt64, Cols(2)),
              HasSubstr("bad.csv:2: column 2: 'x7' is not an integer"));
  EXPECT_THAT(ErrorOf("0.5\n1.5abc\n", CsvType::kFloat32, Cols(1)),
              HasSubstr("bad.csv:2: column 1: '1.5abc' is not a number"));
  EXPECT_THAT(ErrorOf("1.5\n", CsvType::kInt64, Cols(1)), HasSubstr("bad.csv:1: column 1: '1.5' is not an integer"));
  EXPECT_THAT(ErrorOf("99999999999999999999\n", CsvType::kInt64, Cols(1)), HasSubstr("bad.csv:1:"));
}

TEST(CsvBadInputTest, IdOutOfRangeAndNegative) {
  CsvOptions o = Cols(2);
  o.bounds = {{0, 10, "node id"}};
  EXPECT_THAT(ErrorOf("1,2\n3,10\n", CsvType::kInt64, o),
              HasSubstr("bad.csv:2: column 2: node id 10 out of range [0, 10)"));
  EXPECT_THAT(ErrorOf("1,2\n\n-1,3\n", CsvType::kInt64, o), HasSubstr("bad.csv:3: column 1: negative node id -1"));
}

TEST(CsvBadInputTest, EmptyFile) {
  EXPECT_THAT(ErrorOf("", CsvType::kInt64, Cols(2)), HasSubstr("bad.csv:1: empty file"));
  EXPECT_THAT(ErrorOf("\n\n", CsvType::kInt64, Cols(2)), HasSubstr("empty file"));
  CsvOptions ok = Cols(2);
  ok.allow_empty = true;
  auto t = ParseCsv("", "e.csv", CsvType::kInt64, ok);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows, 0);
}

TEST(CsvBadInputTest, TruncatedGzipStream) {
  std::string text;
  for (int i = 0; i < 100000; ++i) text += std::to_string(i) + "," + std::to_string(i + 1) + "\n";
  const std::string gz = GzipCompress(text);
  TempDir dir;
  const std::string path = dir.Write("cut.csv", gz.substr(0, gz.size() / 2));
  for (int threads : {1, 2}) {
    CsvOptions o = Cols(2);
    o.threads = threads;
    o.chunk_bytes = 1 << 16;
    auto t = ReadCsv(path, CsvType::kInt64, o);
    ASSERT_FALSE(t.ok());
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(path + ": truncated gzip stream"));
    EXPECT_THAT(std::string(t.status().message()), HasSubstr("near line"));
  }
  const std::string corrupt = dir.Write("corrupt.csv", gz.substr(0, 20) + std::string(200, 'x'));
  auto c = ReadCsv(corrupt, CsvType::kInt64, Cols(2));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(corrupt + ": corrupt gzip data"));
}

TEST(CsvBadInputTest, MissingFile) {
  auto t = ReadCsv("/nonexistent/dir/edge.csv.gz", CsvType::kInt64, Cols(2));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("/nonexistent/dir/edge.csv.gz: file not found"));
}

// In a multi-chunk parallel parse, the reported line is global and the first error wins.
TEST(CsvBadInputTest, ErrorLineIsGlobalAcrossChunks) {
  std::string text;
  for (int i = 1; i <= 20000; ++i) text += (i == 15001 ? std::string("1,zz") : std::to_string(i) + ",1") + "\n";
  text += "bad\n";
  CsvOptions o = Cols(2);
  o.threads = 2;
  o.chunk_bytes = 1024;
  EXPECT_THAT(ErrorOf(text, CsvType::kInt64, o), HasSubstr("bad.csv:15001: column 2: 'zz'"));
}

}  // namespace
}  // namespace fg::graph::io
