// Philox4x32-10 blocks in AVX2 vectors, identical to PhiloxBlock (base/rng.h) lane by lane: the
// compiler's own vectorisation of the scalar rounds runs at half this rate (vpmuludq for the high
// halves of the products, several independent vectors in flight). CPU only; include where
// __AVX2__ is defined (elsewhere the header is empty).
#pragma once

#if defined(__AVX2__)
#include <immintrin.h>

#include <cstdint>

namespace fg {

// The high halves of the lane-wise 32 x 32-bit products a * m.
inline __m256i MulHi32(__m256i a, __m256i m) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// The ten Philox rounds under `key` over counters held in c (word w of vector h's lanes in c[w][h]).
template <int H>
inline void PhiloxRounds(uint64_t key, __m256i (&c)[4][H]) {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int r = 0; r < 10; ++r) {
    const __m256i vk0 = _mm256_set1_epi32(static_cast<int>(k0));
    const __m256i vk1 = _mm256_set1_epi32(static_cast<int>(k1));
    for (int h = 0; h < H; ++h) {
      const __m256i n0 = _mm256_xor_si256(_mm256_xor_si256(MulHi32(c[2][h], m1), c[1][h]), vk0);
      const __m256i n2 = _mm256_xor_si256(_mm256_xor_si256(MulHi32(c[0][h], m0), c[3][h]), vk1);
      c[1][h] = _mm256_mullo_epi32(c[2][h], m1);
      c[3][h] = _mm256_mullo_epi32(c[0][h], m0);
      c[0][h] = n0;
      c[2][h] = n2;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

// 8 H blocks for key `key` and counters (lo[i], hi[i]), i = 0 .. 8 H - 1: vector h, lane l holds
// word w of block 8 h + l in c[w][h].
template <int H>
inline void PhiloxLanes(uint64_t key, const uint64_t* lo, const uint64_t* hi, __m256i (&c)[4][H]) {
  for (int h = 0; h < H; ++h) {
    alignas(32) uint32_t words[4][8];
    for (int l = 0; l < 8; ++l) {
      words[0][l] = static_cast<uint32_t>(lo[8 * h + l]);
      words[1][l] = static_cast<uint32_t>(lo[8 * h + l] >> 32);
      words[2][l] = static_cast<uint32_t>(hi[8 * h + l]);
      words[3][l] = static_cast<uint32_t>(hi[8 * h + l] >> 32);
    }
    for (int w = 0; w < 4; ++w) c[w][h] = _mm256_load_si256(reinterpret_cast<const __m256i*>(words[w]));
  }
  PhiloxRounds<H>(key, c);
}

// 8 H blocks for key `key` and counters (first + l, hi), l = 0 .. 8 H - 1: vector h, lane l holds
// word w of block 8 h + l in c[w][h].
template <int H>
inline void PhiloxVectors(uint64_t key, uint64_t first, uint64_t hi, __m256i (&c)[4][H]) {
  for (int h = 0; h < H; ++h) {
    alignas(32) uint32_t lo_words[8], hi_words[8];
    for (int l = 0; l < 8; ++l) {
      const uint64_t counter = first + 8 * h + l;
      lo_words[l] = static_cast<uint32_t>(counter);
      hi_words[l] = static_cast<uint32_t>(counter >> 32);
    }
    c[0][h] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo_words));
    c[1][h] = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi_words));
    c[2][h] = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(hi)));
    c[3][h] = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(hi >> 32)));
  }
  PhiloxRounds<H>(key, c);
}

// Vector h of PhiloxVectors block by block: u[k] holds block 8 h + k's four words in its low 128
// bits and block 8 h + k + 4's in its high 128 bits.
template <int H>
inline void BlockWords(const __m256i (&c)[4][H], int h, __m256i u[4]) {
  const __m256i t0 = _mm256_unpacklo_epi32(c[0][h], c[1][h]), t1 = _mm256_unpackhi_epi32(c[0][h], c[1][h]);
  const __m256i t2 = _mm256_unpacklo_epi32(c[2][h], c[3][h]), t3 = _mm256_unpackhi_epi32(c[2][h], c[3][h]);
  u[0] = _mm256_unpacklo_epi64(t0, t2);
  u[1] = _mm256_unpackhi_epi64(t0, t2);
  u[2] = _mm256_unpacklo_epi64(t1, t3);
  u[3] = _mm256_unpackhi_epi64(t1, t3);
}

}  // namespace fg
#endif  // __AVX2__
