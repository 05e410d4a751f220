#include "flexgraph/base/progress.h"

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>

#include "absl/strings/str_format.h"

namespace fg {
namespace {
std::atomic<bool> g_quiet{false};

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
std::atomic<int64_t> g_last_progress_micros{NowMicros()};
std::atomic<int> g_open_steps{0};  // Progress steps under way

// 1234567 -> "1.23M"; below 1000 as an integer.
std::string Count(double v) {
  if (v < 1e3) return absl::StrFormat("%.0f", v);
  if (v < 1e6) return absl::StrFormat("%.3gk", v / 1e3);
  if (v < 1e9) return absl::StrFormat("%.3gM", v / 1e6);
  return absl::StrFormat("%.3gG", v / 1e9);
}

std::string Duration(double s) {
  if (s < 60) return absl::StrFormat("%.1fs", s);
  if (s < 3600) return absl::StrFormat("%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return absl::StrFormat("%dh%02dm", static_cast<int>(s) / 3600, static_cast<int>(s) % 3600 / 60);
}

}  // namespace

Progress::Progress(std::string what, int64_t total) : Progress(std::move(what), total, Options{}) {}

Progress::Progress(std::string what, int64_t total, const Options& options)
    : what_(std::move(what)), total_(total), out_(options.out != nullptr ? options.out : stderr),
      bar_width_(std::max(options.bar_width, 1)) {
  bar_ = options.style == Style::kBar || (options.style == Style::kAuto && isatty(fileno(out_)));
  interval_ = options.interval_seconds > 0 ? options.interval_seconds : (bar_ ? 0.2 : 5.0);
  g_open_steps.fetch_add(1);
  if (!g_quiet) thread_ = std::thread([this] { Loop(); });
}

Progress::~Progress() { Finish(); }

void Progress::SetQuiet(bool quiet) { g_quiet = quiet; }
bool Progress::Quiet() { return g_quiet; }

void Progress::Update(int64_t done) {
  done_.store(done, std::memory_order_relaxed);
  NoteProgress();
}

void NoteProgress() { g_last_progress_micros.store(NowMicros(), std::memory_order_relaxed); }

double SecondsSinceProgress() {
  if (g_open_steps.load() > 0) return 0;
  return static_cast<double>(NowMicros() - g_last_progress_micros.load(std::memory_order_relaxed)) * 1e-6;
}

std::string Progress::Line(const std::string& what, int64_t done, int64_t total, double seconds, bool bar,
                           int bar_width) {
  std::string line = "[" + what + "]";
  const double rate = seconds > 0 ? done / seconds : 0;
  if (total > 0) {
    const double f = std::clamp(static_cast<double>(done) / total, 0.0, 1.0);
    if (bar) {
      const int full = static_cast<int>(f * bar_width);
      line += " [" + std::string(full, '#') + std::string(bar_width - full, '.') + "]";
    }
    absl::StrAppendFormat(&line, " %d/%d (%.0f%%)", done, total, 100 * f);
  } else if (done > 0) {
    absl::StrAppendFormat(&line, " %d", done);
  } else {
    line += " running";
  }
  if (done > 0) line += ", " + Count(rate) + "/s";
  line += ", " + Duration(seconds);
  if (total > 0 && done > 0 && done < total) line += ", about " + Duration((total - done) / rate) + " left";
  return line;
}

void Progress::Draw(bool final_draw) {
  const std::string line = Line(what_, done_.load(std::memory_order_relaxed), total_, watch_.Seconds(), bar_,
                                bar_width_);
  if (bar_) {
    std::fprintf(out_, "\r\033[K%s", final_draw ? "" : line.c_str());  // redrawn in place
    drawn_ = !final_draw;
  } else if (!final_draw) {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

void Progress::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!finished_) {
    if (wake_.wait_for(lock, std::chrono::duration<double>(interval_), [this] { return finished_; })) break;
    Draw(false);
  }
}

void Progress::Finish(const std::string& summary) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
  }
  NoteProgress();
  g_open_steps.fetch_sub(1);
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (g_quiet) return;
  if (drawn_) Draw(true);  // clears the bar
  std::fprintf(out_, "[%s] done in %.2fs%s%s\n", what_.c_str(), watch_.Seconds(), summary.empty() ? "" : ": ",
               summary.c_str());
  std::fflush(out_);
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
