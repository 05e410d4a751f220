// Helpers of the launch tests: scratch directories, the training arguments they share, and
// processes started in the background (a coordinator waited for until it has a port, any command),
// watched and reaped.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/runtime/process_util.h"
#include "tests/runtime/scratch_dir.h"

namespace fg::testing {

inline std::string Dir(const std::string& name) { return fg::testing::ScratchDir(name); }

inline const std::string kTrain = " -- train --dataset " + kCora + " --epochs 8 --threads 1 --quiet";

// Starts `flexgraph coordinator` (token, its flags, the train arguments) logging to d/coord.log
// and waits for its port; returns its pid (port empty when it did not come up).
inline pid_t StartCoordinator(const std::string& d, const std::string& token, const std::string& flags,
                       const std::string& train, std::string* port) {
  const pid_t coord = fork();
  if (coord == 0) {
    const std::string cmd = "FG_RUN_TOKEN=" + token + " exec " + kFlexgraph + " coordinator " + flags +
                            " --port 0 --port_file " + d + "/port" + train + " > " + d + "/coord.log 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    _exit(127);
  }
  port->clear();
  for (int i = 0; i < 600 && port->empty(); ++i) {
    *port = Read(d + "/port");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!port->empty()) port->erase(port->find_last_not_of("\n") + 1);
  return coord;
}

// Starts `cmd` in the background with its output in `log`.
inline pid_t Background(const std::string& cmd, const std::string& log) {
  const pid_t p = fork();
  if (p == 0) {
    const std::string line = "exec " + cmd + " > " + log + " 2>&1";
    execl("/bin/sh", "sh", "-c", line.c_str(), nullptr);
    _exit(127);
  }
  return p;
}

// Whether child `p` is running (not exited, not yet reaped: a zombie answers kill(p, 0) too).
inline bool Running(pid_t p) {
  const std::string stat = Read("/proc/" + std::to_string(p) + "/stat");
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// Kills the processes it holds that are still running when it goes (a test that stopped early).
struct Reaper {
  std::vector<pid_t> pids;
  ~Reaper() {
    for (pid_t p : pids) {
      if (Running(p)) kill(p, SIGKILL);
    }
  }
};

inline int ExitStatus(pid_t p) {
  int st = 0;
  waitpid(p, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace fg::testing
