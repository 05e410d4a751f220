// The host block cache: freed blocks are reused (mapped ones taken whole up to twice the request, or
// grown), and the cache never lifts the blocks held (in use and cached) above the most ever in use
// by more than an eighth of it — or, for alternating phases (SetHostCacheForAlternatingPhases), the
// largest block where that is more, within which two alternating phases keep each other's blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "flexgraph/tensor/tensor.h"

namespace fg {
namespace {

constexpr int64_t kMiB = 1 << 20;

// The most the blocks held may reach: the peak in use plus an eighth, or (alternating phases) the
// largest block where that is more.
size_t Budget(const CpuAllocatorStats& s, bool alternating = false) {
  return s.peak_bytes_in_use + std::max(s.peak_bytes_in_use / 8, alternating ? s.largest_block : size_t{0});
}

// Returns every cached block to the system (room for more than any budget).
void EmptyCache() { MakeRoomForHostBuffers(size_t{1} << 60); }

// A float tensor of `mib` MiB.
Tensor Block(int64_t mib) { return Tensor::Empty({mib * kMiB / 4}); }

// Every float of `t` written and read back.
bool Writable(Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(i % 1000);
  for (int64_t i = 0; i < t.numel(); i += 4099) {
    if (t.f32()[i] != static_cast<float>(i % 1000)) return false;
  }
  return true;
}

TEST(CpuBlockCacheTest, ReusesAFreedBlockOfTheSameSize) {
  const CpuAllocatorStats before = GetCpuAllocatorStats();
  { Tensor a = Block(6); }
  const CpuAllocatorStats freed = GetCpuAllocatorStats();
  EXPECT_EQ(freed.bytes_cached, before.bytes_cached + 6 * kMiB);
  { Tensor b = Block(6); }
  const CpuAllocatorStats after = GetCpuAllocatorStats();
  EXPECT_EQ(after.cache_hits, freed.cache_hits + 1);
  EXPECT_EQ(after.fresh_blocks, freed.fresh_blocks);
}

TEST(CpuBlockCacheTest, CachedBlocksNeverRaiseTheHeldBytesAboveTheBudget) {
  // Ever larger tensors, one at a time: each is a new peak and the largest block, and the blocks
  // freed before it stay cached only as far as the budget allows.
  for (int64_t mib : {40, 56, 72, 200, 300}) {
    Tensor t = Block(mib);
    const CpuAllocatorStats s = GetCpuAllocatorStats();
    EXPECT_LE(s.bytes_in_use + s.bytes_cached, Budget(s)) << mib << " MiB";
    EXPECT_GE(s.largest_block, static_cast<size_t>(mib * kMiB));
  }
  // Below the peak, a freed block stays for reuse.
  Tensor a = Block(40);
  Tensor b = Block(24);
  const CpuAllocatorStats s = GetCpuAllocatorStats();
  EXPECT_LE(s.bytes_in_use + s.bytes_cached, Budget(s));
  EXPECT_GE(s.bytes_in_use, 64 * kMiB);
}

// Mini-batch steps (several small blocks at once) between full-graph evaluations (two large ones):
// together they hold more than either phase's peak plus an eighth, and after the first round
// neither phase faults a block in again.
TEST(CpuBlockCacheTest, AlternatingPhasesKeepEachOthersBlocks) {
  SetHostCacheForAlternatingPhases(true);
  EmptyCache();
  // Evaluation blocks that make a new peak whatever ran before, and steps that together hold half
  // of one: both phases at once exceed the peak by more than an eighth.
  const int64_t e = std::max<int64_t>(256, static_cast<int64_t>(GetCpuAllocatorStats().peak_bytes_in_use / kMiB));
  const int64_t t = e / 8;
  const Tensor base = Block(64);  // the dataset, in use throughout
  auto evaluate = [&] {
    Tensor x = Block(e), y = Block(e);
    EXPECT_TRUE(Writable(x) && Writable(y));
  };
  auto steps = [&] {
    for (int step = 0; step < 4; ++step) {
      std::vector<Tensor> batch;
      for (int64_t i = 0; i < 4; ++i) batch.push_back(Block(t - i - step % 2));
    }
  };
  evaluate();
  steps();
  const CpuAllocatorStats first = GetCpuAllocatorStats();
  ASSERT_GT((4 * t - 7) * kMiB, static_cast<int64_t>(first.peak_bytes_in_use / 8))
      << "the steps fit within an eighth of the peak: nothing to show";
  for (int round = 0; round < 3; ++round) {
    evaluate();
    steps();
  }
  const CpuAllocatorStats later = GetCpuAllocatorStats();
  EXPECT_EQ(later.fresh_bytes, first.fresh_bytes);
  EXPECT_LE(later.bytes_in_use + later.bytes_cached, Budget(later, true));
  SetHostCacheForAlternatingPhases(false);
}

// Full-graph training repeats one phase: a freed large block (a worker's features or exchange
// buffers) does not stay cached above the peak plus an eighth when smaller blocks are taken fresh
// (it once did, up to the largest block: 410 MiB of RSS per RMAT-20 worker).
TEST(CpuBlockCacheTest, OnePhaseKeepsAtMostAnEighthAboveThePeak) {
  EmptyCache();
  const int64_t e = std::max<int64_t>(512, static_cast<int64_t>(GetCpuAllocatorStats().peak_bytes_in_use / kMiB));
  const Tensor base = Block(64);
  { Tensor big = Block(e); }                 // the peak; then cached
  const int64_t small = (64 + e) / 8 + 16;  // more than an eighth of the peak, under half of `big`
  Tensor t = Block(small);
  const CpuAllocatorStats s = GetCpuAllocatorStats();
  EXPECT_LE(s.bytes_in_use + s.bytes_cached, Budget(s)) << "the " << e << " MiB block stayed cached";
  EXPECT_TRUE(Writable(t));
}

TEST(CpuBlockCacheTest, AMappedBlockOfAnotherSizeIsAdaptedInsteadOfFaultedAfresh) {
  EmptyCache();
  { Tensor a = Block(8); }
  const CpuAllocatorStats start = GetCpuAllocatorStats();
  {
    Tensor grown = Block(12);  // the cached 8 MiB block grows by 4 MiB
    const CpuAllocatorStats s = GetCpuAllocatorStats();
    EXPECT_EQ(s.fresh_blocks, start.fresh_blocks);
    EXPECT_EQ(s.fresh_bytes, start.fresh_bytes + 4 * kMiB);
    EXPECT_EQ(s.cache_hits, start.cache_hits + 1);
    EXPECT_EQ(s.bytes_cached, start.bytes_cached - 8 * kMiB);
    EXPECT_EQ(s.bytes_in_use, start.bytes_in_use + 12 * kMiB);
    EXPECT_TRUE(Writable(grown));
  }
  {
    Tensor smaller = Block(7);  // the cached 12 MiB block, whole: its pages are resident
    const CpuAllocatorStats s = GetCpuAllocatorStats();
    EXPECT_EQ(s.fresh_blocks, start.fresh_blocks);
    EXPECT_EQ(s.fresh_bytes, start.fresh_bytes + 4 * kMiB);
    EXPECT_EQ(s.bytes_cached, start.bytes_cached - 8 * kMiB);
    EXPECT_EQ(s.bytes_in_use, start.bytes_in_use + 12 * kMiB);
    EXPECT_TRUE(Writable(smaller));
  }
  const CpuAllocatorStats end = GetCpuAllocatorStats();
  EXPECT_EQ(end.bytes_in_use, start.bytes_in_use);
  EXPECT_EQ(end.bytes_cached, start.bytes_cached + 4 * kMiB);
}

TEST(CpuBlockCacheTest, ABlockMoreThanTwiceTheRequestStaysWholeForItsOwnSize) {
  // A full-graph evaluation's block between mini-batch steps: small requests leave it whole, and
  // the next request of its size takes it without faulting.
  EmptyCache();
  { Tensor big = Block(64); }
  const CpuAllocatorStats start = GetCpuAllocatorStats();
  {
    Tensor small = Block(5);
    EXPECT_TRUE(Writable(small));
  }
  const CpuAllocatorStats mid = GetCpuAllocatorStats();
  EXPECT_GE(mid.bytes_cached, start.bytes_cached);
  {
    Tensor again = Block(64);
    const CpuAllocatorStats s = GetCpuAllocatorStats();
    EXPECT_EQ(s.fresh_blocks, mid.fresh_blocks);
    EXPECT_EQ(s.cache_hits, mid.cache_hits + 1);
  }
}

TEST(CpuBlockCacheTest, MakesRoomForOtherBuffersUnderThePeak) {
  { Tensor a = Block(48), b = Block(32); }  // both cached now
  const CpuAllocatorStats before = GetCpuAllocatorStats();
  ASSERT_GE(before.bytes_cached, 80 * kMiB);
  // Buffers that fit under the budget only once 40 MiB of cached blocks have gone.
  const size_t bytes = Budget(before) - before.bytes_in_use - before.bytes_cached + 40 * kMiB;
  MakeRoomForHostBuffers(bytes);
  const CpuAllocatorStats after = GetCpuAllocatorStats();
  EXPECT_LE(after.bytes_in_use + after.bytes_cached + bytes, Budget(after));
  EXPECT_LE(after.bytes_cached, before.bytes_cached - 40 * kMiB);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
}

}  // namespace
}  // namespace fg
