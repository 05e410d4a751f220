// --export_hdg: every layer's HDG as .npy arrays in the source dataset's vertex ids, the same files
// however many workers selected it. Per layer i, in DIR:
//   layer<i>.roots.npy                 int64, the roots' ids, ascending
//   layer<i>.level<k>.indptr.npy       int64 [rows + 1] of level k (k = levels .. 1)
//   layer<i>.level<k>.indices.npy      int32: level 1, vertex ids; above, rows of level k - 1
//   layer<i>.level<k>.weights.npy      float, where the schema weighs level k
// Level L's rows are the roots; every level's rows follow their parents' order, so each root's
// subtree is contiguous at every level. A flat (one-level) neighbourhood is a set and is written
// by ascending source id (then weight); deeper levels keep the selection's order.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "flexgraph/tensor/tensor.h"
#include "hdg/hdg.h"
#include "runtime/comm/communicator.h"

namespace fg::runtime {

// `layers`: this worker's HDGs (roots and level-1 children are global vertex ids); `table_ids` and
// `table_keys` (int64): the global ids of the vertices this worker owns and their source-dataset
// ids. Collective when `comm` is given (worker 0 gathers and writes); alone, writes directly.
absl::Status ExportHdgs(Communicator* comm, const std::vector<const hdg::Hdg*>& layers, const Tensor& table_ids,
                        const Tensor& table_keys, const std::string& dir);

}  // namespace fg::runtime
