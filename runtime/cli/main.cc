// The `flexgraph` binary: dispatches subcommands (each with --help). Unknown commands or flags
// print usage and exit with status 2; failed commands print the error and exit with status 1.
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/cli/commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return fg::cli::RunCommandLine(args);
}
