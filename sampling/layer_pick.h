// Internal to sampling: the arithmetic of layer-wise (LADIES) sampling, shared by the host sampler
// (sampler.cc) and the device one (cuda/layer_pipeline.h), so that both draw the same columns and
// give the same weights, bit for bit.
//
// A batch's columns, in order of first appearance among its rows' entries (each row's root's own
// entry first, then the others in stored order), carry masses (the sum of their entries' squared
// weights, in entry order). Their cumulative masses are summed in blocks of
// kMassBlock columns: each block in order, then the blocks' totals in order, cumulative = the
// block's offset + the sum within it (a device sums the blocks in parallel; the host the same way).
// Draw s of the batch takes the s-th 64-bit word of RandomStream(seed, LayerWiseStream(...)) and
// falls on the first column whose cumulative mass exceeds it.
#pragma once

#include <cmath>
#include <cstdint>

#include "flexgraph/base/hd.h"
#include "flexgraph/base/rng.h"

namespace fg::sampling {

constexpr uint64_t kLayerWiseTag = 0x1AD1E5;
constexpr int64_t kMassBlock = 1024;

// The stream of batch `batch`'s draws at layer `layer`.
FG_HD uint64_t LayerWiseStream(int epoch, int64_t batch, int layer) {
  return MixKey(kLayerWiseTag ^ static_cast<uint64_t>(epoch), static_cast<uint64_t>(batch),
                static_cast<uint64_t>(layer));
}

// Products and sums rounded one at a time: nvcc fuses a product into a following sum unless told
// not to, and so does the host compiler where the CPU has FMA (GCC contracts across inlined calls).
// The one product that a sum takes (a column's mass) is fused on both sides: AddMass.
FG_HD double MulRounded(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
FG_HD double AddRounded(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// A column's mass with entry e's share added: its weight squared (1 unweighted), fused.
FG_HD double AddMass(double mass, const float* weights, int64_t e) {
  const double x = weights != nullptr ? static_cast<double>(weights[e]) : 1.0;
#if defined(__CUDA_ARCH__)
  return __fma_rn(x, x, mass);
#else
  return std::fma(x, x, mass);
#endif
}

// The point of draw s in [0, total): the s-th 64-bit word of the batch's stream (words 2s and
// 2s + 1, high first, as RandomStream::NextU64 reads them), scaled.
FG_HD double DrawPoint(uint64_t seed, uint64_t stream, int64_t s, double total) {
  const Philox4 block = PhiloxBlock(seed, static_cast<uint64_t>(s / 2), stream);
  const bool second = (s % 2) != 0;
  const uint64_t word = (static_cast<uint64_t>(second ? block.v[2] : block.v[0]) << 32) |
                        (second ? block.v[3] : block.v[1]);
  return MulRounded(MulRounded(static_cast<double>(word >> 11), 0x1.0p-53), total);
}

// The column draw point x falls on: the first of the n cumulative masses above x (the last where
// none is: x rounded up to the total).
FG_HD int64_t DrawnColumn(const double* cumulative, int64_t n, double x) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (cumulative[mid] > x) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo < n ? lo : n - 1;
}

// The importance weight of an entry of weight w into a column drawn `draws` times of S draws, whose
// mass is `mass` of `total`: w * draws / (S * mass / total).
FG_HD double KeptEntryWeight(float w, int32_t draws, int64_t layer_size, double mass, double total) {
  const double p = mass / total;
  return MulRounded(static_cast<double>(w), static_cast<double>(draws)) /
         MulRounded(static_cast<double>(layer_size), p);
}

}  // namespace fg::sampling
