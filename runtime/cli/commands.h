// Subcommands of the `flexgraph` binary. Each takes its arguments after the command name and
// returns the process exit status (0 ok, 1 failure, 2 usage error).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace fg::cli {

struct Command {
  std::string name;
  std::string summary;
  std::function<int(const std::vector<std::string>& args)> run;
};

// All registered subcommands in display order.
std::vector<Command>& Commands();
// Adds a command at static-initialisation time.
struct CommandRegistrar {
  CommandRegistrar(std::string name, std::string summary,
                   std::function<int(const std::vector<std::string>&)> run);
};

int RunCommandLine(const std::vector<std::string>& args);

}  // namespace fg::cli
