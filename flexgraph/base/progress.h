// Progress display for long work (loading, conversion, partitioning, METIS, HDG building): on a
// terminal a bar redrawn in place with the rate and the time left; otherwise (logs, pipes) a plain
// line every few seconds; and a last line with the time taken. A background thread draws, so a
// step that cannot report how far it is (a METIS call) still shows that it is running. Update() is
// thread-safe and lock-free. Also this process's memory figures (peak resident, still available).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "flexgraph/base/timer.h"

namespace fg {

class Progress {
 public:
  enum class Style { kAuto, kBar, kLines };  // kAuto: kBar when `out` is a terminal
  struct Options {
    Style style = Style::kAuto;
    FILE* out = nullptr;            // default stderr
    double interval_seconds = 0;    // between draws; 0: 0.2 s for the bar, 5 s for lines
    int bar_width = 30;
  };
  // `total` may be 0 when unknown (then no bar, percentage or time left). Quiet progress prints
  // nothing (tests, --quiet).
  Progress(std::string what, int64_t total);
  Progress(std::string what, int64_t total, const Options& options);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void Update(int64_t done);  // how many of `total` are done; drawn by the background thread
  void Finish(const std::string& summary = "");
  static void SetQuiet(bool quiet);
  static bool Quiet();

  // One status line: "[what] 500/1000 (50%), 1.2k/s, 0.4s, about 0.4s left" ("[what] running,
  // 0.4s" with nothing to count); with `bar` a bar of `bar_width` after the name. For tests.
  static std::string Line(const std::string& what, int64_t done, int64_t total, double seconds, bool bar,
                          int bar_width);

 private:
  void Draw(bool final_draw);
  void Loop();

  std::string what_;
  int64_t total_;
  FILE* out_;
  bool bar_;
  double interval_;
  int bar_width_;
  Stopwatch watch_;
  std::atomic<int64_t> done_{0};
  std::mutex mu_;
  std::condition_variable wake_;
  bool finished_ = false;
  bool drawn_ = false;  // a bar is on the screen (to be cleared)
  std::thread thread_;
};

// Liveness, for the stall watch of distributed runs: work that moves on (an epoch, a batch, a
// layer, a Progress update) notes it; a worker's heartbeats report how long ago it last did, so a
// training thread that hangs is named even before it first communicates. Lock-free.
void NoteProgress();
// Seconds since the last NoteProgress (since the process started: none yet); 0 while a Progress
// step is under way (loading, partitioning: long steps that count as moving on while they run).
double SecondsSinceProgress();

// Peak resident set size of this process in bytes (from getrusage).
int64_t PeakRssBytes();
// Memory this process may still use: MemAvailable, capped by the cgroup limit when there is one.
int64_t AvailableMemoryBytes();

// Keeps freed memory in the heap for reuse instead of handing it back to the system (glibc: blocks
// below 32 MiB come from the heap, which is not trimmed below 1 GiB), so message buffers of the
// same sizes every step cost no fresh page faults; larger blocks are still mapped and unmapped,
// which keeps the heap from fragmenting around big tensors. Distributed workers call it: the peak
// RSS holds (GCN, RMAT-20, P = 4: 3364 MiB against 3369 without), RSS no longer drops below it.
void ReuseFreedMemory();
// Hands the heap's free pages back to the system (malloc_trim): for after a burst of large
// temporary buffers, such as an exchange's messages, which ReuseFreedMemory would keep resident
// through the peak that follows.
void ReleaseFreedMemory();

}  // namespace fg
