// The `flexgraph` binary: dispatches subcommands (each with --help). Unknown commands or flags
// print usage and exit with status 2; failed commands print the error and exit with status 1.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "runtime/cli/commands.h"

int main(int argc, char** argv) {
  // How an OpenMP thread waits after its share of a parallel region. `train`, one process using
  // the machine's cores, spins about 1 ms first (30000 pauses): a training step's regions follow
  // each other within microseconds, a sleeping thread woken for each cost a tenth of a mini-batch
  // epoch, and with 3000 pauses small steps (Cora's) ran at half speed in some runs. Other
  // commands (a distributed run's processes, which may share cores, where spinning steals the
  // cycles of the others) sleep at once. libgomp reads its wait policy when it loads, so set it
  // and start again.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    const bool owns_cores = argc > 1 && std::string(argv[1]) == "train";
    setenv("OMP_WAIT_POLICY", owns_cores ? "ACTIVE" : "PASSIVE", 1);
    if (owns_cores) setenv("GOMP_SPINCOUNT", "30000", 0);
    execv("/proc/self/exe", argv);
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return fg::cli::RunCommandLine(args);
  } catch (const std::bad_alloc& e) {
    std::fprintf(stderr, "flexgraph: %s\n", e.what());
    return 1;
  }
}
