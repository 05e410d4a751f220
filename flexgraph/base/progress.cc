#include "flexgraph/base/progress.h"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

namespace fg {
namespace {
std::atomic<bool> g_quiet{false};
}

Progress::Progress(std::string what, int64_t total) : what_(std::move(what)), total_(total) {}
Progress::~Progress() { Finish(); }

void Progress::SetQuiet(bool quiet) { g_quiet = quiet; }
bool Progress::Quiet() { return g_quiet; }

void Progress::Update(int64_t done) {
  if (g_quiet) return;
  std::lock_guard<std::mutex> lock(mu_);
  const double t = watch_.Seconds();
  if (t - last_print_ < 1.0) return;
  last_print_ = t;
  if (total_ > 0) {
    std::fprintf(stderr, "[%s] %lld/%lld (%.0f%%) %.1fs\n", what_.c_str(), (long long)done,
                 (long long)total_, 100.0 * done / total_, t);
  } else {
    std::fprintf(stderr, "[%s] %lld %.1fs\n", what_.c_str(), (long long)done, t);
  }
}

void Progress::Finish(const std::string& summary) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  if (g_quiet) return;
  std::fprintf(stderr, "[%s] done in %.2fs%s%s\n", what_.c_str(), watch_.Seconds(),
               summary.empty() ? "" : ": ", summary.c_str());
}

int64_t PeakRssBytes() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

namespace {

int64_t ReadInt64(const std::string& path, int64_t fallback) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s == "max") return fallback;
  try {
    return std::stoll(s);
  } catch (...) {
    return fallback;
  }
}

}  // namespace

int64_t AvailableMemoryBytes() {
  int64_t avail = std::numeric_limits<int64_t>::max();
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kb;
  std::string unit;
  while (meminfo >> key >> kb) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:") {
      avail = kb * 1024;
      break;
    }
  }
  const int64_t limit = ReadInt64("/sys/fs/cgroup/memory.max", -1);
  if (limit > 0) {
    const int64_t used = ReadInt64("/sys/fs/cgroup/memory.current", 0);
    avail = std::min(avail, std::max<int64_t>(0, limit - used));
  }
  return avail;
}

void ReleaseFreedMemory() { malloc_trim(0); }

void ReuseFreedMemory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace fg
