// Worker-to-worker channels of gRPC runs, with real gRPC servers and communicators on loopback:
// under TLS the bytes between two workers are encrypted (a relay between them sees neither a
// message nor the run token, where without TLS it sees both); a plaintext peer, or one whose
// certificate another CA signed, exchanges nothing with a TLS worker, and each side logs the refusal
// naming the other (rank and address). Also what a worker's heartbeats report of its training's
// communication (the coordinator names a stalled worker from it).
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "proto/flexgraph.grpc.pb.h"
#include "runtime/comm/auth.h"
#include "runtime/comm/grpc_communicator.h"
#include "tests/runtime/comm/test_certificates.h"
#include "tests/runtime/scratch_dir.h"

namespace fg::runtime {
namespace {

using fg::testing::MakeTestCertificates;

constexpr char kToken[] = "run-token-4f1d2c9a";
const uint64_t kTag = MakeTag(1, 0, 1, TrafficKind::kFeatures);

// The certificates, made once per process.
const std::string& CertDir() {
  static const std::string d = [] {
    std::string dir = fg::testing::ScratchDir("fg_grpc_tls");
    if (!MakeTestCertificates(dir)) dir.clear();
    return dir;
  }();
  return d;
}

Tls Load(const std::string& cert, const std::string& key, const std::string& ca) {
  const std::string d = CertDir() + "/";
  auto tls = LoadTls(d + cert, d + key, ca.empty() ? "" : d + ca);
  EXPECT_TRUE(tls.ok()) << tls.status();
  return tls.ok() ? *tls : Tls{};
}

// A TCP relay on loopback to `target_port` that records what clients send through it.
class Relay {
 public:
  explicit Relay(int target_port) : target_port_(target_port) {
    listen_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    EXPECT_EQ(bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(listen(listen_, 8), 0);
    getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    accept_ = std::thread([this] { AcceptLoop(); });
  }
  ~Relay() {
    stop_ = true;
    accept_.join();
    for (std::thread& t : pumps_) t.join();
    close(listen_);
  }
  int port() const { return port_; }
  std::string sent() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listen_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int client = accept(listen_, nullptr, nullptr);
      if (client < 0) continue;
      const int server = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(target_port_);
      if (connect(server, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        close(client);
        close(server);
        continue;
      }
      pumps_.emplace_back([this, client, server] { Pump(client, server); });
    }
  }
  // Copies both ways until either side closes or the relay stops.
  void Pump(int client, int server) {
    char buf[1 << 16];
    while (!stop_) {
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (poll(p, 2, 50) <= 0) continue;
      bool closed = false;
      for (int i = 0; i < 2 && !closed; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = read(p[i].fd, buf, sizeof(buf));
        if (n <= 0) {
          closed = true;
          break;
        }
        if (i == 0) {
          std::lock_guard<std::mutex> lock(mu_);
          sent_.append(buf, n);
        }
        for (ssize_t off = 0; off < n;) {
          const ssize_t w = write(p[1 - i].fd, buf + off, n - off);
          if (w <= 0) {
            closed = true;
            break;
          }
          off += w;
        }
      }
      if (closed) break;
    }
    close(client);
    close(server);
  }

  int target_port_, listen_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accept_;
  std::vector<std::thread> pumps_;
  mutable std::mutex mu_;
  std::string sent_;
};

struct Worker {
  std::unique_ptr<WorkerServer> server;
  std::unique_ptr<GrpcCommunicator> comm;
  std::string address() const { return "127.0.0.1:" + std::to_string(server->port()); }
};

// Two workers; worker 0 dials worker 1 at `dial_1` (its own address when empty).
std::vector<Worker> Pair(const Tls& tls0, const Tls& tls1, const std::function<std::string(int)>& dial_1 = nullptr) {
  std::vector<Worker> w(2);
  const Tls* tls[2] = {&tls0, &tls1};
  for (int r = 0; r < 2; ++r) {
    auto s = WorkerServer::Start("127.0.0.1", 0, kToken, *tls[r]);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return {};
    w[r].server = std::move(*s);
  }
  const std::vector<std::string> peers = {w[0].address(), w[1].address()};
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> dial = peers;
    if (r == 0 && dial_1) dial[1] = dial_1(w[1].server->port());
    w[r].comm = MakeGrpcCommunicator(r, dial, kToken, *tls[r], w[r].server.get());
    w[r].comm->set_timeout(std::chrono::seconds(30));
  }
  return w;
}

std::string Probe() {
  std::string p = "fg-probe-payload:";
  for (int i = 0; i < 4096; ++i) p += "feature row " + std::to_string(i) + ";";
  return p;
}

TEST(GrpcTls, WorkerToWorkerTrafficIsEncrypted) {
  ASSERT_FALSE(CertDir().empty()) << "cannot make the test certificates (openssl is needed)";
  const std::string probe = Probe();
  for (const bool tls_on : {true, false}) {
    SCOPED_TRACE(tls_on ? "TLS" : "plaintext");
    const Tls tls = tls_on ? Load("node.pem", "node.key", "ca.pem") : Tls{};
    std::unique_ptr<Relay> relay;
    // Worker 0 reaches worker 1 through the relay, which records what worker 0 sends.
    std::vector<Worker> w = Pair(tls, tls, [&](int port) {
      relay = std::make_unique<Relay>(port);
      return "127.0.0.1:" + std::to_string(relay->port());
    });
    ASSERT_EQ(w.size(), 2u);
    w[0].comm->Send(1, kTag, probe);
    w[1].comm->Send(0, kTag, "reply");
    auto got = w[1].comm->Recv(0, kTag);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, probe);
    auto reply = w[0].comm->Recv(1, kTag);
    ASSERT_TRUE(reply.ok()) << reply.status();
    const std::string wire = relay->sent();
    ASSERT_GT(wire.size(), probe.size() / 2) << "the message did not pass the relay";
    if (tls_on) {
      // A TLS record (handshake, type 22) opens the connection; neither the message nor the token
      // appears in the clear.
      EXPECT_EQ(static_cast<unsigned char>(wire[0]), 0x16);
      EXPECT_EQ(wire.find("fg-probe-payload"), std::string::npos);
      EXPECT_EQ(wire.find("feature row 4095"), std::string::npos);
      EXPECT_EQ(wire.find(kToken), std::string::npos);
    } else {
      // The control: without TLS the relay sees both (so it would have seen them above).
      EXPECT_EQ(wire.rfind("PRI * HTTP/2.0", 0), 0u);
      EXPECT_NE(wire.find("fg-probe-payload"), std::string::npos);
      EXPECT_NE(wire.find(kToken), std::string::npos);
    }
    for (Worker& x : w) x.comm.reset();
    relay.reset();
  }
}

// Both workers send; each one's receive fails with the refusal of its own send, naming the peer,
// and the refusal is logged. Returns what was logged.
std::string ExchangeRefused(std::vector<Worker>& w, const std::string& why_0, const std::string& why_1) {
  ::testing::internal::CaptureStderr();
  w[0].comm->Send(1, kTag, Probe());
  w[1].comm->Send(0, kTag, Probe());
  const auto t0 = std::chrono::steady_clock::now();
  auto at_0 = w[0].comm->Recv(1, kTag);
  auto at_1 = w[1].comm->Recv(0, kTag);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (Worker& x : w) x.comm.reset();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_LT(seconds, 20) << "a refusal must not wait for the receive timeout";
  // Nothing was delivered: each receive fails with its worker's failed send to the other.
  EXPECT_FALSE(at_0.ok());
  EXPECT_FALSE(at_1.ok());
  const std::string to_1 = "cannot send to worker 1 at " + w[1].address();
  const std::string to_0 = "cannot send to worker 0 at " + w[0].address();
  EXPECT_NE(at_0.status().ToString().find(to_1), std::string::npos) << at_0.status();
  EXPECT_NE(at_1.status().ToString().find(to_0), std::string::npos) << at_1.status();
  EXPECT_NE(at_0.status().ToString().find(why_0), std::string::npos) << at_0.status();
  EXPECT_NE(at_1.status().ToString().find(why_1), std::string::npos) << at_1.status();
  // And logged, naming the peer by rank and address.
  EXPECT_NE(log.find("worker 0: " + to_1), std::string::npos) << log;
  EXPECT_NE(log.find("worker 1: " + to_0), std::string::npos) << log;
  return log;
}

TEST(GrpcTls, APlaintextPeerIsRefusedAndTheRefusalIsLoggedNamingIt) {
  ASSERT_FALSE(CertDir().empty()) << "cannot make the test certificates (openssl is needed)";
  std::vector<Worker> w = Pair(Load("node.pem", "node.key", "ca.pem"), Tls{});
  ASSERT_EQ(w.size(), 2u);
  // Worker 0's handshake with a plaintext server fails; worker 1's plaintext connection is closed
  // by worker 0's TLS server.
  ExchangeRefused(w, "Ssl handshake failed", "does worker 0 use TLS?");
  // A plaintext call with the run's token reaches no service of a TLS worker: nothing is delivered.
  auto stub = flexgraph::Worker::NewStub(grpc::CreateChannel(w[0].address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.AddMetadata(kTokenMetadata, kToken);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  flexgraph::PushReply reply;
  auto writer = stub->Push(&ctx, &reply);
  flexgraph::Chunk chunk;
  chunk.set_src(1);
  chunk.set_tag(kTag + 1);
  chunk.set_count(1);
  chunk.set_payload("injected");
  writer->Write(chunk);
  writer->WritesDone();
  EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(w[0].server->mailbox().Take(1, kTag + 1, std::chrono::milliseconds(200)).ok());
}

TEST(GrpcTls, APeerCertifiedByAnotherCaIsRefusedAndTheRefusalIsLoggedNamingIt) {
  ASSERT_FALSE(CertDir().empty()) << "cannot make the test certificates (openssl is needed)";
  {
    SCOPED_TRACE("a peer of another CA, trusting only that CA");
    std::vector<Worker> w = Pair(Load("node.pem", "node.key", "ca.pem"), Load("ca2node.pem", "node.key", "ca2.pem"));
    ASSERT_EQ(w.size(), 2u);
    // Each verifies the other's server certificate against its own CA, and refuses it.
    ExchangeRefused(w, "certificate verify failed", "certificate verify failed");
  }
  {
    SCOPED_TRACE("a peer of another CA that trusts this run's CA too");
    std::vector<Worker> w =
        Pair(Load("node.pem", "node.key", "ca.pem"), Load("ca2node.pem", "node.key", "ca_and_ca2.pem"));
    ASSERT_EQ(w.size(), 2u);
    // Worker 1's handshake with worker 0 succeeds (it trusts worker 0's certificate); worker 0's
    // caller check refuses worker 1's certificate per call, and logs the caller's address and its
    // own account of itself (rank and address).
    const std::string log = ExchangeRefused(w, "certificate verify failed", "client certificate not accepted");
    EXPECT_NE(log.find("worker: rejected a call from ipv4:127.0.0.1:"), std::string::npos) << log;
    EXPECT_NE(log.find("(worker 1 at " + w[1].address() + ", by its own account): client certificate not accepted"),
              std::string::npos)
        << log;
  }
}

TEST(GrpcCommunicator, ActivityCountsMessagesAndNamesThePeerAReceiveWaitsFor) {
  std::vector<Worker> w = Pair(Tls{}, Tls{});
  ASSERT_EQ(w.size(), 2u);
  CommActivity a = w[0].comm->activity();
  EXPECT_EQ(a.operations, 0);
  EXPECT_EQ(a.waiting_on, -1);
  std::thread waiter([&] { EXPECT_TRUE(w[0].comm->Recv(1, kTag).ok()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  a = w[0].comm->activity();
  EXPECT_EQ(a.waiting_on, 1);
  EXPECT_GE(a.waiting_seconds, 0.5);
  EXPECT_GE(a.idle_seconds, 0.5);
  w[1].comm->Send(0, kTag, "x");
  waiter.join();
  a = w[0].comm->activity();
  EXPECT_EQ(a.operations, 1);
  EXPECT_EQ(a.waiting_on, -1);
  EXPECT_LT(a.idle_seconds, 0.5);
  EXPECT_EQ(w[1].comm->activity().operations, 1);
}

}  // namespace
}  // namespace fg::runtime
