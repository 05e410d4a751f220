// Helpers of the multi-process tests: the `flexgraph` binary, a bounded shell command with its
// output, and fields of a run summary.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cctype>
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

// Where the value of the top-level `key` of a JSON object starts (npos: no such key). Keys of
// nested objects (a summary's per-epoch "history") are not top-level.
inline size_t TopLevelValue(const std::string& json, const std::string& key) {
  int depth = 0;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == '"') {
      size_t end = i + 1;
      while (end < json.size() && json[end] != '"') end += json[end] == '\\' ? 2 : 1;
      size_t colon = end + 1;
      while (colon < json.size() && std::isspace(static_cast<unsigned char>(json[colon]))) ++colon;
      if (depth == 1 && colon < json.size() && json[colon] == ':' &&
          json.compare(i + 1, end - i - 1, key) == 0) {
        size_t value = colon + 1;
        while (value < json.size() && std::isspace(static_cast<unsigned char>(json[value]))) {
          ++value;
        }
        return value;
      }
      i = end;
    }
  }
  return std::string::npos;
}

// The summary's per-epoch losses (its top-level "losses"); a summary without that list is a test
// failure (and gives an empty list).
inline std::vector<double> Losses(const std::string& json) {
  std::vector<double> v;
  const size_t at = TopLevelValue(json, "losses");
  const size_t end = at == std::string::npos ? at : json.find(']', at);
  if (at == std::string::npos || json[at] != '[' || end == std::string::npos) {
    ADD_FAILURE() << "no \"losses\" list in the summary: " << json.substr(0, 2000);
    return v;
  }
  std::stringstream ss(json.substr(at + 1, end - at - 1));
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.find_first_not_of(" \n\t") != std::string::npos) v.push_back(std::stod(item));
  }
  return v;
}

// A top-level numeric field of a summary; a missing or non-numeric (null) one is a test failure
// and gives NaN, which equals nothing, so two summaries that both lack it never compare equal.
inline double Field(const std::string& json, const std::string& key) {
  const size_t at = TopLevelValue(json, key);
  std::smatch m;
  const std::string rest = at == std::string::npos ? "" : json.substr(at, 64);
  if (!std::regex_search(rest, m, std::regex("^[-0-9.eE+]+"))) {
    ADD_FAILURE() << "no numeric field \"" << key << "\" in the summary: " << json.substr(0, 2000);
    return std::nan("");
  }
  return std::stod(m[0].str());
}

}  // namespace fg::testing
