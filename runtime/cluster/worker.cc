#include "runtime/cluster/worker.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "flexgraph/base/fault.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "proto/flexgraph.grpc.pb.h"
#include "runtime/comm/grpc_communicator.h"
#include "runtime/cluster/leader.h"

namespace fg::runtime {
namespace {

void WithToken(grpc::ClientContext* ctx, const std::string& token, double deadline_seconds) {
  ctx->AddMetadata(kTokenMetadata, token);
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(deadline_seconds * 1000)));
}

}  // namespace

int RankFromEnvironment() {
  for (const char* var : {"FG_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
    const char* v = std::getenv(var);
    int r;
    if (v != nullptr && absl::SimpleAtoi(v, &r) && r >= 0) return r;
  }
  return -1;
}

absl::StatusOr<std::string> FirstHostOf(const std::string& nodelist) {
  auto bad = [&] { return absl::InvalidArgumentError(absl::StrCat("malformed Slurm host list '", nodelist, "'")); };
  // The first entry: up to a comma outside brackets.
  size_t end = 0;
  for (int depth = 0; end < nodelist.size() && !(nodelist[end] == ',' && depth == 0); ++end) {
    if (nodelist[end] == '[') ++depth;
    if (nodelist[end] == ']' && --depth < 0) return bad();
  }
  const std::string entry = nodelist.substr(0, end);
  const size_t open = entry.find('[');
  if (entry.empty()) return bad();
  if (open == std::string::npos) return entry;
  const size_t close = entry.find(']', open);
  if (close == std::string::npos) return bad();
  // The first number of the first range, zero padding kept.
  const std::string ranges = entry.substr(open + 1, close - open - 1);
  const size_t stop = ranges.find_first_of("-,");
  const std::string first = ranges.substr(0, stop);
  if (first.empty() || first.find_first_not_of("0123456789") != std::string::npos) return bad();
  return entry.substr(0, open) + first + entry.substr(close + 1);
}

absl::StatusOr<std::optional<SlurmStep>> SlurmStepFromEnvironment() {
  const char* procid = std::getenv("SLURM_PROCID");
  if (procid == nullptr) return std::optional<SlurmStep>();
  SlurmStep step;
  auto number = [](const char* name, int* out) -> absl::Status {
    const char* v = std::getenv(name);
    if (v == nullptr || !absl::SimpleAtoi(v, out) || *out < 0) {
      return absl::InvalidArgumentError(absl::StrCat("$", name, " is ", v ? absl::StrCat("'", v, "'") : "unset",
                                                     ", expected a non-negative integer"));
    }
    return absl::OkStatus();
  };
  FG_RETURN_IF_ERROR(number("SLURM_PROCID", &step.rank));
  FG_RETURN_IF_ERROR(number("SLURM_NTASKS", &step.tasks));
  if (step.rank >= step.tasks) {
    return absl::InvalidArgumentError(absl::StrCat("$SLURM_PROCID ", step.rank, " is not below $SLURM_NTASKS ", step.tasks));
  }
  const char* nodes = std::getenv("SLURM_STEP_NODELIST");
  const char* which = "SLURM_STEP_NODELIST";
  if (nodes == nullptr) nodes = std::getenv(which = "SLURM_NODELIST");
  if (nodes == nullptr) return absl::InvalidArgumentError("$SLURM_PROCID is set but $SLURM_NODELIST is not");
  auto first = FirstHostOf(nodes);
  if (!first.ok()) return absl::InvalidArgumentError(absl::StrCat("$", which, ": ", first.status().message()));
  step.first_node = *first;
  const char* me = std::getenv("SLURMD_NODENAME");
  step.this_node = me != nullptr ? me : "";
  return std::optional<SlurmStep>(step);
}

namespace {

// Whether a failed call reached a listening coordinator whose connection then failed (a TLS
// handshake either side refused, plaintext against TLS), as opposed to one not listening yet.
bool ReachedButRefused(const grpc::Status& s) {
  if (s.error_code() != grpc::StatusCode::UNAVAILABLE) return false;
  const std::string& m = s.error_message();
  for (const char* sign : {"andshake", "Socket closed", "reset by peer", "SSL", "ssl", "certificate", "wrong version"}) {
    if (m.find(sign) != std::string::npos) return true;
  }
  return false;
}

// Waits until the coordinator at `address` answers (it may not listen yet: a Slurm task 0 starts
// it), up to `timeout` seconds. A connection that reaches it and then fails the same way three times
// in a row (a TLS misconfiguration) fails at once with gRPC's reason, rather than after the
// timeout with none.
absl::Status WaitForCoordinator(flexgraph::Coordinator::Stub& stub, const WorkerOptions& options) {
  Stopwatch waited;
  int refused = 0;
  while (true) {
    grpc::ClientContext ctx;
    WithToken(&ctx, options.token, 5);
    ctx.AddMetadata(kCallerMetadata, "a worker registering");
    flexgraph::HeartbeatRequest probe;
    probe.set_rank(-1);
    flexgraph::HeartbeatReply ignored;
    const grpc::Status s = stub.Heartbeat(&ctx, probe, &ignored);
    // Answered, even with a refusal of this caller (UNAUTHENTICATED): Register says why.
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE && s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      return absl::OkStatus();
    }
    refused = ReachedButRefused(s) ? refused + 1 : 0;
    if (refused >= 3 || waited.Seconds() > options.register_timeout_seconds) {
      std::string why = refused >= 3 ? "it refused the connection"
                                     : absl::StrCat("no answer within ", options.register_timeout_seconds, " s");
      absl::StrAppend(&why, " (", s.error_message(), ")");
      if (refused >= 3 && !options.tls.enabled()) {
        absl::StrAppend(&why, "; this worker has no TLS: does the coordinator use TLS?");
      } else if (refused >= 3) {
        absl::StrAppend(&why, "; this worker uses TLS (--tls_ca ",
                        options.tls.ca_file.empty() ? "unset: this machine's roots" : options.tls.ca_file,
                        "): the coordinator must use TLS too, with a certificate that CA signed naming the host "
                        "dialled, and accept this worker's certificate");
      }
      return absl::UnavailableError(
          absl::StrCat("cannot register with the coordinator at ", options.coordinator, ": ", why));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace

absl::StatusOr<TrainResult> RunWorker(const WorkerOptions& options,
                                      const flexgraph::RunConfig& train) {
  const std::string advertise_host = options.advertise_host.empty() ? options.host : options.advertise_host;
  // A certificate that does not name the address peers dial fails here, not in their handshakes.
  if (absl::Status names = CheckTlsNames(options.tls, advertise_host); !names.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("worker: ", names.message()));
  }
  FG_ASSIGN_OR_RETURN(auto server, WorkerServer::Start(options.host, 0, options.token, options.tls));
  const std::string advertise = absl::StrCat(advertise_host, ":", server->port());
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxGrpcMessageBytes);
  auto stub = flexgraph::Coordinator::NewStub(
      grpc::CreateCustomChannel(options.coordinator, ChannelCredentials(options.tls), args));

  flexgraph::RegisterRequest req;
  req.set_address(advertise);
  req.set_rank_hint(options.rank_hint >= 0 ? options.rank_hint : RankFromEnvironment());
  req.set_pid(getpid());
  req.set_settings(SharedSettings(train).SerializeAsString());
  flexgraph::RegisterReply reply;
  std::fprintf(stderr, "worker: registering with the coordinator at %s (waiting up to %.0f s for it and the other workers)\n",
               options.coordinator.c_str(), options.register_timeout_seconds);
  FG_RETURN_IF_ERROR(WaitForCoordinator(*stub, options));
  {
    grpc::ClientContext ctx;
    WithToken(&ctx, options.token, options.register_timeout_seconds);
    ctx.AddMetadata(kCallerMetadata, absl::StrCat("a worker registering from ", advertise));
    ctx.set_wait_for_ready(true);
    grpc::Status s = stub->Register(&ctx, req, &reply);
    if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      // Waiting hides why the coordinator could not be reached (refused, TLS handshake): one call
      // that does not wait says it.
      grpc::ClientContext probe_ctx;
      WithToken(&probe_ctx, options.token, 5);
      flexgraph::HeartbeatRequest probe;
      probe.set_rank(-1);
      flexgraph::HeartbeatReply ignored;
      if (grpc::Status p = stub->Heartbeat(&probe_ctx, probe, &ignored); p.error_code() == grpc::StatusCode::UNAVAILABLE) {
        s = grpc::Status(s.error_code(), absl::StrCat(s.error_message(), " (", p.error_message(),
                                                      options.tls.enabled() ? ")" : "; does the coordinator use TLS?)"));
      }
    }
    if (!s.ok()) {
      return absl::UnavailableError(absl::StrCat("cannot register with the coordinator at ",
                                                 options.coordinator, ": ", s.error_message()));
    }
  }
  const int rank = reply.rank();
  SetFaultProcess(absl::StrCat("worker", rank));
  std::vector<std::string> peers(reply.peers().begin(), reply.peers().end());
  std::vector<int32_t> owners(reply.owners().begin(), reply.owners().end());
  std::fprintf(stderr, "worker %d of %d at %s\n", rank, reply.world_size(), advertise.c_str());
  auto comm = MakeGrpcCommunicator(rank, peers, options.token, options.tls, server.get());
  comm->set_timeout(std::chrono::milliseconds(static_cast<int64_t>((options.stall_timeout_seconds + 10) * 1000)));

  // Heartbeats, with the training's communication; a stop from the coordinator or its silence
  // aborts the communicator, and a training that does not end then (a hung thread) ends the process.
  std::atomic<bool> stop{false}, trained{false};
  std::thread heartbeat([&] {
    Stopwatch since_ok;
    std::optional<Stopwatch> stopped;  // since the run was stopped
    std::string why_stopped;
    while (!stop.load()) {
      flexgraph::HeartbeatRequest hb;
      hb.set_rank(rank);
      const CommActivity activity = comm->activity();
      hb.set_operations(activity.operations);
      hb.set_idle_seconds(activity.idle_seconds);
      hb.set_waiting_on(activity.waiting_on + 1);
      hb.set_waiting_seconds(activity.waiting_seconds);
      hb.set_quiet_seconds(std::min(activity.idle_seconds, SecondsSinceProgress()));
      flexgraph::HeartbeatReply hr;
      grpc::ClientContext ctx;
      WithToken(&ctx, options.token, std::min(5.0, options.coordinator_timeout_seconds));
      ctx.AddMetadata(kCallerMetadata, absl::StrCat("worker ", rank, " at ", advertise));
      grpc::Status s = stub->Heartbeat(&ctx, hb, &hr);
      absl::Status abort;
      if (s.ok()) {
        since_ok.Reset();
        if (hr.stop()) abort = absl::AbortedError(absl::StrCat("run stopped by the coordinator: ", hr.reason()));
      } else if (since_ok.Seconds() > options.coordinator_timeout_seconds) {
        abort = absl::UnavailableError(absl::StrCat("coordinator at ", options.coordinator, " unreachable for ",
                                                    static_cast<int>(since_ok.Seconds()), " s: ", s.error_message()));
      }
      if (!abort.ok()) {
        comm->Abort(abort);
        if (!stopped) {
          stopped.emplace();
          why_stopped = std::string(abort.message());
        } else if (!trained.load() && stopped->Seconds() > options.coordinator_timeout_seconds) {
          std::fprintf(stderr,
                       "flexgraph worker: worker %d: %s; %d s later its training has not ended (hung?): exiting\n",
                       rank, why_stopped.c_str(), static_cast<int>(stopped->Seconds()));
          std::_Exit(1);
        }
      }
      for (int i = 0; i < 10 && !stop.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::duration<double>(options.heartbeat_interval_seconds / 10));
      }
    }
  });

  // Running out of memory is this worker's failure, reported like any other (the heartbeat thread
  // is still running: nothing may unwind past it).
  absl::StatusOr<TrainResult> result = [&]() -> absl::StatusOr<TrainResult> {
    FaultPoint("worker.registered");
    try {
      flexgraph::RunConfig t = train;
      if (rank != 0) t.mutable_output()->set_quiet(true);
      FG_ASSIGN_OR_RETURN(auto trainer,
                          Trainer::Create(t, {comm.get(), owners, options.exchange, options.pipeline, options.grid, options.auto_grid}));
      return trainer->Run();
    } catch (const std::bad_alloc& e) {
      comm->Abort(absl::ResourceExhaustedError(absl::StrCat("worker ", rank, " ran out of memory")));
      return absl::ResourceExhaustedError(absl::StrCat("worker ", rank, ": ", e.what()));
    }
  }();

  trained = true;
  FaultPoint("worker.trained");
  const flexgraph::MetricsRequest metrics = WorkerMetrics(rank, result);
  grpc::Status reported;
  {
    flexgraph::MetricsReply mr;
    grpc::ClientContext ctx;
    WithToken(&ctx, options.token, 10);
    reported = stub->ReportMetrics(&ctx, metrics, &mr);
  }
  FaultPoint("worker.reported");
  stop = true;
  heartbeat.join();
  comm.reset();
  server->Shutdown();
  // A run whose results never reached the coordinator, or that it refused, did not finish: it has
  // no summary, and this worker fails too.
  if (result.ok() && reported.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
    return absl::DataLossError(absl::StrCat("the coordinator at ", options.coordinator,
                                            " refused the results: ", reported.error_message()));
  }
  if (result.ok() && !reported.ok()) {
    return absl::UnavailableError(absl::StrCat("coordinator at ", options.coordinator,
                                               " unreachable, the results were not reported: ",
                                               reported.error_message()));
  }
  return result;
}

}  // namespace fg::runtime
