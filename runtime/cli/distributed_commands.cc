// `flexgraph launch`, `flexgraph coordinator` and `flexgraph worker`: distributed training.
// The train flags follow `--` (an optional leading `train` is accepted).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/fault.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/train_flags.h"
#include "partition/partitioner.h"
#include "runtime/cluster/coordinator.h"
#include "runtime/cluster/launcher.h"
#include "runtime/cluster/worker.h"

namespace fg::cli {
namespace {

constexpr char kStallHelp[] =
    "once training has communicated: seconds a worker may send and receive nothing while another waits for it "
    "before the coordinator names it as stalled (a hung training thread; its heartbeats go on)";

// More workers than this are a typo, not a run (each is a process with its own gRPC server).
constexpr int64_t kMaxWorkers = 4096;
constexpr char kExchangeHelp[] =
    "auto (the 1D exchange or a process grid, whichever the plan predicts sends fewer bytes), 1d (per peer, rows "
    "or partial sums), rows or partial; or a process grid of the sparse-dense products (CAGNET): 1.5d:c=C, 2d, "
    "2d:PRxPC, 3d or 3d:PRxPCxPF, each optionally followed by ,oblivious (GCN, SAGE, GIN, SGC; the whole dataset per worker, or a partitioned one with a part per row block)";

int UsageError(const FlagSet& flags, const std::string& message) {
  std::fprintf(stderr, "flexgraph %s\n\n%s", message.c_str(), flags.Usage().c_str());
  return 2;
}

// Parses the train flags after `--`.
absl::StatusOr<flexgraph::RunConfig> PassthroughTrainConfig(const FlagSet& flags) {
  std::vector<std::string> args = flags.passthrough();
  if (!args.empty() && args[0] == "train") args.erase(args.begin());
  FlagSet train("train", "");
  AddTrainFlags(&train);
  if (auto s = train.Parse(args); !s.ok()) return s;
  return RunConfigFromFlags(train);
}

// The run token: the first line of --token_file, else $FG_RUN_TOKEN — never a command-line
// argument, which every user of the machine sees (ps). Errors name the file or the flag.
absl::StatusOr<std::string> TokenFrom(const FlagSet& flags, const char* command) {
  if (flags.IsSet("token")) {
    return absl::InvalidArgumentError(absl::StrCat(
        command, ": --token would show the run token to every user of this machine (ps); put it "
        "in a file readable only by you and pass --token_file FILE, or set $FG_RUN_TOKEN"));
  }
  std::string token;
  if (flags.IsSet("token_file")) {
    const std::string path = flags.Get("token_file");
    std::ifstream in(path);
    if (!in || !std::getline(in, token)) {
      return absl::InvalidArgumentError(absl::StrCat(command, ": --token_file ", path,
                                                     ": cannot read a token from it"));
    }
    if (!token.empty() && token.back() == '\r') token.pop_back();
  } else if (const char* env = std::getenv("FG_RUN_TOKEN")) {
    token = env;
  }
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(command, ": no run token (--token_file FILE or $FG_RUN_TOKEN)"));
  }
  return token;
}

void AddTlsFlags(FlagSet* flags) {
  flags->AddString("tls_cert", "", "PEM certificate of this process: TLS on every gRPC channel");
  flags->AddString("tls_key", "", "PEM private key of --tls_cert");
  flags->AddString("tls_ca", "", "PEM CA that signs every process's certificate: mutual TLS");
}

absl::StatusOr<runtime::Tls> TlsFrom(const FlagSet& flags, const char* command) {
  auto tls = runtime::LoadTls(flags.Get("tls_cert"), flags.Get("tls_key"), flags.Get("tls_ca"));
  if (!tls.ok()) return absl::InvalidArgumentError(absl::StrCat(command, ": ", tls.status().message()));
  return tls;
}

// A coordinator's or worker's run token and TLS files.
absl::Status CredentialsFrom(const FlagSet& flags, const char* command, std::string* token, runtime::Tls* tls) {
  FG_ASSIGN_OR_RETURN(*token, TokenFrom(flags, command));
  FG_ASSIGN_OR_RETURN(*tls, TlsFrom(flags, command));
  return absl::OkStatus();
}

int Launch(const std::vector<std::string>& args) {
  FlagSet flags("launch", "Starts a distributed run: a coordinator and --workers workers, as local "
                          "processes or over ssh on the hosts of --hosts. Train flags follow '--'.");
  flags.AddString("workers", "2", "number of worker processes");
  flags.AddString("hosts", "", "file with one host per line (workers start there over ssh)");
  flags.AddString("ssh", "",
                  "with --hosts: the command that starts a remote worker, split at spaces, e.g. "
                  "'ssh -F FILE' (default: $FG_SSH, else /usr/bin/ssh); -o BatchMode=yes HOST CMD follow");
  flags.AddString("coordinator_host", "",
                  "with --hosts: the address workers dial for the coordinator (default: this host's name)");
  flags.AddString("log_dir", "", "directory for one log per process (default: a new temp dir)");
  flags.AddString("heartbeat_timeout", "10", "seconds without heartbeats before a worker is dead");
  flags.AddString("stall_timeout", "300", kStallHelp);
  flags.AddString("partition", "metis",
                  "hash, range, metis or balanced (a dataset loaded whole; a partitioned one is split already)");
  flags.AddString("exchange", "auto", kExchangeHelp);
  flags.AddBool("restart_on_failure", false, "restart a failed run from its last checkpoint");
  flags.AddString("max_restarts", "3", "restarts allowed with --restart_on_failure");
  flags.AddBool("quiet", false, "do not echo worker 0's log");
  flags.AddBool("pipeline", true, "overlap sends with local aggregation (--nopipeline for benchmarks)");
  AddTlsFlags(&flags);
  if (auto s = flags.Parse(args); !s.ok()) return UsageError(flags, absl::StrCat("launch: ", s.message()));
  if (flags.help_requested()) {
    std::printf("%s\nexample: flexgraph launch --workers 2 -- train --model gcn\n", flags.Usage().c_str());
    return 0;
  }
  runtime::LaunchOptions o;
  auto workers = flags.GetInt("workers");
  auto restarts = flags.GetInt("max_restarts");
  auto timeout = flags.GetDouble("heartbeat_timeout");
  auto stall = flags.GetDouble("stall_timeout");
  if (!stall.ok() || !(*stall > 0)) return UsageError(flags, "launch: --stall_timeout takes a positive number");
  if (!workers.ok()) return UsageError(flags, absl::StrCat("launch: ", workers.status().message()));
  if (!restarts.ok()) return UsageError(flags, absl::StrCat("launch: ", restarts.status().message()));
  if (!timeout.ok()) return UsageError(flags, absl::StrCat("launch: ", timeout.status().message()));
  // Everything is checked before any process starts.
  if (*workers < 1 || *workers > kMaxWorkers) {
    return UsageError(flags, absl::StrCat("launch: --workers must lie in [1, ", kMaxWorkers, "], got ",
                                          flags.Get("workers")));
  }
  if (*restarts < 0) return UsageError(flags, "launch: --max_restarts must not be negative");
  if (!(*timeout > 0)) return UsageError(flags, "launch: --heartbeat_timeout must be positive");
  if (auto m = partition::ParseMethod(flags.Get("partition")); !m.ok()) {
    return UsageError(flags, absl::StrCat("launch: --partition: ", m.status().message()));
  }
  runtime::ExchangeMode mode;
  grid::GridSpec grid;
  if (auto s = runtime::ParseExchange(flags.Get("exchange"), &mode, &grid); !s.ok()) {
    return UsageError(flags, absl::StrCat("launch: ", s.message()));
  }
  if (auto s = grid::ResolveGridSpec(grid, static_cast<int>(*workers)); !s.ok()) {
    return UsageError(flags, absl::StrCat("launch: ", s.status().message()));
  }
  if (auto tls = TlsFrom(flags, "launch"); !tls.ok()) {
    std::fprintf(stderr, "flexgraph %s\n", std::string(tls.status().message()).c_str());
    return 2;
  }
  o.tls_cert = flags.Get("tls_cert");
  o.tls_key = flags.Get("tls_key");
  o.tls_ca = flags.Get("tls_ca");
  // Validate the train flags here, before starting anything.
  auto t = PassthroughTrainConfig(flags);
  if (t.ok()) {
    if (auto s = PrepareOutputs(*t); !s.ok()) t = s;
  }
  if (!t.ok()) {
    std::fprintf(stderr, "flexgraph launch: %s\n", std::string(t.status().message()).c_str());
    return 2;
  }
  o.workers = static_cast<int>(*workers);
  o.max_restarts = static_cast<int>(*restarts);
  o.heartbeat_timeout_seconds = *timeout;
  o.stall_timeout_seconds = *stall;
  o.hosts_file = flags.Get("hosts");
  o.ssh = flags.Get("ssh");
  o.coordinator_host = flags.Get("coordinator_host");
  o.log_dir = flags.Get("log_dir");
  o.partition = flags.Get("partition");
  o.exchange = flags.Get("exchange");
  o.restart_on_failure = flags.GetBool("restart_on_failure");
  o.quiet = flags.GetBool("quiet");
  o.pipeline = flags.GetBool("pipeline");
  o.train_args = flags.passthrough();
  if (!o.train_args.empty() && o.train_args[0] == "train") o.train_args.erase(o.train_args.begin());
  return runtime::Launch(o);
}

int Coordinator(const std::vector<std::string>& args) {
  SetFaultProcess("coordinator");
  FlagSet flags("coordinator", "Runs the coordinator of a distributed run (started by 'launch'). "
                               "Train flags follow '--'.");
  flags.AddString("workers", "1", "number of workers");
  flags.AddString("host", "127.0.0.1", "interface to listen on");
  flags.AddString("port", "0", "port (0: ephemeral)");
  flags.AddString("port_file", "", "write the port here once listening");
  flags.AddString("token_file", "", "file whose first line is the run token (default: $FG_RUN_TOKEN)");
  flags.AddString("token", "", "refused: a token on the command line is visible to every user (ps)");
  flags.AddString("heartbeat_timeout", "10", "seconds without heartbeats before a worker is dead");
  flags.AddString("stall_timeout", "300", kStallHelp);
  flags.AddString("partition", "metis",
                  "hash, range, metis or balanced (a dataset loaded whole; a partitioned one is split already)");
  flags.AddString("exchange", "auto", "the workers' --exchange (a grid's workers read one part per row block)");
  AddTlsFlags(&flags);
  if (auto s = flags.Parse(args); !s.ok()) return UsageError(flags, absl::StrCat("coordinator: ", s.message()));
  if (flags.help_requested()) {
    std::printf("%s", flags.Usage().c_str());
    return 0;
  }
  auto train = PassthroughTrainConfig(flags);
  if (train.ok()) {
    if (auto s = PrepareOutputs(*train); !s.ok()) train = s;
  }
  if (!train.ok()) {
    std::fprintf(stderr, "flexgraph coordinator: %s\n", std::string(train.status().message()).c_str());
    return 2;
  }
  runtime::CoordinatorOptions o;
  auto workers = flags.GetInt("workers");
  auto port = flags.GetInt("port");
  auto timeout = flags.GetDouble("heartbeat_timeout");
  if (!workers.ok() || !port.ok() || !timeout.ok()) {
    return UsageError(flags, "coordinator: --workers, --port and --heartbeat_timeout take numbers");
  }
  if (*workers < 1 || *workers > kMaxWorkers) {
    return UsageError(flags, absl::StrCat("coordinator: --workers must lie in [1, ", kMaxWorkers, "]"));
  }
  if (*port < 0 || *port > 65535) return UsageError(flags, "coordinator: --port must lie in [0, 65535]");
  if (!(*timeout > 0)) return UsageError(flags, "coordinator: --heartbeat_timeout must be positive");
  auto stall = flags.GetDouble("stall_timeout");
  if (!stall.ok() || !(*stall > 0)) return UsageError(flags, "coordinator: --stall_timeout takes a positive number");
  o.stall_timeout_seconds = *stall;
  o.workers = static_cast<int>(*workers);
  o.port = static_cast<int>(*port);
  o.host = flags.Get("host");
  o.heartbeat_timeout_seconds = *timeout;
  o.partition_method = flags.Get("partition");
  runtime::ExchangeMode mode;
  if (auto s = runtime::ParseExchange(flags.Get("exchange"), &mode, &o.grid); !s.ok()) {
    return UsageError(flags, absl::StrCat("coordinator: ", s.message()));
  }
  if (auto s = CredentialsFrom(flags, "coordinator", &o.token, &o.tls); !s.ok()) {
    // Not a usage text: a launcher's failure report shows a log's last lines.
    std::fprintf(stderr, "flexgraph %s\n", std::string(s.message()).c_str());
    return 2;
  }
  auto c = runtime::Coordinator::Start(o, *train);
  if (!c.ok()) {
    std::fprintf(stderr, "flexgraph coordinator: %s\n", std::string(c.status().message()).c_str());
    return 1;
  }
  std::fprintf(stderr, "coordinator: listening on %s:%d for %d workers\n", o.host.c_str(),
               (*c)->port(), o.workers);
  if (flags.IsSet("port_file")) {
    const std::string tmp = flags.Get("port_file") + ".tmp";
    { std::ofstream(tmp) << (*c)->port() << "\n"; }
    std::rename(tmp.c_str(), flags.Get("port_file").c_str());
  }
  absl::Status s = (*c)->Wait();
  if (!s.ok()) {
    std::fprintf(stderr, "flexgraph coordinator: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::fprintf(stderr, "coordinator: run finished\n");
  return 0;
}

int Worker(const std::vector<std::string>& args) {
  FlagSet flags("worker", "Runs one worker of a distributed run: started by 'launch'; by mpirun or srun "
                          "with --comm mpi; or by srun with gRPC and no --coordinator (Slurm's task 0 runs the "
                          "coordinator on the step's first node at --coordinator_port). Train flags follow '--'.");
  flags.AddString("comm", "grpc",
                  "grpc (a coordinator and gRPC between workers) or mpi (started by mpirun or srun; rank 0 "
                  "leads, no port is opened)");
  flags.AddString("partition", "metis",
                  "where this worker leads (--comm mpi rank 0, srun task 0): hash, range, metis or balanced "
                  "for a dataset loaded whole");
  flags.AddString("coordinator", "", "coordinator address host:port (--comm grpc; under srun: task 0 runs it)");
  flags.AddString("coordinator_port", "29500", "under srun without --coordinator: the coordinator's port");
  flags.AddString("heartbeat_timeout", "10", "under srun without --coordinator: the coordinator's heartbeat timeout");
  flags.AddString("token_file", "", "file whose first line is the run token (default: $FG_RUN_TOKEN)");
  flags.AddString("token", "", "refused: a token on the command line is visible to every user (ps)");
  flags.AddString("host", "127.0.0.1", "interface the worker listens on");
  flags.AddString("advertise", "", "host name peers use to reach this worker");
  flags.AddString("rank", "-1", "requested rank (-1: from the environment or any)");
  flags.AddString("exchange", "auto", kExchangeHelp);
  flags.AddString("register_timeout", "300", "seconds to wait for the coordinator and the other workers");
  flags.AddString("coordinator_timeout", "30", "seconds without the coordinator's answer before the run is given up");
  flags.AddString("stall_timeout", "300",
                  "seconds a receive waits for a peer that sends nothing (gRPC: 10 s more, the coordinator names a stalled "
                  "worker first; under srun without --coordinator: also the coordinator's stall timeout)");
  flags.AddBool("pipeline", true, "overlap sends with local aggregation (--nopipeline for benchmarks)");
  AddTlsFlags(&flags);
  if (auto s = flags.Parse(args); !s.ok()) return UsageError(flags, absl::StrCat("worker: ", s.message()));
  if (flags.help_requested()) {
    std::printf("%s", flags.Usage().c_str());
    return 0;
  }
  auto train = PassthroughTrainConfig(flags);
  if (!train.ok()) {
    std::fprintf(stderr, "flexgraph worker: %s\n", std::string(train.status().message()).c_str());
    return 2;
  }
  ReuseFreedMemory();
  const std::string comm = flags.Get("comm");
  if (comm != "grpc" && comm != "mpi") return UsageError(flags, "worker: --comm takes grpc or mpi");
  runtime::ExchangeMode exchange;
  grid::GridSpec grid;
  if (auto s = runtime::ParseExchange(flags.Get("exchange"), &exchange, &grid); !s.ok()) {
    return UsageError(flags, absl::StrCat("worker: ", s.message()));
  }
  auto stall = flags.GetDouble("stall_timeout");
  if (!stall.ok() || !(*stall > 0)) return UsageError(flags, "worker: --stall_timeout takes a positive number");
  if (comm == "mpi") {
    if (flags.IsSet("coordinator")) return UsageError(flags, "worker: --comm mpi has no coordinator (rank 0 leads)");
    if (!partition::ParseMethod(flags.Get("partition")).ok()) {
      return UsageError(flags, "worker: --partition takes hash, range, metis or balanced");
    }
    runtime::MpiWorkerOptions m;
    m.partition_method = flags.Get("partition");
    m.exchange = exchange;
    m.grid = grid;
    m.auto_grid = flags.Get("exchange") == "auto";
    m.pipeline = flags.GetBool("pipeline");
    m.recv_timeout_seconds = *stall;
    if (auto s = PrepareOutputs(*train); !s.ok()) {
      std::fprintf(stderr, "flexgraph worker: %s\n", std::string(s.message()).c_str());
      return 2;
    }
    auto r = runtime::RunMpiWorker(m, *train);
    if (!r.ok()) {
      std::fprintf(stderr, "flexgraph worker: %s\n", std::string(r.status().message()).c_str());
      return 1;
    }
    return 0;
  }
  runtime::WorkerOptions o;
  o.coordinator = flags.Get("coordinator");
  if (auto s = CredentialsFrom(flags, "worker", &o.token, &o.tls); !s.ok()) {
    // Not a usage text: a launcher's failure report shows a log's last lines.
    std::fprintf(stderr, "flexgraph %s\n", std::string(s.message()).c_str());
    return 2;
  }
  o.host = flags.Get("host");
  o.advertise_host = flags.Get("advertise");
  auto rank = flags.GetInt("rank");
  if (!rank.ok()) return UsageError(flags, "worker: --rank takes an integer");
  o.rank_hint = static_cast<int>(*rank);
  auto reg = flags.GetDouble("register_timeout");
  if (!reg.ok() || *reg <= 0) return UsageError(flags, "worker: --register_timeout takes a positive number");
  o.register_timeout_seconds = *reg;
  auto silent = flags.GetDouble("coordinator_timeout");
  if (!silent.ok() || !(*silent > 0)) {
    return UsageError(flags, "worker: --coordinator_timeout takes a positive number");
  }
  o.coordinator_timeout_seconds = *silent;
  o.stall_timeout_seconds = *stall;
  o.exchange = exchange;
  o.grid = grid;
  o.auto_grid = flags.Get("exchange") == "auto";
  o.pipeline = flags.GetBool("pipeline");
  // Under srun without --coordinator: task 0 runs the coordinator on the step's first node.
  std::unique_ptr<runtime::Coordinator> coordinator;
  if (o.coordinator.empty()) {
    auto slurm = runtime::SlurmStepFromEnvironment();
    if (!slurm.ok()) return UsageError(flags, absl::StrCat("worker: ", slurm.status().message()));
    if (!slurm->has_value()) {
      return UsageError(flags, "worker: --coordinator is required (outside srun, and without --comm mpi)");
    }
    const runtime::SlurmStep& step = **slurm;
    auto port = flags.GetInt("coordinator_port");
    auto timeout = flags.GetDouble("heartbeat_timeout");
    if (!port.ok() || *port < 1 || *port > 65535) {
      return UsageError(flags, "worker: --coordinator_port must lie in [1, 65535]");
    }
    if (!timeout.ok() || !(*timeout > 0)) return UsageError(flags, "worker: --heartbeat_timeout must be positive");
    if (!partition::ParseMethod(flags.Get("partition")).ok()) {
      return UsageError(flags, "worker: --partition takes hash, range, metis or balanced");
    }
    o.coordinator = absl::StrCat(step.first_node, ":", *port);
    o.rank_hint = step.rank;
    if (!flags.IsSet("host")) o.host = "0.0.0.0";
    if (o.advertise_host.empty()) {
      char name[256] = "";
      gethostname(name, sizeof(name) - 1);
      o.advertise_host = step.this_node.empty() ? name : step.this_node;
    }
    if (step.rank == 0) {
      runtime::CoordinatorOptions c;
      c.workers = step.tasks;
      c.host = "0.0.0.0";
      c.port = static_cast<int>(*port);
      c.token = o.token;
      c.tls = o.tls;
      c.heartbeat_timeout_seconds = *timeout;
      c.stall_timeout_seconds = *stall;
      c.partition_method = flags.Get("partition");
      if (auto s = PrepareOutputs(*train); !s.ok()) {
        std::fprintf(stderr, "flexgraph worker: %s\n", std::string(s.message()).c_str());
        return 2;
      }
      auto started = runtime::Coordinator::Start(c, *train);
      if (!started.ok()) {
        std::fprintf(stderr, "flexgraph worker: task 0's coordinator: %s\n",
                     std::string(started.status().message()).c_str());
        return 1;
      }
      coordinator = std::move(*started);
      std::fprintf(stderr, "coordinator: listening on port %d for %d Slurm tasks\n", coordinator->port(), step.tasks);
    }
  }
  auto r = runtime::RunWorker(o, *train);
  if (!r.ok()) {
    std::fprintf(stderr, "flexgraph worker: %s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  if (coordinator != nullptr) {
    if (absl::Status s = coordinator->Wait(); !s.ok()) {
      std::fprintf(stderr, "flexgraph worker: task 0's coordinator: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  return 0;
}

CommandRegistrar launch_command("launch", "run distributed training (coordinator + workers)", Launch);
CommandRegistrar coordinator_command("coordinator", "run the coordinator of a distributed run",
                                     Coordinator);
CommandRegistrar worker_command("worker", "run one worker of a distributed run", Worker);

}  // namespace
}  // namespace fg::cli
