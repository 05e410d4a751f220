// Per-stage wall time of a run (selection, message, aggregation, update, loss, backward, optimizer,
// evaluation), accumulated by RAII ScopedTimers. Thread-compatible.
#pragma once

#include <string>

namespace fg::nau {

struct ExecStats {
  double selection = 0, message = 0, aggregation = 0, update = 0, loss = 0, backward = 0,
         optimizer = 0, evaluation = 0;
  double Total() const {
    return selection + message + aggregation + update + loss + backward + optimizer;
  }
  // "selection 2% | aggregation 40% | ..." over the training stages.
  std::string Shares() const;
};

}  // namespace fg::nau
