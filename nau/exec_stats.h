// Per-stage wall time of a run (selection, message, aggregation, update, loss, backward, optimizer,
// evaluation), accumulated by RAII ScopedTimers. Thread-compatible.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fg::nau {

struct ExecStats {
  double selection = 0, message = 0, aggregation = 0, update = 0, loss = 0, backward = 0,
         optimizer = 0, evaluation = 0;
  double Total() const {
    return selection + message + aggregation + update + loss + backward + optimizer;
  }
  // (name, seconds) of every stage, evaluation last.
  std::vector<std::pair<const char*, double>> Named() const {
    return {{"selection", selection}, {"message", message}, {"aggregation", aggregation},
            {"update", update},       {"loss", loss},       {"backward", backward},
            {"optimizer", optimizer}, {"evaluation", evaluation}};
  }
  // The time spent between two snapshots.
  ExecStats operator-(const ExecStats& o) const {
    return {selection - o.selection, message - o.message, aggregation - o.aggregation,
            update - o.update,       loss - o.loss,       backward - o.backward,
            optimizer - o.optimizer, evaluation - o.evaluation};
  }
  // "selection 2% | aggregation 40% | ..." over the training stages.
  std::string Shares() const;
};

}  // namespace fg::nau
