// Wall-clock timing: Stopwatch, and ScopedTimer which adds its lifetime to a counter (RAII).
// Thread-compatible.
#pragma once

#include <chrono>

namespace fg {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void Reset() { start_ = std::chrono::steady_clock::now(); }
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Adds the seconds between construction and destruction to *total (if total is non-null).
class ScopedTimer {
 public:
  explicit ScopedTimer(double* total) : total_(total) {}
  ~ScopedTimer() {
    if (total_ != nullptr) *total_ += watch_.Seconds();
  }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  double* total_;
  Stopwatch watch_;
};

}  // namespace fg
