// Progress: the plain lines written when the output is not a terminal (logs, pipes), the bar
// redrawn in place on one, and the status line's rate and time left.
#include "flexgraph/base/progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace fg {
namespace {

// What `run` wrote through a Progress given a temporary file as its output.
template <typename F>
std::string Capture(F run) {
  FILE* f = std::tmpfile();
  EXPECT_NE(f, nullptr);
  run(f);
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) out.append(buf, n);
  std::fclose(f);
  return out;
}

// Waits (at most 10 s) until `f` holds `count` occurrences of `c`: the drawing thread's output.
void WaitFor(FILE* f, char c, int count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    char buf[65536];
    const ssize_t n = pread(fileno(f), buf, sizeof(buf), 0);
    if (n > 0 && std::count(buf, buf + n, c) >= count) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST(Progress, LineHasCountRateAndTimeLeft) {
  EXPECT_EQ(Progress::Line("hdg", 500, 1000, 2.0, false, 10), "[hdg] 500/1000 (50%), 250/s, 2.0s, about 2.0s left");
  EXPECT_EQ(Progress::Line("hdg", 250000, 1000000, 0.5, true, 8),
            "[hdg] [##......] 250000/1000000 (25%), 500k/s, 0.5s, about 1.5s left");
  EXPECT_EQ(Progress::Line("load x", 0, 0, 75.0, false, 10), "[load x] running, 1m15s");
  EXPECT_EQ(Progress::Line("scan", 3000000, 0, 2.0, false, 10), "[scan] 3000000, 1.5M/s, 2.0s");
  EXPECT_EQ(Progress::Line("hdg", 1000, 1000, 1.0, true, 4), "[hdg] [####] 1000/1000 (100%), 1k/s, 1.0s");
}

TEST(Progress, PlainLinesWhenNotATerminal) {
  Progress::SetQuiet(false);
  const std::string out = Capture([](FILE* f) {
    Progress::Options o;
    o.out = f;  // a file: not a terminal, so kAuto writes lines
    o.interval_seconds = 0.02;
    Progress p("convert", 1000, o);
    p.Update(400);
    WaitFor(f, '\n', 2);
    p.Finish("4 files");
  });
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_EQ(out.find('\033'), std::string::npos) << out;
  const std::regex line(R"(\[convert\] 400/1000 \(40%\), [0-9.]+[kMG]?/s, [0-9.]+s, about [0-9.]+s left\n)");
  int lines = 0;
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it) ++lines;
  EXPECT_GE(lines, 2) << out;  // periodic, without further Update calls
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n\[convert\] done in [0-9.]+s: 4 files\n$)"))) << out;
}

TEST(Progress, UnknownTotalStillShowsItIsRunning) {
  Progress::SetQuiet(false);
  const std::string out = Capture([](FILE* f) {
    Progress::Options o;
    o.out = f;
    o.interval_seconds = 0.02;
    Progress p("METIS", 0, o);
    WaitFor(f, '\n', 1);
  });
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(^\[METIS\] running, [0-9.]+s\n)"))) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(\[METIS\] done in [0-9.]+s\n$)"))) << out;
}

TEST(Progress, BarRedrawnInPlaceAndClearedAtTheEnd) {
  Progress::SetQuiet(false);
  const std::string out = Capture([](FILE* f) {
    Progress::Options o;
    o.out = f;
    o.style = Progress::Style::kBar;
    o.interval_seconds = 0.02;
    o.bar_width = 10;
    Progress p("hdg", 100, o);
    p.Update(50);
    WaitFor(f, '\r', 2);
  });
  EXPECT_NE(out.find("\r\033[K[hdg] [#####.....] 50/100 (50%)"), std::string::npos) << out;
  EXPECT_NE(out.find(" left"), std::string::npos) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("\r\033\\[K\\[hdg\\] done in [0-9.]+s\n$"))) << out;
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;  // one line: the bar overwrote itself
}

TEST(Progress, QuietWritesNothing) {
  Progress::SetQuiet(true);
  const std::string out = Capture([](FILE* f) {
    Progress::Options o;
    o.out = f;
    o.interval_seconds = 0.01;
    Progress p("x", 10, o);
    p.Update(5);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  Progress::SetQuiet(false);
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace fg
