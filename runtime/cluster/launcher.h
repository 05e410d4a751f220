// Launcher: starts a distributed run — the coordinator and P workers as local processes, or the
// workers on the hosts of a host file over ssh — with a fresh shared-secret token, one log file per
// process, and stops all of them on SIGINT/SIGTERM or when any fails (naming it). With
// restart_on_failure a failed run restarts from its last checkpoint.
#pragma once

#include <string>
#include <vector>

namespace fg::runtime {

struct LaunchOptions {
  int workers = 2;
  std::string hosts_file;  // one host per line; "" = local processes
  // With hosts_file: the command that starts a remote worker, split at spaces ("" = $FG_SSH, else
  // /usr/bin/ssh); the launcher appends "-o BatchMode=yes HOST COMMAND".
  std::string ssh;
  // With hosts_file: the address workers dial for the coordinator ("" = this machine's host name).
  std::string coordinator_host;
  std::string log_dir;     // "" = a new directory under $TMPDIR
  double heartbeat_timeout_seconds = 10;
  double stall_timeout_seconds = 300;  // coordinator.h
  std::string partition = "metis";
  std::string exchange = "auto";
  bool restart_on_failure = false;
  int max_restarts = 3;
  bool quiet = false;
  bool pipeline = true;
  std::string tls_cert, tls_key, tls_ca;  // PEM files every process uses (runtime/comm/auth.h)
  std::vector<std::string> train_args;  // the `train` flags
};

// Returns the process exit status: 0 when every process succeeded; 2 when the options are refused
// before anything starts (TLS files a peer would refuse: auth.h's LoadTls and CheckTlsNames for the
// address workers dial for the coordinator).
int Launch(const LaunchOptions& options);

// A 128-bit random token as hex (from /dev/urandom).
std::string NewToken();

}  // namespace fg::runtime
