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
  // OpenMP threads that spin after each parallel region steal the cores OpenBLAS threads and other
  // processes need; libgomp reads its wait policy when it loads, so set it and start again.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
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
