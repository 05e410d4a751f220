// Fault injection for the failure-handling tests, loaded into `flexgraph` with --udf_library:
// FG_FAULT_KILL="rank:epoch[:marker]" kills that worker (SIGKILL) as it starts that epoch; with a
// marker path, only when the marker does not exist yet (it is created first), so a restarted run
// proceeds.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/hooks.h"

namespace {

void MaybeKill(int rank, int epoch) {
  const char* spec = std::getenv("FG_FAULT_KILL");
  if (spec == nullptr) return;
  int r = -1, e = -1;
  char marker[4096] = "";
  if (std::sscanf(spec, "%d:%d:%4095s", &r, &e, marker) < 2 || r != rank || e != epoch) return;
  if (marker[0] != '\0') {
    if (std::filesystem::exists(marker)) return;
    std::ofstream(marker) << "killed\n";
  }
  std::fprintf(stderr, "fault injection: killing worker %d at epoch %d\n", rank, epoch);
  std::fflush(stderr);
  raise(SIGKILL);
}

const bool registered = (fg::runtime::AddEpochHook(MaybeKill), true);

}  // namespace
