#include "flexgraph/base/rng.h"

#include "flexgraph/base/rng_avx2.h"

namespace fg {

void PhiloxBlocks(uint64_t key, const uint64_t* lo, const uint64_t* hi, int64_t n, uint32_t* words) {
  int64_t i = 0;
#if defined(__AVX2__)
  constexpr int kH = 4;  // 32 blocks a call
  for (; i + 8 * kH <= n; i += 8 * kH) {
    __m256i c[4][kH];
    PhiloxLanes<kH>(key, lo + i, hi + i, c);
    for (int h = 0; h < kH; ++h) {
      __m256i u[4];
      BlockWords<kH>(c, h, u);
      uint32_t* out = words + 4 * (i + 8 * h);
      for (int k = 0; k < 4; ++k) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 * k), _mm256_castsi256_si128(u[k]));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 * (k + 4)), _mm256_extracti128_si256(u[k], 1));
      }
    }
  }
#endif
  for (; i < n; ++i) {
    const Philox4 b = PhiloxBlock(key, lo[i], hi[i]);
    for (int w = 0; w < 4; ++w) words[4 * i + w] = b.v[w];
  }
}

}  // namespace fg
