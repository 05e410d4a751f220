// Fault injection for fault-tolerance tests (scripts/soak.sh, the launch tests).
//
//   FG_FAULT=<process>:<point>[:<n>[:<action>]]
//                                      the process named <process> ("coordinator", "worker1",
//                                      "train", or "*" for any) kills itself with SIGKILL the n-th
//                                      time (default 1) it reaches FaultPoint(<point>); with the
//                                      action "hang" (default "kill"), the thread that reaches it
//                                      blocks forever instead while the process's other threads
//                                      (a worker's heartbeats) go on: a hung training thread.
//   FG_FAULT_MARK=<file>               fire at most once across processes and restarts: the fault
//                                      fires only if it can create <file>.
//
// Unset, a fault point costs one load of a cached flag. Points are listed in fault.cc.
#pragma once

#include <string_view>

namespace fg {

// Names this process for FG_FAULT (set once its role is known: a worker after registration).
void SetFaultProcess(std::string_view name);

// A place where a crash must leave nothing lost or half-written.
void FaultPoint(std::string_view point);

}  // namespace fg
