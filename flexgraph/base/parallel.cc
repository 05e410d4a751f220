#include "flexgraph/base/parallel.h"

#include <omp.h>
#if defined(__linux__)
#include <sys/resource.h>
#include <unistd.h>
#endif

#include <atomic>
#include <cstdlib>

extern "C" void openblas_set_num_threads(int);

namespace fg {
namespace {
int InitialThreads() {
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (env != nullptr && std::atoi(env) > 0) return std::atoi(env);
  return omp_get_num_procs();
}
std::atomic<int> g_threads{0};
thread_local bool t_background = false;
thread_local bool t_lowered = false;
}  // namespace

void LowerLoopThread() {
  if (t_lowered) return;
  t_lowered = true;
#if defined(__linux__)
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19);
#endif
}

void BecomeBackground() {
  t_background = true;
  LowerLoopThread();
}

bool InBackground() { return t_background; }

int NumThreads() {
  int n = g_threads.load(std::memory_order_relaxed);
  if (n == 0) {
    SetNumThreads(InitialThreads());
    n = g_threads.load();
  }
  return n;
}

void SetNumThreads(int n) {
  if (n < 1) n = 1;
  g_threads = n;
  openblas_set_num_threads(1);  // GEMMs are split over FlexGraph's threads (ops/cpu/dense.cc)
}

void ParallelBlocks(int64_t n, int num_blocks,
                    const std::function<void(int, int64_t, int64_t)>& body) {
  if (num_blocks < 1) num_blocks = 1;
  const bool background = InBackground();
#pragma omp parallel num_threads(NumThreads()) if (num_blocks > 1)
  {
    if (background) LowerLoopThread();
#pragma omp for schedule(static, 1)
    for (int b = 0; b < num_blocks; ++b) {
      const int64_t lo = n * b / num_blocks, hi = n * (b + 1) / num_blocks;
      body(b, lo, hi);
    }
  }
}

}  // namespace fg
