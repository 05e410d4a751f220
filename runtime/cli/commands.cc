#include "runtime/cli/commands.h"

#include <cstdio>

#include "runtime/cli/flags.h"

#ifndef FLEXGRAPH_VERSION
#define FLEXGRAPH_VERSION "0.0.0"
#endif

namespace fg::cli {

std::vector<Command>& Commands() {
  static auto* commands = new std::vector<Command>();
  return *commands;
}

CommandRegistrar::CommandRegistrar(std::string name, std::string summary,
                                   std::function<int(const std::vector<std::string>&)> run) {
  Commands().push_back({std::move(name), std::move(summary), std::move(run)});
}

namespace {

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "usage: flexgraph <command> [flags]\n\n"
               "FlexGraph trains graph neural networks written as NAU UDFs.\n\ncommands:\n");
  std::fprintf(out, "  %-12s %s\n", "version", "print the version");
  for (const Command& c : Commands()) std::fprintf(out, "  %-12s %s\n", c.name.c_str(), c.summary.c_str());
  std::fprintf(out, "\nRun 'flexgraph <command> --help' for a command's flags.\n");
}

int Version(const std::vector<std::string>& args) {
  FlagSet flags("version", "Prints the FlexGraph version and build configuration.");
  if (auto s = flags.Parse(args); !s.ok()) {
    std::fprintf(stderr, "flexgraph: %s\n\n%s", std::string(s.message()).c_str(), flags.Usage().c_str());
    return 2;
  }
  if (flags.help_requested()) {
    std::printf("%s", flags.Usage().c_str());
    return 0;
  }
#ifdef FLEXGRAPH_HAVE_CUDA
  const char* cuda = "cuda";
#else
  const char* cuda = "no cuda";
#endif
  std::printf("flexgraph %s (%s)\n", FLEXGRAPH_VERSION, cuda);
  return 0;
}

}  // namespace

int RunCommandLine(const std::vector<std::string>& args) {
  if (args.empty()) {
    PrintUsage(stderr);
    return 2;
  }
  const std::string& cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    PrintUsage(stdout);
    return 0;
  }
  if (cmd == "version" || cmd == "--version") return Version(rest);
  for (const Command& c : Commands()) {
    if (c.name == cmd) return c.run(rest);
  }
  std::fprintf(stderr, "flexgraph: unknown command '%s'\n\n", cmd.c_str());
  PrintUsage(stderr);
  return 2;
}

}  // namespace fg::cli
