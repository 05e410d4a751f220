#include "runtime/cluster/worker.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "flexgraph/base/fault.h"
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

absl::StatusOr<TrainResult> RunWorker(const WorkerOptions& options,
                                      const flexgraph::RunConfig& train) {
  FG_ASSIGN_OR_RETURN(auto server, WorkerServer::Start(options.host, 0, options.token, options.tls));
  const std::string advertise =
      absl::StrCat(options.advertise_host.empty() ? options.host : options.advertise_host, ":",
                   server->port());
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
  {
    grpc::ClientContext ctx;
    WithToken(&ctx, options.token, options.register_timeout_seconds);
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
  comm->set_timeout(std::chrono::milliseconds(static_cast<int64_t>(options.recv_timeout_seconds * 1000)));

  // Heartbeats; a stop from the coordinator or its silence aborts the communicator.
  std::atomic<bool> stop{false};
  std::thread heartbeat([&] {
    Stopwatch since_ok;
    while (!stop.load()) {
      flexgraph::HeartbeatRequest hb;
      hb.set_rank(rank);
      flexgraph::HeartbeatReply hr;
      grpc::ClientContext ctx;
      WithToken(&ctx, options.token, std::min(5.0, options.coordinator_timeout_seconds));
      grpc::Status s = stub->Heartbeat(&ctx, hb, &hr);
      if (s.ok()) {
        since_ok.Reset();
        if (hr.stop()) {
          comm->Abort(absl::AbortedError(absl::StrCat("run stopped by the coordinator: ", hr.reason())));
        }
      } else if (since_ok.Seconds() > options.coordinator_timeout_seconds) {
        comm->Abort(absl::UnavailableError(absl::StrCat(
            "coordinator at ", options.coordinator, " unreachable for ",
            static_cast<int>(since_ok.Seconds()), " s: ", s.error_message())));
      }
      for (int i = 0; i < 10 && !stop.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::duration<double>(options.heartbeat_interval_seconds / 10));
      }
    }
  });

  // Running out of memory is this worker's failure, reported like any other (the heartbeat thread
  // is still running: nothing may unwind past it).
  absl::StatusOr<TrainResult> result = [&]() -> absl::StatusOr<TrainResult> {
    try {
      flexgraph::RunConfig t = train;
      if (rank != 0) t.mutable_output()->set_quiet(true);
      FG_ASSIGN_OR_RETURN(auto trainer,
                          Trainer::Create(t, {comm.get(), owners, options.exchange, options.pipeline}));
      return trainer->Run();
    } catch (const std::bad_alloc& e) {
      comm->Abort(absl::ResourceExhaustedError(absl::StrCat("worker ", rank, " ran out of memory")));
      return absl::ResourceExhaustedError(absl::StrCat("worker ", rank, ": ", e.what()));
    }
  }();

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
