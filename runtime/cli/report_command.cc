// `flexgraph report RUN -o FILE.html [--partition P.json] [--title T]`: the run report, written by
// the Python package (python/flexgraph/report.py); this command hands its arguments over to
//   $FLEXGRAPH_PYTHON (default python3) -m flexgraph.report ...
// by exec, so the exit status, output and signals are Python's. The package is looked for where
// Python finds it (PYTHONPATH, an installed package), then beside this binary when it is the one
// `pip install .` puts inside the package (flexgraph/bin/flexgraph), then in the source tree's
// python/ folder when this binary is the build tree's. A missing interpreter, package or plotly is
// reported by name with how to get it (exit status 1).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/cli/commands.h"

namespace fg::cli {
namespace {

namespace fs = std::filesystem;

constexpr char kUsage[] =
    "usage: flexgraph report RUN -o FILE.html [--partition PARTITION.json] [--title TEXT]\n\n"
    "Writes one self-contained HTML page of plots from a training run: a summary JSON (--summary_json\n"
    "of train or launch) or a launch's log directory. Runs `python3 -m flexgraph.report` (Python 3 with\n"
    "the flexgraph package and plotly: pip install '.[report]' from the repository); FLEXGRAPH_PYTHON\n"
    "names another interpreter.\n";

// Runs inside Python: imports what the report needs, naming what is missing, then hands over.
// The working directory leaves sys.path: the repository root's C++ folder flexgraph/ would
// otherwise shadow an installed package as a namespace package.
constexpr char kBootstrap[] = R"PY(import sys
if sys.path and sys.path[0] == "":
    del sys.path[0]
try:
    import flexgraph.report as report
    import plotly
except ImportError as e:
    what = e.name or str(e)
    how = ("pip install plotly" if what.split(".")[0] == "plotly" else
           "pip install '.[report]' from the FlexGraph repository, or set PYTHONPATH to its python/ folder")
    sys.stderr.write("flexgraph report: Python %s (%s) cannot import %s: %s\n"
                     % (sys.version.split()[0], sys.executable, what, how))
    sys.exit(1)
sys.exit(report.main(sys.argv[1:]))
)PY";

// The package folders this binary knows of (see the file comment), existing ones only.
std::vector<std::string> PackageRoots() {
  std::vector<std::string> roots;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return roots;
  // pip's layout: <site-packages>/flexgraph/bin/flexgraph.
  const fs::path package = exe.parent_path().parent_path();
  if (package.filename() == "flexgraph" && fs::exists(package / "report.py", ec)) {
    roots.push_back(package.parent_path().string());
  }
#if defined(FLEXGRAPH_SOURCE_DIR) && defined(FLEXGRAPH_BINARY_DIR)
  // The build tree's binary: the source tree's package.
  const std::string build_dir = FLEXGRAPH_BINARY_DIR;
  const std::string exe_dir = exe.parent_path().string();
  const fs::path source_python = fs::path(FLEXGRAPH_SOURCE_DIR) / "python";
  if (exe_dir.rfind(build_dir + "/", 0) == 0 && fs::exists(source_python / "flexgraph" / "report.py", ec)) {
    roots.push_back(source_python.string());
  }
#endif
  return roots;
}

int Report(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    }
  }
  if (args.empty()) {
    std::fprintf(stderr, "flexgraph report: RUN and -o FILE.html are required\n\n%s", kUsage);
    return 2;
  }
  // Python's own search path first; this binary's candidates after it.
  std::string path;
  if (const char* user = std::getenv("PYTHONPATH"); user != nullptr && *user != '\0') path = user;
  for (const std::string& root : PackageRoots()) path += (path.empty() ? "" : ":") + root;
  if (!path.empty()) setenv("PYTHONPATH", path.c_str(), 1);

  const char* env_python = std::getenv("FLEXGRAPH_PYTHON");
  const std::string python = env_python != nullptr && *env_python != '\0' ? env_python : "python3";
  std::vector<std::string> argv = {python, "-c", kBootstrap};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  for (std::string& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  std::fflush(nullptr);
  execvp(c_argv[0], c_argv.data());
  const int err = errno;
  std::fprintf(stderr,
               "flexgraph report: cannot run the Python interpreter '%s' (%s): the report is written by "
               "Python 3 with the flexgraph package and plotly; install python3, or set FLEXGRAPH_PYTHON "
               "to an interpreter\n",
               python.c_str(), std::strerror(err));
  return 1;
}

CommandRegistrar report_command("report", "an HTML page of plots from a run (summary JSON or launch logs; Python)",
                                Report);

}  // namespace
}  // namespace fg::cli
