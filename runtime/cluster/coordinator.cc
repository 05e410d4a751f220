#include "runtime/cluster/coordinator.h"

#include <grpcpp/grpcpp.h>

#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/fault.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "proto/flexgraph.grpc.pb.h"
#include "runtime/comm/grpc_communicator.h"
#include "runtime/cluster/leader.h"
#include "runtime/train/trainer.h"

namespace fg::runtime {

class Coordinator::Impl final : public flexgraph::Coordinator::Service {
 public:
  Impl(CoordinatorOptions options, flexgraph::RunConfig train)
      : options_(std::move(options)),
        train_(std::move(train)),
        caller_check_(options_.token, options_.tls, "coordinator") {}

  absl::Status Init() {
    // A certificate that does not name the address workers dial fails here, not in their handshakes.
    if (absl::Status names = CheckTlsNames(options_.tls, options_.host); !names.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("coordinator: ", names.message()));
    }
    FG_ASSIGN_OR_RETURN(OwnerPlan plan, PlanOwners(train_, options_.workers, options_.partition_method, options_.grid));
    std::fprintf(stderr, "coordinator: %s", plan.description.c_str());
    owners_ = std::move(plan.owners);
    summary_ = std::move(plan.summary);
    peers_.assign(options_.workers, "");
    last_beat_.assign(options_.workers, 0.0);
    finals_.assign(options_.workers, false);
    activity_.assign(options_.workers, Activity());
    worker_metrics_.assign(options_.workers, flexgraph::MetricsRequest());

    grpc::ServerBuilder builder;
    builder.AddListeningPort(absl::StrCat(options_.host, ":", options_.port),
                             ServerCredentials(options_.tls), &port_);
    builder.SetMaxSendMessageSize(kMaxGrpcMessageBytes);
    builder.SetMaxReceiveMessageSize(kMaxGrpcMessageBytes);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port_ == 0) {
      return absl::UnavailableError(
          absl::StrCat("coordinator: cannot listen on ", options_.host, ":", options_.port));
    }
    monitor_ = std::thread([this] { Monitor(); });
    return absl::OkStatus();
  }

  ~Impl() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (monitor_.joinable()) monitor_.join();
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }

  int port() const { return port_; }

  absl::Status Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !failure_.ok() || AllFinal(); });
    if (!failure_.ok()) return failure_;
    FaultPoint("coordinator.finished");
    FG_RETURN_IF_ERROR(WriteRunSummary(train_, worker_metrics_, PeakRssBytes()));
    FaultPoint("coordinator.summary_written");
    return absl::OkStatus();
  }

  // --- service ---------------------------------------------------------------------------------
  grpc::Status Register(grpc::ServerContext* ctx, const flexgraph::RegisterRequest* req,
                        flexgraph::RegisterReply* reply) override {
    if (grpc::Status s = caller_check_.Check(*ctx); !s.ok()) return s;
    std::unique_lock<std::mutex> lock(mu_);
    // Every process must run the same configuration: a worker with another is refused, naming the
    // fields, and logged; the run (registering or running) goes on without it.
    flexgraph::RunConfig settings;
    if (!settings.ParseFromString(req->settings())) {
      Refuse(absl::StrCat("worker at ", req->address(), " (pid ", req->pid(), "): unreadable settings"));
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "unreadable settings");
    }
    if (const std::string diff = ConfigDifferences(SharedSettings(train_), settings); !diff.empty()) {
      const std::string why = absl::StrCat("worker at ", req->address(), " (pid ", req->pid(),
                                           ") runs another configuration (coordinator -> worker): ", diff);
      Refuse(why);
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, why);
    }
    int rank = req->rank_hint();
    if (rank < 0 || rank >= options_.workers || !peers_[rank].empty()) {
      rank = -1;
      for (int r = 0; r < options_.workers && rank < 0; ++r) {
        if (peers_[r].empty()) rank = r;
      }
    }
    if (rank < 0) {
      const std::string why = absl::StrCat("all ", options_.workers, " worker slots are taken");
      Refuse(absl::StrCat("worker at ", req->address(), " (pid ", req->pid(), "): ", why));
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, why);
    }
    peers_[rank] = req->address();
    ++registered_;
    // Heartbeats start once every worker is in: none is late for waiting on the others.
    if (registered_ == options_.workers) last_beat_.assign(options_.workers, clock_.Seconds());
    std::fprintf(stderr, "coordinator: worker %d registered from %s (pid %lld)\n", rank,
                 req->address().c_str(), static_cast<long long>(req->pid()));
    cv_.notify_all();
    const bool all = cv_.wait_for(
        lock, std::chrono::duration<double>(options_.register_timeout_seconds),
        [&] { return registered_ == options_.workers || !failure_.ok(); });
    if (!failure_.ok()) {  // the run stopped while this worker waited: say why
      return grpc::Status(grpc::StatusCode::ABORTED,
                          absl::StrCat("the run stopped: ", failure_.message()));
    }
    if (!all) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                          absl::StrCat("only ", registered_, " of ", options_.workers,
                                       " workers registered"));
    }
    reply->set_rank(rank);
    reply->set_world_size(options_.workers);
    for (const auto& p : peers_) reply->add_peers(p);
    for (int32_t o : owners_) reply->add_owners(o);
    reply->set_partition_summary(summary_);
    return grpc::Status::OK;
  }

  grpc::Status Heartbeat(grpc::ServerContext* ctx, const flexgraph::HeartbeatRequest* req,
                         flexgraph::HeartbeatReply* reply) override {
    if (grpc::Status s = caller_check_.Check(*ctx); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    if (req->rank() >= 0 && req->rank() < options_.workers) {
      last_beat_[req->rank()] = clock_.Seconds();
      Activity& a = activity_[req->rank()];
      a.at = clock_.Seconds();
      a.operations = req->operations();
      a.idle = req->idle_seconds();
      a.waiting_on = req->waiting_on() - 1;
      a.waiting = req->waiting_seconds();
      a.quiet = req->quiet_seconds();
    }
    if (!failure_.ok()) {
      reply->set_stop(true);
      reply->set_reason(std::string(failure_.message()));
    }
    return grpc::Status::OK;
  }

  grpc::Status Barrier(grpc::ServerContext* ctx, const flexgraph::BarrierRequest*,
                       flexgraph::BarrierReply*) override {
    if (grpc::Status s = caller_check_.Check(*ctx); !s.ok()) return s;
    return grpc::Status::OK;
  }

  grpc::Status ReportMetrics(grpc::ServerContext* ctx, const flexgraph::MetricsRequest* req,
                             flexgraph::MetricsReply*) override {
    if (grpc::Status s = caller_check_.Check(*ctx); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    const int r = req->rank();
    if (r < 0 || r >= options_.workers) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "rank out of range");
    }
    if (!req->error().empty()) {
      Fail(absl::AbortedError(absl::StrCat("worker ", r, " (", peers_[r], ") failed: ", req->error())));
    } else if (req->final() && r == 0 && !StructFromJson(req->summary_json(), "").ok()) {
      // A final report the run summary cannot be made from fails the run now, and the worker that
      // sent it, rather than the coordinator alone once every worker has finished.
      const std::string why =
          absl::StrCat("the final report of worker 0 (", peers_[r],
                       ") is malformed: the summary of worker 0 is not a JSON object");
      Fail(absl::DataLossError(why));
      cv_.notify_all();
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why);
    } else if (req->final()) {
      worker_metrics_[r] = *req;
      finals_[r] = true;
      last_beat_[r] = 1e300;  // finished: no more heartbeats expected
    }
    cv_.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status Shutdown(grpc::ServerContext* ctx, const flexgraph::ShutdownRequest* req,
                        flexgraph::ShutdownReply*) override {
    if (grpc::Status s = caller_check_.Check(*ctx); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    Fail(absl::CancelledError(absl::StrCat("shutdown requested: ", req->reason())));
    cv_.notify_all();
    return grpc::Status::OK;
  }

 private:
  bool AllFinal() const {
    for (bool f : finals_) {
      if (!f) return false;
    }
    return true;
  }
  // A registration turned away; logged, and kept for the registration timeout's message. mu_ held.
  void Refuse(const std::string& why) {
    std::fprintf(stderr, "coordinator: refused a registration: %s\n", why.c_str());
    ++refused_;
    last_refusal_ = why;
  }
  void Fail(const absl::Status& s) {  // mu_ held
    if (failure_.ok()) {
      failure_ = s;
      std::fprintf(stderr, "coordinator: %s\n", std::string(s.message()).c_str());
    }
  }

  // A worker's training as its last heartbeat reported it (CommActivity), aged to now.
  struct Activity {
    double at = -1;  // when reported (-1: never)
    int64_t operations = 0;
    double idle = 0, waiting = 0, quiet = 0;
    int waiting_on = -1;
  };
  double IdleNow(int r, double now) const { return activity_[r].idle + (now - activity_[r].at); }
  double WaitingNow(int r, double now) const { return activity_[r].waiting + (now - activity_[r].at); }
  double QuietNow(int r, double now) const { return activity_[r].quiet + (now - activity_[r].at); }
  int WaitsFor(int r) const {
    const Activity& a = activity_[r];
    return finals_[r] || a.at < 0 || a.waiting_on < 0 || a.waiting_on >= options_.workers ? -1 : a.waiting_on;
  }

  // A worker whose training stopped communicating while another waits for it (directly or through
  // others waiting): its heartbeats go on, so only its activity shows it. The failure names it and
  // who waits. "" when none. mu_ held.
  std::string Stalled(double now) const {
    const double limit = options_.stall_timeout_seconds;
    const int P = options_.workers;
    for (int r = 0; r < P; ++r) {
      const Activity& a = activity_[r];
      if (finals_[r] || a.at < 0 || a.operations == 0 || WaitsFor(r) >= 0 || IdleNow(r, now) <= limit) continue;
      for (int q = 0; q < P; ++q) {
        int x = q;
        for (int step = 0; step < P && x >= 0 && x != r; ++step) x = WaitsFor(x);
        if (q == r || x != r) continue;
        return absl::StrCat("worker ", r, " (", peers_[r], ") stalled: its training has sent and received nothing for ",
                            static_cast<int>(IdleNow(r, now)), " s while its heartbeats go on, and worker ", q,
                            " waits for it (", static_cast<int>(WaitingNow(q, now)), " s; --stall_timeout ", limit,
                            ")");
      }
    }
    // Workers waiting for each other in a cycle, each for longer than the limit: a deadlock.
    for (int q = 0; q < P; ++q) {
      std::vector<int> cycle = {q};
      for (int x = WaitsFor(q); x >= 0 && x != q && cycle.size() <= static_cast<size_t>(P); x = WaitsFor(x)) {
        cycle.push_back(x);
      }
      if (cycle.size() > static_cast<size_t>(P) || WaitsFor(cycle.back()) != q) continue;
      bool all = true;
      for (int x : cycle) all = all && WaitingNow(x, now) > limit;
      if (all) {
        return absl::StrCat("workers ", absl::StrJoin(cycle, ", "), " wait for each other in a cycle, each for more than ",
                            limit, " s (--stall_timeout): stalled");
      }
    }
    // A worker that neither moves on nor communicates, and waits for no peer: it hangs, whether or
    // not anyone waits for it yet (before its first message, or alone in the run).
    for (int r = 0; r < P; ++r) {
      const Activity& a = activity_[r];
      if (finals_[r] || a.at < 0 || WaitsFor(r) >= 0 || QuietNow(r, now) <= limit) continue;
      return absl::StrCat("worker ", r, " (", peers_[r], ") stalled: its training has neither moved on nor ",
                          "communicated for ", static_cast<int>(QuietNow(r, now)),
                          " s while its heartbeats go on (--stall_timeout ", limit, ")");
    }
    return "";
  }

  // Stops the run when a registered worker misses its heartbeats or stalls.
  void Monitor() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_) {
      cv_.wait_for(lock, std::chrono::milliseconds(200));
      const double now = clock_.Seconds();
      for (int r = 0; r < options_.workers && registered_ == options_.workers; ++r) {
        if (finals_[r]) continue;
        if (now - last_beat_[r] > options_.heartbeat_timeout_seconds) {
          Fail(absl::UnavailableError(absl::StrCat(
              "worker ", r, " (", peers_[r], ") missed heartbeats for ",
              static_cast<int>(now - last_beat_[r]), " s: presumed dead")));
          cv_.notify_all();
        }
      }
      if (registered_ == options_.workers && failure_.ok()) {
        if (const std::string stalled = Stalled(now); !stalled.empty()) {
          Fail(absl::DeadlineExceededError(stalled));
          cv_.notify_all();
        }
      }
      if (registered_ < options_.workers && now > options_.register_timeout_seconds) {
        std::vector<int> missing;
        for (int r = 0; r < options_.workers; ++r) {
          if (peers_[r].empty()) missing.push_back(r);
        }
        // What was turned away may be why: a refused registration, a rejected call.
        std::string seen;
        if (refused_ > 0) absl::StrAppend(&seen, "; ", refused_, " registrations refused, the last: ", last_refusal_);
        if (const int n = caller_check_.rejected(); n > 0) {
          absl::StrAppend(&seen, "; ", n, " calls rejected, the last: ", caller_check_.last_rejection());
        }
        if (seen.empty() && registered_ == 0) seen = "; no worker reached the coordinator (their logs say why)";
        Fail(absl::DeadlineExceededError(absl::StrCat(
            "only ", registered_, " of ", options_.workers, " workers registered within ",
            options_.register_timeout_seconds, " s (ranks ", absl::StrJoin(missing, ", "),
            " missing)", seen)));
        cv_.notify_all();
      }
    }
  }

  CoordinatorOptions options_;
  flexgraph::RunConfig train_;
  CallerCheck caller_check_;
  std::vector<int32_t> owners_;
  std::string summary_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  Stopwatch clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> peers_;
  std::vector<double> last_beat_;
  std::vector<bool> finals_;
  std::vector<flexgraph::MetricsRequest> worker_metrics_;
  std::vector<Activity> activity_;
  int registered_ = 0;
  int refused_ = 0;
  std::string last_refusal_;
  absl::Status failure_;
  bool done_ = false;
  std::thread monitor_;
};

Coordinator::Coordinator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Coordinator::~Coordinator() = default;

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Start(const CoordinatorOptions& options,
                                                                const flexgraph::RunConfig& train) {
  if (options.workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("workers must be positive, got ", options.workers));
  }
  auto impl = std::make_unique<Impl>(options, train);
  FG_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Coordinator>(new Coordinator(std::move(impl)));
}

int Coordinator::port() const { return impl_->port(); }
absl::Status Coordinator::Wait() { return impl_->Wait(); }

}  // namespace fg::runtime
