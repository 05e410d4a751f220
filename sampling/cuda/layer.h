// Internal to sampling: layer-wise (LADIES) sampling of a bulk's batches on the device
// (device_sampler.cc), with layer_pick.h's arithmetic, so that every batch keeps the host
// sampler's entries with its weights. Works on the calling thread's stream. Free of Abseil so
// that nvcc compiles it.
#pragma once

#include <cstdint>
#include <vector>

#include "sampling/pick.h"

namespace fg::sampling::cuda {

// The stacked rows of K batches (batch-major: group[r] is row r's batch, ascending) in device
// memory: row[r] (a row of `a`, every one valid), group[r]; on the host, entry_offsets (R + 1: the
// exclusive sums of the rows' degrees) and streams[k] (batch k's LayerWiseStream). Each batch draws
// `layer_size` columns among its rows' entries; on return, on the host: kept_offsets (R + 1), the
// kept entries' column ids and, where `a` is weighted, their weights.
void SampleLayerWise(const MatrixView& a, uint64_t seed, int64_t layer_size, const int64_t* row,
                     const int32_t* group, const std::vector<int64_t>& entry_offsets,
                     const std::vector<uint64_t>& streams, std::vector<int64_t>* kept_offsets,
                     std::vector<int32_t>* cols, std::vector<float>* weights);

}  // namespace fg::sampling::cuda
