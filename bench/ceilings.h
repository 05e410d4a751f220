// The machine's ceilings the benchmarks report their fractions of, measured where they run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <cblas.h>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/timer.h"

extern "C" void openblas_set_num_threads(int);

namespace fg::bench {

// STREAM triad a = b + s c over 3 x 256 MiB on all threads: bytes moved per second (best of 20).
inline double TriadBytesPerSecond() {
  const int64_t n = int64_t{64} << 20;
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  double best = 0;
  for (int rep = 0; rep < 20; ++rep) {
    Stopwatch w;
    ParallelFor(0, n, [&](int64_t i) { a[i] = b[i] + 3.0f * c[i]; });
    best = std::max(best, 3.0 * 4.0 * n / w.Seconds());
  }
  return a[n / 2] == 7.0f ? best : 0;
}

// Single-precision GEMM flops per second of one cblas_sgemm call on OpenBLAS's own NumThreads()
// threads — not FlexGraph's GEMM path, which this ceiling judges: the best over a square product
// and the tall-skinny shape of a GNN update, best of 5 each.
inline double GemmFlopsPerSecond() {
  struct Shape { int64_t m, k, n; };
  double best = 0;
  openblas_set_num_threads(NumThreads());
  for (const Shape& s : {Shape{2048, 2048, 2048}, Shape{65536, 256, 256}}) {
    std::vector<float> a(s.m * s.k, 0.5f), b(s.k * s.n, 0.25f), c(s.m * s.n);
    auto gemm = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n,
                  0.0f, c.data(), s.n);
    };
    gemm();  // warm-up: BLAS buffers, page faults of the output
    for (int rep = 0; rep < 5; ++rep) {
      Stopwatch w;
      gemm();
      best = std::max(best, 2.0 * s.m * s.k * s.n / w.Seconds());
    }
    if (c[0] != 0.125f * static_cast<float>(s.k)) best = 0;
  }
  openblas_set_num_threads(1);  // FlexGraph's threads each call single-threaded OpenBLAS
  return best;
}

// Bytes of the last-level cache from sysfs (the highest cache index of cpu0), 0 when unknown.
inline int64_t LastLevelCacheBytes() {
  int64_t bytes = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(f >> text) || text.empty()) continue;
    char* end = nullptr;
    int64_t value = std::strtoll(text.c_str(), &end, 10);
    const char unit = *end;
    if (unit == 'K') value <<= 10;
    if (unit == 'M') value <<= 20;
    bytes = std::max(bytes, value);
  }
  return bytes;
}

}  // namespace fg::bench
