// The machine's ceilings the benchmarks report their fractions of, measured where they run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/timer.h"

namespace fg::bench {

// STREAM triad a = b + s c over 3 x 256 MiB on all threads: bytes moved per second (best of 5).
inline double TriadBytesPerSecond() {
  const int64_t n = int64_t{64} << 20;
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    Stopwatch w;
    ParallelFor(0, n, [&](int64_t i) { a[i] = b[i] + 3.0f * c[i]; });
    best = std::max(best, 3.0 * 4.0 * n / w.Seconds());
  }
  return a[n / 2] == 7.0f ? best : 0;
}

}  // namespace fg::bench
