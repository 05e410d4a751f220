// Internal to sampling: the CUDA kernels of node-wise sampling (device_sampler.cc), one thread per
// stacked row running pick.h's steps, on the calling thread's stream. Every pointer (the views'
// too) is device memory. Free of Abseil so that nvcc compiles it.
#pragma once

#include <cstdint>

#include "sampling/pick.h"

namespace fg::sampling::cuda {

// For the n stacked frontier vertices: row[r], their rows of `a`, and kept[r], the entries each
// keeps: min(fanout, degree), all of them for fanout 0. *missing (initially -1, i.e. all bits
// set) becomes the first position r whose vertex has no row, if any.
void LaunchRows(const MatrixView& a, const int64_t* vertices, int64_t n, int fanout, int64_t* row,
                int64_t* kept, int64_t* missing);

// The kept entries of every stacked row r (sampling/pick.h; offsets: the exclusive sum of kept):
// cols and, where `a` is weighted, weights at offsets[r] .. offsets[r + 1]. Row r belongs to group
// group[r], whose stream prefix is prefix[group[r]].
void LaunchSampleRows(const MatrixView& a, uint64_t seed, const uint64_t* prefix, const int32_t* group,
                      const int64_t* vertices, const int64_t* row, const int64_t* offsets, int64_t n,
                      int32_t* cols, float* weights);

}  // namespace fg::sampling::cuda
