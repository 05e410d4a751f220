// Helpers of the multi-process tests: the `flexgraph` binary, a bounded shell command with its
// output, and fields of a run summary.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/runtime/scratch_dir.h"

namespace fg::testing {

inline const std::string kFlexgraph = std::string(FG_BINARY_DIR) + "/runtime/flexgraph";
inline const std::string kCora = std::string(FG_SHARED_DATA_DIR) + "/cora";

inline std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs a shell command with a time bound; returns its exit status and output.
inline int Shell(const std::string& cmd, std::string* output = nullptr) {
  // Per process: the debug and release suites may run these tests at the same time.
  static const std::string dir = ScratchDir("fg_cmd_out");
  const std::string out = dir + "/out.txt";
  const int rc = std::system(("timeout -k 5 240 " + cmd + " > " + out + " 2>&1").c_str());
  if (output) *output = Read(out);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The summary's per-epoch losses; a summary without a "losses" list is a test failure (and gives
// an empty list).
inline std::vector<double> Losses(const std::string& json) {
  std::smatch m;
  std::vector<double> v;
  if (!std::regex_search(json, m, std::regex("\"losses\": \\[([^\\]]*)\\]"))) {
    ADD_FAILURE() << "no \"losses\" list in the summary: " << json.substr(0, 2000);
    return v;
  }
  std::stringstream ss(m[1].str());
  for (std::string item; std::getline(ss, item, ',');) v.push_back(std::stod(item));
  return v;
}

// A numeric field of a summary; a missing key is a test failure and gives NaN, which equals
// nothing, so two summaries that both lack it never compare equal.
inline double Field(const std::string& json, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + key + "\": ([-0-9.eE+]+)"))) {
    ADD_FAILURE() << "no numeric field \"" << key << "\" in the summary: " << json.substr(0, 2000);
    return std::nan("");
  }
  return std::stod(m[1].str());
}

}  // namespace fg::testing
