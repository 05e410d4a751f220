#include "runtime/comm/grpc_communicator.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "proto/flexgraph.grpc.pb.h"

namespace fg::runtime {

// Assembles chunked messages into the mailbox; rejects unauthenticated callers.
class WorkerServer::Service final : public flexgraph::Worker::Service {
 public:
  Service(std::string token, const Tls& tls, std::shared_ptr<Mailbox> mailbox)
      : caller_check_(std::move(token), tls, "worker"), mailbox_(std::move(mailbox)) {}

  grpc::Status Push(grpc::ServerContext* context, grpc::ServerReader<flexgraph::Chunk>* reader,
                    flexgraph::PushReply*) override {
    if (grpc::Status s = caller_check_.Check(*context); !s.ok()) return s;
    // Accepted: the sender waits for this before it writes (a refusal ends the call instead), so
    // that it learns of a refusal at once rather than at a later write.
    reader->SendInitialMetadata();
    flexgraph::Chunk chunk;
    std::map<std::pair<int, uint64_t>, std::string> partial;
    while (reader->Read(&chunk)) {
      const auto key = std::make_pair(chunk.src(), chunk.tag());
      std::string& buf = partial[key];
      if (buf.empty() && chunk.count() <= 1) {
        buf = std::move(*chunk.mutable_payload());
      } else {
        if (buf.empty()) {
          // Room for the whole message at once (growing by doubling would copy it and could hold
          // twice its size); a count beyond the message size limit gets no more than the limit.
          buf.reserve(std::min<uint64_t>(uint64_t{kMaxChunkBytes} * static_cast<uint32_t>(chunk.count()),
                                         kMaxGrpcMessageBytes));
        }
        buf.append(chunk.payload());
      }
      if (chunk.index() + 1 == chunk.count()) {
        // A duplicate (source, tag) has failed this worker; the sender fails with it too.
        absl::Status put = mailbox_->Put(chunk.src(), chunk.tag(), std::move(buf));
        if (!put.ok()) return grpc::Status(grpc::StatusCode::DATA_LOSS, std::string(put.message()));
        partial.erase(key);
      }
    }
    if (!partial.empty()) {
      return grpc::Status(grpc::StatusCode::DATA_LOSS, "stream ended inside a message");
    }
    return grpc::Status::OK;
  }

  grpc::Status Shutdown(grpc::ServerContext* context, const flexgraph::ShutdownRequest* request,
                        flexgraph::ShutdownReply*) override {
    if (grpc::Status s = caller_check_.Check(*context); !s.ok()) return s;
    mailbox_->Abort(absl::CancelledError(absl::StrCat("shutdown: ", request->reason())));
    return grpc::Status::OK;
  }

 private:
  CallerCheck caller_check_;
  std::shared_ptr<Mailbox> mailbox_;
};

absl::StatusOr<std::unique_ptr<WorkerServer>> WorkerServer::Start(const std::string& host,
                                                                  int port,
                                                                  const std::string& token,
                                                                  const Tls& tls) {
  std::unique_ptr<WorkerServer> s(new WorkerServer());
  s->mailbox_ = std::make_shared<Mailbox>();
  s->service_ = std::make_unique<Service>(token, tls, s->mailbox_);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat(host, ":", port), ServerCredentials(tls), &s->port_);
  builder.SetMaxReceiveMessageSize(kMaxGrpcMessageBytes);
  builder.SetMaxSendMessageSize(kMaxGrpcMessageBytes);
  // Bulk transfers in large frames.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (1 << 24) - 1);
  builder.RegisterService(s->service_.get());
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":", port));
  }
  return s;
}

WorkerServer::~WorkerServer() { Shutdown(); }

void WorkerServer::Shutdown() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_.reset();
  }
}

namespace {

class GrpcCommunicatorImpl : public GrpcCommunicator {
 public:
  GrpcCommunicatorImpl(int rank, std::vector<std::string> peers, std::string token, const Tls& tls,
                       WorkerServer* server)
      : rank_(rank), peers_(std::move(peers)), token_(std::move(token)), tls_(tls.enabled()), server_(server) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxGrpcMessageBytes);
    args.SetMaxSendMessageSize(kMaxGrpcMessageBytes);
    args.SetInt(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (1 << 24) - 1);
    if (const char* rate = std::getenv("FG_LINK_BYTES_PER_SECOND")) link_bytes_per_second_ = std::atof(rate);
    senders_.resize(peers_.size());
    for (size_t p = 0; p < peers_.size(); ++p) {
      if (static_cast<int>(p) == rank_) continue;
      auto channel =
          grpc::CreateCustomChannel(peers_[p], ChannelCredentials(tls), args);
      senders_[p] = std::make_unique<Sender>();
      senders_[p]->stub = flexgraph::Worker::NewStub(channel);
      senders_[p]->thread = std::thread([this, p] { SendLoop(static_cast<int>(p)); });
    }
  }

  ~GrpcCommunicatorImpl() override {
    for (auto& s : senders_) {
      if (!s) continue;
      {
        std::lock_guard<std::mutex> lock(s->mu);
        s->closing = true;
        if (s->opening != nullptr) s->opening->TryCancel();  // a peer that never answers
      }
      s->cv.notify_all();
    }
    for (auto& s : senders_) {
      if (s && s->thread.joinable()) s->thread.join();
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(peers_.size()); }

  void Send(int peer, uint64_t tag, std::string payload) override {
    CountSent(tag, payload.size());
    Operated();
    Sender& s = *senders_[peer];
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.queue.push_back({tag, std::move(payload)});
    }
    s.cv.notify_all();
  }

  absl::StatusOr<std::string> Recv(int peer, uint64_t tag) override {
    Stopwatch w;
    uint64_t id;
    {
      std::lock_guard<std::mutex> lock(activity_mu_);
      id = next_wait_++;
      waits_[id] = {peer, clock_.Seconds()};
    }
    auto r = server_->mailbox().Take(peer, tag, timeout());
    {
      std::lock_guard<std::mutex> lock(activity_mu_);
      waits_.erase(id);
    }
    if (r.ok()) Operated();
    CountWait(w.Seconds());
    if (!r.ok() && r.status().code() == absl::StatusCode::kDeadlineExceeded) {
      return absl::DeadlineExceededError(absl::StrCat(r.status().message(), " (worker ", peer,
                                                      " at ", peers_[peer], ")"));
    }
    return r;
  }

  void Abort(const absl::Status& status) override { server_->mailbox().Abort(status); }

  CommActivity activity() const override {
    CommActivity a;
    const double now = clock_.Seconds();
    a.operations = operations_.load();
    a.idle_seconds = now - last_operation_.load();
    std::lock_guard<std::mutex> lock(activity_mu_);
    for (const auto& [id, wait] : waits_) {
      if (a.waiting_on < 0 || now - wait.second > a.waiting_seconds) {
        a.waiting_on = wait.first;
        a.waiting_seconds = now - wait.second;
      }
    }
    return a;
  }

 private:
  void Operated() {
    ++operations_;
    last_operation_ = clock_.Seconds();
  }

  struct Sender {
    std::unique_ptr<flexgraph::Worker::Stub> stub;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::pair<uint64_t, std::string>> queue;
    bool closing = false;
    grpc::ClientContext* opening = nullptr;  // a stream waiting for the peer to accept it
    std::thread thread;
  };

  // Drains the queue for `peer` onto one Push stream that lives as long as the communicator (a
  // call per message would pay a call's setup every time). A failed write fails the communicator.
  void SendLoop(int peer) {
    Sender& s = *senders_[peer];
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientWriter<flexgraph::Chunk>> writer;
    flexgraph::PushReply reply;
    bool failed = false;
    while (true) {
      std::deque<std::pair<uint64_t, std::string>> batch;
      bool closing;
      {
        std::unique_lock<std::mutex> lock(s.mu);
        s.cv.wait(lock, [&] { return s.closing || !s.queue.empty(); });
        batch.swap(s.queue);
        closing = s.closing;
      }
      if (failed) {  // the stream broke: drop what is queued until the communicator closes
        if (closing) return;
        continue;
      }
      bool ok = true;
      for (auto& [tag, payload] : batch) {
        if (!writer) {
          context = std::make_unique<grpc::ClientContext>();
          context->AddMetadata(kTokenMetadata, token_);
          context->AddMetadata(kCallerMetadata, absl::StrCat("worker ", rank_, " at ", peers_[rank_]));
          writer = s.stub->Push(context.get(), &reply);
          {
            std::lock_guard<std::mutex> lock(s.mu);
            s.opening = context.get();
            if (s.closing) context->TryCancel();
          }
          // The peer accepts this caller (its caller check) or ends the call, refusing it: then
          // the first write fails, and Finish says why.
          writer->WaitForInitialMetadata();
          std::lock_guard<std::mutex> lock(s.mu);
          s.opening = nullptr;
        }
        const size_t n = payload.size();
        const int count = static_cast<int>(std::max<size_t>(1, (n + kMaxChunkBytes - 1) / kMaxChunkBytes));
        for (int i = 0; i < count && ok; ++i) {
          flexgraph::Chunk chunk;
          chunk.set_src(rank_);
          chunk.set_tag(tag);
          chunk.set_index(i);
          chunk.set_count(count);
          if (count == 1) {
            chunk.set_payload(std::move(payload));
          } else {
            const size_t lo = static_cast<size_t>(i) * kMaxChunkBytes;
            chunk.set_payload(payload.data() + lo, std::min(kMaxChunkBytes, n - lo));
          }
          ok = writer->Write(chunk);
        }
        std::string().swap(payload);  // written: released before the batch's next message
        if (!ok) break;
        if (link_bytes_per_second_ > 0) {  // benchmark shaping: emulate a slower link
          std::this_thread::sleep_for(std::chrono::duration<double>(n / link_bytes_per_second_));
        }
      }
      if (ok && !closing) continue;
      grpc::Status status = grpc::Status::OK;
      if (writer) {
        if (ok) writer->WritesDone();
        status = writer->Finish();
        writer.reset();
      }
      if (!ok || !status.ok()) {
        failed = true;
        const std::string& m = status.error_message();
        const bool plaintext_refused =
            !tls_ && (m.find("Socket closed") != std::string::npos || m.find("reset by peer") != std::string::npos);
        const std::string why =
            absl::StrCat("cannot send to worker ", peer, " at ", peers_[peer], ": ", status.ok() ? "the stream broke" : m,
                         plaintext_refused ? absl::StrCat(" (does worker ", peer, " use TLS?)") : "");
        // A refusal (a TLS handshake either side rejected, the peer's caller check) is logged here,
        // naming the peer: the peer's side of a failed handshake never reaches its service. Not a
        // peer that went away after every write went through, as peers do at the end of a run.
        if (!ok || !closing) std::fprintf(stderr, "worker %d: %s\n", rank_, why.c_str());
        Abort(absl::UnavailableError(why));
      }
      if (closing) return;
    }
  }

  int rank_;
  std::vector<std::string> peers_;
  std::string token_;
  bool tls_;
  WorkerServer* server_;
  // Activity (activity()): operations, the time of the last, and the receives waiting now.
  Stopwatch clock_;
  std::atomic<int64_t> operations_{0};
  std::atomic<double> last_operation_{0};
  mutable std::mutex activity_mu_;
  uint64_t next_wait_ = 0;
  std::map<uint64_t, std::pair<int, double>> waits_;  // id -> (peer, since)
  std::vector<std::unique_ptr<Sender>> senders_;
  // Benchmarks only: FG_LINK_BYTES_PER_SECOND limits each peer link to this rate (0: unlimited).
  double link_bytes_per_second_ = 0;
};

}  // namespace

std::unique_ptr<GrpcCommunicator> MakeGrpcCommunicator(int rank, std::vector<std::string> peers,
                                                       const std::string& token, const Tls& tls,
                                                       WorkerServer* server) {
  return std::make_unique<GrpcCommunicatorImpl>(rank, std::move(peers), token, tls, server);
}

}  // namespace fg::runtime
