// libFuzzer target: the metadata of a partitioned dataset (text-format flexgraph.PartitionedDataset
// plus its consistency checks). Anything accepted describes itself without failing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "partition/partitioned_dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto meta = fg::partition::ParsePartitionMeta(text, "fuzz/partition.txtpb");
  if (meta.ok() && fg::partition::DescribePartitioned(*meta).empty()) __builtin_trap();
  return 0;
}
