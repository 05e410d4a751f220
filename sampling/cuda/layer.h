// Internal to sampling: layer-wise (LADIES) sampling of a bulk's batches on the device
// (device_sampler.cc): layer_pipeline.h's RunLayerWise on the CUDA backend, so that every batch
// keeps the host sampler's entries with its weights. Works on the calling thread's stream. Free of
// Abseil so that nvcc compiles it.
#pragma once

#include <cstdint>
#include <vector>

#include "sampling/pick.h"

namespace fg::sampling::cuda {

// RunLayerWise (layer_pipeline.h) with `row` and `group` in device memory.
void SampleLayerWise(const MatrixView& a, uint64_t seed, int64_t layer_size, const int64_t* row,
                     const int32_t* group, const std::vector<int64_t>& entry_offsets,
                     const std::vector<uint64_t>& streams, std::vector<int64_t>* kept_offsets,
                     std::vector<int32_t>* cols, std::vector<float>* weights);

}  // namespace fg::sampling::cuda
