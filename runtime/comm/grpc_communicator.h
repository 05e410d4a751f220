// GrpcCommunicator: the Communicator of multi-process runs. Each worker serves the Worker service
// (proto/flexgraph.proto); a message to a peer travels as a client stream of chunks of at most
// 4 MiB on one Push call, sent by a background thread per peer (queued messages to the same peer
// share one call). Every call carries the run's token and, under TLS, runs over TLS; the server
// checks its callers (auth.h). A peer that cannot be reached or refuses this worker (a TLS handshake,
// its caller check) fails the communicator with an error naming it, logged on stderr.
// Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/comm/auth.h"
#include "runtime/comm/communicator.h"

namespace grpc {
class Server;
}

namespace fg::runtime {

// Messages travel in chunks of at most this many bytes, so that beside a message its sender and its
// receiver hold about one chunk in gRPC's buffers, not a second copy of the whole message.
inline constexpr size_t kMaxChunkBytes = 4 << 20;
// gRPC message size limit used by every FlexGraph channel and server.
inline constexpr int kMaxGrpcMessageBytes = 1 << 30;

// A worker's inbox: the Worker service writing into a Mailbox. Started before registration so its
// port is known.
class WorkerServer {
 public:
  // Listens on host:port (port 0: an ephemeral port).
  static absl::StatusOr<std::unique_ptr<WorkerServer>> Start(const std::string& host, int port,
                                                             const std::string& token, const Tls& tls);
  ~WorkerServer();
  int port() const { return port_; }
  Mailbox& mailbox() { return *mailbox_; }
  void Shutdown();

 private:
  class Service;
  WorkerServer() = default;
  std::shared_ptr<Mailbox> mailbox_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// What a worker's training is doing, as its heartbeats report it: the coordinator names a worker
// that stopped communicating while its heartbeats go on (coordinator.h).
struct CommActivity {
  int64_t operations = 0;      // messages sent and received so far
  double idle_seconds = 0;     // since the last of them (since the communicator was made: none yet)
  int waiting_on = -1;         // the peer the longest-waiting receive waits for now, or -1
  double waiting_seconds = 0;  // how long that receive has waited
};

class GrpcCommunicator : public Communicator {
 public:
  virtual CommActivity activity() const = 0;
};

// Connects to the peers' Worker services; receives through `server`'s mailbox.
std::unique_ptr<GrpcCommunicator> MakeGrpcCommunicator(int rank, std::vector<std::string> peers,
                                                       const std::string& token, const Tls& tls,
                                                       WorkerServer* server);

}  // namespace fg::runtime
