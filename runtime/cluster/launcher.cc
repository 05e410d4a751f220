#include "runtime/cluster/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/timer.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/comm/auth.h"
#include "runtime/train/checkpoint.h"

namespace fg::runtime {
namespace {

std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal = sig; }

struct Child {
  std::string name;  // "coordinator" or "worker 3"
  pid_t pid = -1;
  std::string log;
  bool exited = false;
  int status = 0;
};

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "flexgraph";
  buf[n] = '\0';
  return buf;
}

// Starts argv with stdout and stderr appended to `log`; the child dies with the launcher.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log,
            const std::vector<std::string>& env, const std::string& input = "") {
  int pipe_fds[2] = {-1, -1};
  if (!input.empty() && pipe(pipe_fds) != 0) return -1;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) {
    if (!input.empty()) {  // `input` is small: it fits the pipe's buffer, so this never blocks
      close(pipe_fds[0]);
      if (pid > 0 && write(pipe_fds[1], input.data(), input.size()) != static_cast<ssize_t>(input.size())) {
        std::fprintf(stderr, "flexgraph launch: cannot write to the standard input of %s\n", argv[0].c_str());
      }
      close(pipe_fds[1]);
    }
    return pid;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  setpgid(0, 0);  // terminal signals go to the launcher, which forwards them
  if (!input.empty()) {
    dup2(pipe_fds[0], 0);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
  }
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  for (const std::string& kv : env) putenv(strdup(kv.c_str()));
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());  // a bare name (an ssh command) is looked up in $PATH
  std::fprintf(stderr, "cannot execute %s: %s\n", args[0], std::strerror(errno));
  _exit(127);
}

std::string Describe(const Child& c) {
  std::string how = WIFSIGNALED(c.status)
                        ? absl::StrCat("was killed by signal ", WTERMSIG(c.status))
                        : absl::StrCat("exited with status ", WEXITSTATUS(c.status));
  return absl::StrCat(c.name, " (pid ", c.pid, ") ", how, "; log: ", c.log);
}

std::string Tail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string l; std::getline(in, l);) all.push_back(l);
  std::string out;
  for (size_t i = all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0; i < all.size(); ++i) {
    out += "  | " + all[i] + "\n";
  }
  return out;
}

// Resident memory of one flexgraph process before it loads any data (libraries, runtime threads).
constexpr int64_t kProcessBaseBytes = int64_t{256} << 20;

// True when process `pid` is stopped (SIGSTOP, a debugger): state T or t in /proc/<pid>/stat.
bool IsStopped(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');  // the command name may contain spaces
  return close != std::string::npos && close + 2 < stat.size() &&
         (stat[close + 2] == 'T' || stat[close + 2] == 't');
}

// Watches the processes of a run for one that stays stopped (SIGSTOP, a debugger) longer than
// `limit` seconds.
class StoppedWatch {
 public:
  explicit StoppedWatch(double limit) : limit_(limit) {}
  // The first child stopped for longer than the limit, or null.
  const Child* Check(const std::vector<Child>& children) {
    since_.resize(children.size(), -1);
    for (size_t i = 0; i < children.size(); ++i) {
      const Child& c = children[i];
      if (c.exited || c.pid <= 0 || !IsStopped(c.pid)) {
        since_[i] = -1;
        continue;
      }
      if (since_[i] < 0) since_[i] = clock_.Seconds();
      if (clock_.Seconds() - since_[i] > limit_) return &c;
    }
    return nullptr;
  }
  std::string Describe(const Child& c) const {
    return absl::StrCat("the ", c.name, " (pid ", c.pid, ") has been stopped for more than ",
                        limit_, " s (SIGSTOP?); stopped the run; log: ", c.log);
  }

 private:
  double limit_;
  Stopwatch clock_;
  std::vector<double> since_;
};

void StopAll(std::vector<Child>& children) {
  for (Child& c : children) {
    if (!c.exited && c.pid > 0) {
      kill(c.pid, SIGTERM);
      kill(c.pid, SIGCONT);  // a stopped process takes the SIGTERM once continued
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (Child& c : children) {
      if (c.exited) continue;
      if (waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.exited = true;
      } else {
        all = false;
      }
    }
    if (all) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (Child& c : children) {
    if (!c.exited) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &c.status, 0);
      c.exited = true;
    }
  }
}

// Copies new lines of `path` to stderr until `stop`.
void Follow(const std::string& path, const std::atomic<bool>& stop) {
  std::ifstream in;
  std::string line;
  while (!stop.load()) {
    if (!in.is_open()) in.open(path);
    if (in.is_open()) {
      while (std::getline(in, line)) std::fprintf(stderr, "%s\n", line.c_str());
      in.clear();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (in.is_open()) {
    while (std::getline(in, line)) std::fprintf(stderr, "%s\n", line.c_str());
  }
}

bool HasFlag(const std::vector<std::string>& args, const std::string& flag) {
  for (const std::string& a : args) {
    if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
  }
  return false;
}

// The value of `flag` in `args` ("--flag V" or "--flag=V"); empty when absent.
std::string FlagValue(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind(flag + "=", 0) == 0) return args[i].substr(flag.size() + 1);
  }
  return "";
}

// The address workers dial for the coordinator: loopback for local workers; with a host file,
// --coordinator_host or this machine's name.
std::string CoordinatorHost(const LaunchOptions& o) {
  if (o.hosts_file.empty()) return "127.0.0.1";
  if (!o.coordinator_host.empty()) return o.coordinator_host;
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  return host;
}

// One attempt: 0 on success, 1 on failure, 128 + signal when interrupted.
int RunOnce(const LaunchOptions& o, const std::vector<std::string>& train_args,
            const std::string& log_dir, int attempt) {
  const std::string exe = SelfExe();
  const std::string token = NewToken();
  const std::vector<std::string> env = {"FG_RUN_TOKEN=" + token};
  std::vector<std::string> hosts;
  if (!o.hosts_file.empty()) {
    std::ifstream in(o.hosts_file);
    for (std::string h; std::getline(in, h);) {
      h.erase(0, h.find_first_not_of(" \t"));
      if (!h.empty() && h[0] != '#') hosts.push_back(h.substr(0, h.find_first_of(" \t")));
    }
    if (hosts.empty()) {
      std::fprintf(stderr, "flexgraph launch: %s: no hosts listed\n", o.hosts_file.c_str());
      return 1;
    }
  }
  const std::string suffix = attempt > 0 ? absl::StrCat(".restart", attempt) : "";
  const std::string port_file = absl::StrCat(log_dir, "/coordinator.port", suffix);
  std::filesystem::remove(port_file);
  std::vector<Child> children;
  std::vector<std::string> coord = {exe, "coordinator", "--workers", std::to_string(o.workers),
                                    "--port", "0", "--port_file", port_file,
                                    "--heartbeat_timeout", absl::StrCat(o.heartbeat_timeout_seconds),
                                    "--stall_timeout", absl::StrCat(o.stall_timeout_seconds),
                                    "--partition", o.partition, "--exchange", o.exchange,
                                    "--host", hosts.empty() ? "127.0.0.1" : "0.0.0.0"};
  // TLS files: the same paths on every host.
  std::vector<std::string> tls;
  if (!o.tls_cert.empty()) tls = {"--tls_cert", o.tls_cert, "--tls_key", o.tls_key};
  if (!o.tls_ca.empty()) tls.insert(tls.end(), {"--tls_ca", o.tls_ca});
  coord.insert(coord.end(), tls.begin(), tls.end());
  coord.push_back("--");
  coord.insert(coord.end(), train_args.begin(), train_args.end());
  Child c{"coordinator", -1, absl::StrCat(log_dir, "/coordinator", suffix, ".log")};
  c.pid = Spawn(coord, c.log, env);
  children.push_back(c);
  // Wait for the coordinator's port.
  StoppedWatch starting(o.heartbeat_timeout_seconds);
  int port = 0;
  for (int i = 0; i < 6000 && port == 0; ++i) {
    std::ifstream pf(port_file);
    if (pf >> port) break;
    port = 0;
    int st;
    if (waitpid(children[0].pid, &st, WNOHANG) == children[0].pid) {
      children[0].exited = true;
      children[0].status = st;
      std::fprintf(stderr, "flexgraph launch: %s\n%s", Describe(children[0]).c_str(),
                   Tail(children[0].log, 20).c_str());
      return 1;
    }
    if (g_signal.load()) {
      StopAll(children);
      return 128 + g_signal.load();
    }
    if (const Child* stuck = starting.Check(children)) {
      const std::string what = starting.Describe(*stuck);
      StopAll(children);
      std::fprintf(stderr, "flexgraph launch: %s\n", what.c_str());
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (port == 0) {
    StopAll(children);
    std::fprintf(stderr, "flexgraph launch: the coordinator did not start; log: %s\n", children[0].log.c_str());
    return 1;
  }
  const std::string host = CoordinatorHost(o);
  std::vector<std::string> ssh = absl::StrSplit(o.ssh, ' ', absl::SkipEmpty());
  if (ssh.empty()) {
    const char* env_ssh = std::getenv("FG_SSH");
    ssh = absl::StrSplit(env_ssh != nullptr ? env_ssh : "", ' ', absl::SkipEmpty());
  }
  if (ssh.empty()) ssh = {"/usr/bin/ssh"};
  ssh.insert(ssh.end(), {"-o", "BatchMode=yes"});
  for (int r = 0; r < o.workers; ++r) {
    if (g_signal.load()) {  // interrupted while starting: stop what started
      std::fprintf(stderr, "flexgraph launch: signal %d while starting workers: stopping %zu processes\n",
                   g_signal.load(), children.size());
      StopAll(children);
      return 128 + g_signal.load();
    }
    std::vector<std::string> w = {exe, "worker", "--coordinator", absl::StrCat(host, ":", port),
                                  "--rank", std::to_string(r), "--exchange", o.exchange,
                                  "--coordinator_timeout", absl::StrCat(o.heartbeat_timeout_seconds),
                                  "--stall_timeout", absl::StrCat(o.stall_timeout_seconds),
                                  o.pipeline ? "--pipeline" : "--nopipeline"};
    w.insert(w.end(), tls.begin(), tls.end());
    const std::string& h = hosts.empty() ? "" : hosts[r % hosts.size()];
    Child wc{absl::StrCat("worker ", r, h.empty() ? "" : " on " + h), -1,
             absl::StrCat(log_dir, "/worker-", r, suffix, ".log")};
    if (!hosts.empty()) w.insert(w.end(), {"--host", "0.0.0.0", "--advertise", h});
    w.push_back("--");
    w.insert(w.end(), train_args.begin(), train_args.end());
    if (!hosts.empty()) {
      std::vector<std::string> quoted;
      for (const std::string& a : w) quoted.push_back("'" + a + "'");
      // The token travels on ssh's standard input, never on a command line (ps shows those).
      const std::string remote =
          absl::StrCat("cd '", std::filesystem::current_path().string(),
                       "' && read -r FG_RUN_TOKEN && export FG_RUN_TOKEN && exec ",
                       absl::StrJoin(quoted, " "));
      std::vector<std::string> argv = ssh;
      argv.insert(argv.end(), {h, remote});
      wc.pid = Spawn(argv, wc.log, {}, token + "\n");
    } else {
      wc.pid = Spawn(w, wc.log, env);
    }
    children.push_back(wc);
  }
  std::fprintf(stderr, "flexgraph launch: coordinator on port %d, %d workers; logs in %s\n", port,
               o.workers, log_dir.c_str());
  std::atomic<bool> stop_follow{false};
  std::thread follow;
  if (!o.quiet) follow = std::thread([&] { Follow(children[1].log, stop_follow); });
  int rc = 0;
  StoppedWatch stopped(o.heartbeat_timeout_seconds);
  while (true) {
    // A stopped process answers nobody (a worker that never registers, a silent coordinator).
    if (const Child* c = stopped.Check(children)) {
      const std::string what = stopped.Describe(*c);
      StopAll(children);
      std::fprintf(stderr, "flexgraph launch: %s\n", what.c_str());
      rc = 1;
      break;
    }
    if (g_signal.load()) {
      std::fprintf(stderr, "flexgraph launch: signal %d: stopping all processes\n", g_signal.load());
      StopAll(children);
      rc = 128 + g_signal.load();
      break;
    }
    bool all_done = true;
    const Child* failed = nullptr;
    for (Child& ch : children) {
      if (!ch.exited && waitpid(ch.pid, &ch.status, WNOHANG) == ch.pid) ch.exited = true;
      if (!ch.exited) all_done = false;
      // The root cause first: a process killed by a signal, before those that exited with an
      // error because of it (its peers notice the loss within the same poll).
      const bool bad = ch.exited && !(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0);
      if (bad && (failed == nullptr || (WIFSIGNALED(ch.status) && !WIFSIGNALED(failed->status)))) {
        failed = &ch;
      }
    }
    if (failed != nullptr) {
      const std::string what = Describe(*failed);
      StopAll(children);
      std::fprintf(stderr, "flexgraph launch: %s\n%s", what.c_str(), Tail(failed->log, 15).c_str());
      rc = 1;
      break;
    }
    if (all_done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop_follow = true;
  if (follow.joinable()) follow.join();
  return rc;
}

}  // namespace

std::string NewToken() {
  unsigned char bytes[16] = {};
  std::ifstream rnd("/dev/urandom", std::ios::binary);
  rnd.read(reinterpret_cast<char*>(bytes), sizeof(bytes));
  std::string hex;
  for (unsigned char b : bytes) absl::StrAppend(&hex, absl::Hex(b, absl::kZeroPad2));
  return hex;
}

int Launch(const LaunchOptions& o) {
  if (o.workers < 1) {
    std::fprintf(stderr, "flexgraph launch: --workers must be positive, got %d\n", o.workers);
    return 2;
  }
  // TLS files every process would refuse at start-up, or peers in their handshakes, refuse the run
  // now, naming the file and why (the coordinator runs here, with these files).
  if (!o.tls_cert.empty() || !o.tls_key.empty() || !o.tls_ca.empty()) {
    auto tls = LoadTls(o.tls_cert, o.tls_key, o.tls_ca);
    absl::Status names = tls.ok() ? CheckTlsNames(*tls, CoordinatorHost(o)) : tls.status();
    if (!names.ok()) {
      std::fprintf(stderr, "flexgraph launch: %s\n", std::string(names.message()).c_str());
      return 2;
    }
  }
  if (o.hosts_file.empty()) {
    // Local workers share this machine: each process needs its own runtime before any data.
    const int64_t need = (static_cast<int64_t>(o.workers) + 1) * kProcessBaseBytes;
    const int64_t have = AvailableMemoryBytes();
    if (need > have) {
      std::fprintf(stderr,
                   "flexgraph launch: %d local workers and a coordinator need at least %lld MiB "
                   "(%lld MiB each before any data), and %lld MiB are available: use fewer workers "
                   "or spread them with --hosts\n",
                   o.workers, static_cast<long long>(need >> 20),
                   static_cast<long long>(kProcessBaseBytes >> 20), static_cast<long long>(have >> 20));
      return 2;
    }
  }
  std::string log_dir = o.log_dir;
  if (log_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = absl::StrCat(tmp ? tmp : "/tmp", "/flexgraph-run-XXXXXX");
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
      std::fprintf(stderr, "flexgraph launch: cannot create a log directory under %s\n", tmp ? tmp : "/tmp");
      return 1;
    }
    log_dir = buf.data();
  } else {
    std::error_code ec;
    std::filesystem::create_directories(log_dir, ec);
    if (ec) {
      std::fprintf(stderr, "flexgraph launch: %s: %s\n", log_dir.c_str(), ec.message().c_str());
      return 1;
    }
  }
  // One launch per log directory: another would read this run's port file and logs. The lock
  // lives as long as this process (children do not inherit it).
  const std::string lock_path = absl::StrCat(log_dir, "/launch.lock");
  const int lock = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) != 0) {
    std::fprintf(stderr, "flexgraph launch: %s is in use by another launch (choose another --log_dir)\n",
                 log_dir.c_str());
    if (lock >= 0) ::close(lock);
    return 2;
  }
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, nullptr);  // a remote shell gone before reading the token: EPIPE
  std::vector<std::string> args = o.train_args;
  for (int attempt = 0;; ++attempt) {
    const int rc = RunOnce(o, args, log_dir, attempt);
    if (rc == 0 || rc > 128 || !o.restart_on_failure || attempt >= o.max_restarts) {
      if (rc == 0) std::fprintf(stderr, "flexgraph launch: all %d workers finished; logs in %s\n", o.workers, log_dir.c_str());
      return rc;
    }
    if (!HasFlag(args, "--checkpoint_dir")) {
      std::fprintf(stderr, "flexgraph launch: --restart_on_failure needs --checkpoint_dir and "
                           "--checkpoint_every in the train flags\n");
      return rc;
    }
    if (!HasFlag(args, "--resume")) args.push_back("--resume");
    // A remote worker of the failed attempt outlives its ssh until it misses the coordinator for
    // --heartbeat_timeout; the next attempt starts once it has let go of the checkpoints.
    const absl::Status gone = AwaitCheckpointDirectory(FlagValue(args, "--checkpoint_dir"),
                                                       2 * o.heartbeat_timeout_seconds + 10);
    if (!gone.ok()) {
      std::fprintf(stderr, "flexgraph launch: cannot restart: %s\n", std::string(gone.message()).c_str());
      return rc;
    }
    std::fprintf(stderr, "flexgraph launch: restarting from the last checkpoint (attempt %d of %d)\n",
                 attempt + 1, o.max_restarts);
  }
}

}  // namespace fg::runtime
