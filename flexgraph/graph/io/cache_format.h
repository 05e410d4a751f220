// Internal to the binary cache (cache.cc writes it, cache_read.cc reads it): the file's layout —
// a 64-byte header, a table of 136-byte entries, and 64-byte aligned sections — and the CRC-32 both
// sides compute. Thread-safe: constants and pure functions.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "flexgraph/base/parallel.h"
#include "flexgraph/tensor/tensor.h"

namespace fg::graph::io::cache_format {

inline constexpr char kMagic[8] = {'F', 'G', 'C', 'A', 'C', 'H', 'E', '\n'};
inline constexpr uint64_t kAlign = 64;
inline constexpr uint32_t kKindBytes = 3;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t num_sections;
  uint64_t table_offset;
  uint64_t file_size;
  uint32_t table_crc;
  uint32_t header_crc;  // CRC-32 of the bytes before this field
  char reserved[24];
};
static_assert(sizeof(Header) == 64);

struct Entry {
  char name[80];
  uint32_t kind;  // 0 float32, 1 int32, 2 int64, 3 bytes
  uint32_t rank;
  int64_t shape[3];
  uint64_t offset;
  uint64_t nbytes;
  uint32_t crc;
  uint32_t reserved;
};
static_assert(sizeof(Entry) == 136);

inline uint32_t KindOf(DType t) {
  switch (t) {
    case DType::kFloat32: return 0;
    case DType::kInt32: return 1;
    case DType::kInt64: return 2;
  }
  return 0;
}

// CRC-32 of a buffer, computed over 8 MiB blocks in parallel and combined.
inline uint32_t Crc(const char* data, uint64_t n) {
  constexpr uint64_t kBlock = 8 << 20;
  const int64_t blocks = static_cast<int64_t>((n + kBlock - 1) / kBlock);
  if (blocks <= 1) return static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(data), n));
  std::vector<uLong> crcs(blocks);
  ParallelForDynamic(0, blocks, 1, [&](int64_t b) {
    const uint64_t lo = b * kBlock, len = std::min(kBlock, n - lo);
    crcs[b] = crc32(0, reinterpret_cast<const Bytef*>(data + lo), len);
  });
  uLong crc = crcs[0];
  for (int64_t b = 1; b < blocks; ++b) {
    crc = crc32_combine(crc, crcs[b], static_cast<z_off_t>(std::min(kBlock, n - b * kBlock)));
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace fg::graph::io::cache_format
