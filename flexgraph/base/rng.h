// Counter-based random numbers (Philox4x32-10). A stream is keyed by (seed, stream id): draws never
// depend on thread count, partitioning or worker count as long as the stream id is derived from
// global quantities (epoch, layer, global vertex id). Thread-compatible: one RandomStream per thread.
//
//   RandomStream rng(seed, MixKey(epoch, layer, global_vertex));
//   float u = rng.Uniform();
#pragma once

#include <cmath>
#include <cstdint>

#include "flexgraph/base/hd.h"

namespace fg {

struct Philox4 {
  uint32_t v[4];
};

// One Philox4x32-10 block for a 64-bit key and a 128-bit counter.
FG_HD Philox4 PhiloxBlock(uint64_t key, uint64_t counter_lo, uint64_t counter_hi) {
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  uint32_t c0 = static_cast<uint32_t>(counter_lo), c1 = static_cast<uint32_t>(counter_lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n1 = static_cast<uint32_t>(p1);
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    const uint32_t n3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// One step of MixKey: h with `part` mixed in (splitmix64 finalizer).
FG_HD uint64_t MixStep(uint64_t h, uint64_t part) {
  h ^= part + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBull;
  h ^= h >> 31;
  return h;
}
constexpr uint64_t kMixKeyStart = 0x9E3779B97F4A7C15ull;

// Mixes several integers into one 64-bit stream id: MixStep over a, b, c, d from kMixKeyStart (so
// keys that share leading parts can share their first steps).
FG_HD uint64_t MixKey(uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0) {
  return MixStep(MixStep(MixStep(MixStep(kMixKeyStart, a), b), c), d);
}

// Blocks i = 0 .. n - 1 under `key` with counters (lo[i], hi[i]): words[4 i + w] is word w of
// PhiloxBlock(key, lo[i], hi[i]). Many at once in AVX2 lanes where the CPU has them. Host only.
void PhiloxBlocks(uint64_t key, const uint64_t* lo, const uint64_t* hi, int64_t n, uint32_t* words);

// Uniform float in [0, 1) from 32 random bits.
FG_HD float U32ToUniform(uint32_t x) { return (x >> 8) * (1.0f / 16777216.0f); }

// A sequential stream of random numbers keyed by (seed, stream).
class RandomStream {
 public:
  RandomStream(uint64_t seed, uint64_t stream) : key_(seed), stream_(stream) {}

  uint32_t NextU32() {
    if (pos_ == 4) {
      block_ = PhiloxBlock(key_, counter_++, stream_);
      pos_ = 0;
    }
    return block_.v[pos_++];
  }
  uint64_t NextU64() { return (static_cast<uint64_t>(NextU32()) << 32) | NextU32(); }
  // Uniform in [0, 1).
  float Uniform() { return U32ToUniform(NextU32()); }
  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias < 2^-32 * n).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(NextU64()) * n) >> 64);
  }
  // Standard normal (Box-Muller).
  float Normal() {
    float u1 = Uniform(), u2 = Uniform();
    if (u1 < 1e-7f) u1 = 1e-7f;
    return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853071795864f * u2);
  }
  uint64_t counter() const { return counter_; }
  // 32-bit draws taken so far; Seek(n) continues a stream as if n had been taken (a stream that
  // travels between workers as (seed, stream, draws)).
  uint64_t draws() const { return counter_ * 4 - (4 - pos_); }
  void Seek(uint64_t n) {
    counter_ = n / 4;
    pos_ = 4;
    if (n % 4 != 0) {
      block_ = PhiloxBlock(key_, counter_++, stream_);
      pos_ = static_cast<int>(n % 4);
    }
  }

 private:
  uint64_t key_, stream_;
  uint64_t counter_ = 0;
  Philox4 block_{};
  int pos_ = 4;
};

}  // namespace fg
