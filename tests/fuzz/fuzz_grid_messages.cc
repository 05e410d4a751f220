// libFuzzer target: the messages a process-grid peer sends (runtime/grid/blocks.h) — a sparse block
// (DecodeBlock), dense rows (BytesToTensor) and the set-up's matrix entries (DecodeBlockRows, from
// up to four senders) — decoded from the input into blocks of a small permuted vertex set. Each
// decode must end in a value of the announced shape or an error naming the peer, never crash or
// trip a sanitizer.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/grid/blocks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fg;  // NOLINT
  FuzzedDataProvider in(data, size);
  const int64_t n = in.ConsumeIntegralInRange<int64_t>(1, 64);
  const int parts = in.ConsumeIntegralInRange<int>(1, 4);
  const grid::VertexBlocks blocks = grid::VertexBlocks::Make(n, parts, in.ConsumeIntegral<uint8_t>());
  const int i = in.ConsumeIntegralInRange<int>(0, parts - 1);
  switch (in.ConsumeIntegralInRange<int>(0, 2)) {
    case 0: {
      const int64_t cols = in.ConsumeIntegralInRange<int64_t>(0, n);
      auto block = grid::DecodeBlock(in.ConsumeRemainingBytesAsString(), blocks.Size(i), cols, 1);
      if (block.ok() && (block->num_rows != blocks.Size(i) || block->num_cols != cols)) std::abort();
      break;
    }
    case 1: {
      const int64_t w = in.ConsumeIntegralInRange<int64_t>(1, 8);
      auto rows = grid::BytesToTensor(in.ConsumeRemainingBytesAsString(), blocks.Size(i), w, 1);
      if (rows.ok() && rows->numel() != blocks.Size(i) * w) std::abort();
      break;
    }
    default: {
      std::vector<std::string> got(in.ConsumeIntegralInRange<int>(1, 4));
      for (std::string& g : got) g = in.ConsumeRandomLengthString(512);
      auto rows = grid::DecodeBlockRows(got, blocks, i);
      if (rows.ok() && (rows->num_rows != blocks.Size(i) || rows->num_cols != n)) std::abort();
      break;
    }
  }
  return 0;
}
