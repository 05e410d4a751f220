// Parallel loops over index ranges on OpenMP, with a process-wide thread count.
// Contract: the body must be safe to run concurrently for distinct indices. Results of FlexGraph
// kernels never depend on the thread count: work is split so that each output is written by one
// thread in a fixed order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

namespace fg {

// Number of threads parallel loops use (default: OMP_NUM_THREADS or all cores).
int NumThreads();
// Sets the thread count for FlexGraph loops, GEMMs included (OpenBLAS itself runs single-threaded
// inside them).
void SetNumThreads(int n);

// Makes the calling thread background work for its lifetime: it and the threads of its parallel
// loops run at the lowest scheduling priority (Linux; best effort), so they take the cycles the
// process's other threads leave idle rather than preempting their parallel loops (whose threads
// would wait for the preempted one). For threads made for background work: the priority is not
// raised again.
void BecomeBackground();
// Whether the calling thread is background work (a loop's team threads follow their caller).
bool InBackground();
// Lowers the calling loop thread's priority once (a team thread of a background caller).
void LowerLoopThread();

// Calls body(i) for i in [begin, end), statically chunked over threads.
template <typename F>
void ParallelFor(int64_t begin, int64_t end, F&& body) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  const bool background = InBackground();
#pragma omp parallel num_threads(NumThreads()) if (n > 1)
  {
    if (background) LowerLoopThread();
#pragma omp for schedule(static)
    for (int64_t i = begin; i < end; ++i) body(i);
  }
}

// Calls body(i) for i in [begin, end) with dynamic scheduling in chunks of `grain` (skewed work).
template <typename F>
void ParallelForDynamic(int64_t begin, int64_t end, int64_t grain, F&& body) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  const bool background = InBackground();
#pragma omp parallel num_threads(NumThreads()) if (n > grain)
  {
    if (background) LowerLoopThread();
#pragma omp for schedule(dynamic, grain)
    for (int64_t i = begin; i < end; ++i) body(i);
  }
}

// Calls body(r) for the rows [0, n) of a [n, d] matrix in parallel chunks of about 16K elements (a
// small matrix runs on the calling thread: a parallel region would cost more than its rows).
template <typename F>
void ParallelForRowChunks(int64_t n, int64_t d, F&& body) {
  const int64_t rows = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(d, 1));
  ParallelFor(0, (n + rows - 1) / rows, [&](int64_t c) {
    for (int64_t r = c * rows; r < std::min(n, (c + 1) * rows); ++r) body(r);
  });
}

// Splits [0, n) into NumThreads() contiguous blocks and calls body(block, begin, end) in parallel.
// Block boundaries depend only on n and `num_blocks` (default NumThreads()).
void ParallelBlocks(int64_t n, int num_blocks,
                    const std::function<void(int block, int64_t begin, int64_t end)>& body);

}  // namespace fg
