// Prints the machine's measured ceilings as JSON, for the harness's floors:
//   machine_ceilings [--threads N]
// {"threads": N, "triad_bytes_per_s": ..., "gemm_flops_per_s": ..., "llc_bytes": ...}
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench/ceilings.h"
#include "flexgraph/base/parallel.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      const int threads = std::atoi(argv[++i]);
      if (threads < 1) {
        std::fprintf(stderr, "--threads %s: expected a positive count\n", argv[i]);
        return 2;
      }
      fg::SetNumThreads(threads);
    } else {
      std::fprintf(stderr, "%s: unknown argument (usage: machine_ceilings [--threads N])\n", argv[i]);
      return 2;
    }
  }
  const double triad = fg::bench::TriadBytesPerSecond();
  const double gemm = fg::bench::GemmFlopsPerSecond();
  std::printf("{\"threads\": %d, \"triad_bytes_per_s\": %.6g, \"gemm_flops_per_s\": %.6g, \"llc_bytes\": %lld}\n",
              fg::NumThreads(), triad, gemm, static_cast<long long>(fg::bench::LastLevelCacheBytes()));
  return triad > 0 && gemm > 0 ? 0 : 1;
}
