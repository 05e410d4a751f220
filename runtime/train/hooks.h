// Epoch hooks: functions a run calls as each epoch starts, on every worker — the extension point
// for plugins loaded with --udf_library (progress exporters, and the fault injection of the
// failure-handling tests). Register at load time:
//
//   static bool registered = (fg::runtime::AddEpochHook([](int rank, int epoch) { ... }), true);
//
// Thread-safe.
#pragma once

#include <functional>

namespace fg::runtime {

// `rank`: the worker's rank (0 in a single process); `epoch`: 1-based, the epoch about to run.
using EpochHook = std::function<void(int rank, int epoch)>;

void AddEpochHook(EpochHook hook);
// Calls every hook in registration order.
void RunEpochHooks(int rank, int epoch);

}  // namespace fg::runtime
