// Scratch directories of a test process: ScratchDir(name) is an empty directory under the test
// temp dir, unique to the process; all of them are removed when the process's tests pass (kept
// for their logs when one fails).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace fg::testing {

inline std::vector<std::string>& ScratchDirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

class RemoveScratchDirsOnSuccess : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!::testing::UnitTest::GetInstance()->Passed()) return;
    for (const std::string& d : ScratchDirs()) std::filesystem::remove_all(d);
  }
};

// An empty directory <temp>/<name>_<pid>, created afresh.
inline std::string ScratchDir(const std::string& name) {
  static ::testing::Environment* const cleanup =
      ::testing::AddGlobalTestEnvironment(new RemoveScratchDirsOnSuccess);
  (void)cleanup;
  const std::string d = ::testing::TempDir() + "/" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  ScratchDirs().push_back(d);
  return d;
}

}  // namespace fg::testing
