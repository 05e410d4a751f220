// GrpcCommunicator: the Communicator of multi-process runs. Each worker serves the Worker service
// (proto/flexgraph.proto); a message to a peer travels as a client stream of chunks of at most
// 4 MiB on one Push call, sent by a background thread per peer (queued messages to the same peer
// share one call). Every call carries the run's token; the server checks its callers (auth.h). A peer that cannot be reached fails the communicator with an error naming it.
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

// Connects to the peers' Worker services; receives through `server`'s mailbox.
std::unique_ptr<Communicator> MakeGrpcCommunicator(int rank, std::vector<std::string> peers,
                                                   const std::string& token, const Tls& tls,
                                                   WorkerServer* server);

}  // namespace fg::runtime
