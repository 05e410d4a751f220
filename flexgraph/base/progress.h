// Progress display for long work (loading, partitioning, HDG building, epochs): one line per step
// on stderr, rate-limited, with elapsed time. Thread-safe Update(). Also this process's memory
// figures (peak resident, still available).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "flexgraph/base/timer.h"

namespace fg {

class Progress {
 public:
  // `total` may be 0 when unknown. Quiet progress prints nothing (tests, --quiet).
  Progress(std::string what, int64_t total);
  ~Progress();
  void Update(int64_t done);  // prints at most ~1 line per second
  void Finish(const std::string& summary = "");
  static void SetQuiet(bool quiet);
  static bool Quiet();

 private:
  std::string what_;
  int64_t total_;
  Stopwatch watch_;
  std::mutex mu_;
  double last_print_ = 0;
  bool finished_ = false;
};

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
