#include "flexgraph/base/fault.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

// The points (grep FaultPoint for their places):
//   worker.registered     a worker knows its rank and peers, its training not yet set up
//   epoch.start           an epoch begins (the n-th in this process)
//   file.partial_write    WriteFileAtomically: half the bytes are in the temporary file
//   file.before_rename    WriteFileAtomically: the temporary file is complete and synced
//   file.after_rename     WriteFileAtomically: renamed into place, directory not yet synced
//   worker.trained        a worker finished training, its results not yet reported
//   worker.reported       a worker reported its results and is shutting down
//   coordinator.finished  every worker reported, the summary not yet written
//   coordinator.summary_written   the summary is written, the coordinator is shutting down

namespace fg {
namespace {

struct FaultSpec {
  std::string process, point;
  int nth = 1;
  bool hang = false;  // block the thread forever instead of killing the process
  std::string mark;
};

std::atomic<bool> g_armed{false};
std::mutex g_mu;
FaultSpec* g_spec = nullptr;  // guarded by g_mu, never freed
std::string* g_process = nullptr;
int g_hits = 0;

FaultSpec* Spec() {
  static FaultSpec* spec = [] () -> FaultSpec* {
    const char* env = std::getenv("FG_FAULT");
    if (env == nullptr || *env == '\0') return nullptr;
    std::vector<std::string> parts = absl::StrSplit(env, ':');
    auto* s = new FaultSpec;
    if (parts.size() < 2 || parts.size() > 4 ||
        (parts.size() >= 3 && (!absl::SimpleAtoi(parts[2], &s->nth) || s->nth < 1)) ||
        (parts.size() == 4 && parts[3] != "kill" && parts[3] != "hang")) {
      std::fprintf(stderr, "FG_FAULT=%s: expected <process>:<point>[:<n>[:kill|hang]]; ignored\n", env);
      delete s;
      return nullptr;
    }
    s->hang = parts.size() == 4 && parts[3] == "hang";
    s->process = parts[0];
    s->point = parts[1];
    if (const char* mark = std::getenv("FG_FAULT_MARK")) s->mark = mark;
    g_armed = true;
    return s;
  }();
  return spec;
}

}  // namespace

void SetFaultProcess(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_spec = Spec();
  if (g_process == nullptr) g_process = new std::string;
  *g_process = std::string(name);
}

void FaultPoint(std::string_view point) {
  if (!g_armed.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_spec == nullptr || g_process == nullptr || g_spec->point != point) return;
    if (g_spec->process != "*" && g_spec->process != *g_process) return;
    if (++g_hits != g_spec->nth) return;
    if (!g_spec->mark.empty()) {
      const int fd = ::open(g_spec->mark.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
      if (fd < 0) return;  // fired before
      ::close(fd);
    }
    if (!g_spec->hang) {
      std::fprintf(stderr, "fault injected: %s killed at %s\n", g_process->c_str(), g_spec->point.c_str());
      ::kill(::getpid(), SIGKILL);
    }
    std::fprintf(stderr, "fault injected: %s hangs at %s\n", g_process->c_str(), g_spec->point.c_str());
  }
  while (true) std::this_thread::sleep_for(std::chrono::hours(1));  // the lock released: others go on
}

}  // namespace fg
