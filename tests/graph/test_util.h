// Test helpers for dataset I/O: a fresh temporary directory per test and small file writers
// (gzip through zlib).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "flexgraph/graph/io/file.h"
#include "gtest/gtest.h"

namespace fg::graph::testing {

// A temporary directory removed at destruction.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = (std::filesystem::temp_directory_path() /
             (std::string("fg_") + (info ? info->name() : "test") + "_" + std::to_string(::getpid())))
                .string();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  // Writes `text` to dir/rel (gzip-compressed when rel ends with .gz), creating parents.
  std::string Write(const std::string& rel, const std::string& text) const {
    const std::string p = path_ + "/" + rel;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    const bool gz = rel.size() > 3 && rel.compare(rel.size() - 3, 3, ".gz") == 0;
    EXPECT_TRUE(io::WriteStringToFile(p, gz ? io::GzipCompress(text) : text).ok());
    return p;
  }

 private:
  std::string path_;
};

inline std::string SharedData(const std::string& name) { return std::string(FG_SHARED_DATA_DIR) + "/" + name; }

}  // namespace fg::graph::testing
