// GrpcCommunicator: the Communicator of multi-process runs. Each worker serves the Worker service
// (proto/flexgraph.proto); a message to a peer travels as a client stream of chunks of at most
// 4 MiB on one Push call, sent by a background thread per peer (queued messages to the same peer
// share one call). Every call carries the run's token in the "fg-token" metadata; calls without it
// are rejected. A peer that cannot be reached fails the communicator with an error naming it.
// Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/communicator.h"

namespace grpc {
class Server;
class ServerContext;
class Status;
}

namespace fg::runtime {

inline constexpr char kTokenMetadata[] = "fg-token";
// The check every served call makes: OK when `ctx` carries `token` (compared in constant time);
// otherwise UNAUTHENTICATED, and the rejection is logged on stderr as "<who>: rejected a call
// from <peer address>" (the first 20 of a process).
grpc::Status CheckToken(const grpc::ServerContext& ctx, const std::string& token, const char* who);
inline constexpr size_t kMaxChunkBytes = 4 << 20;
// gRPC message size limit used by every FlexGraph channel and server.
inline constexpr int kMaxGrpcMessageBytes = 1 << 30;

// A worker's inbox: the Worker service writing into a Mailbox. Started before registration so its
// port is known.
class WorkerServer {
 public:
  // Listens on host:port (port 0: an ephemeral port).
  static absl::StatusOr<std::unique_ptr<WorkerServer>> Start(const std::string& host, int port,
                                                             const std::string& token);
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
                                                   const std::string& token, WorkerServer* server);

}  // namespace fg::runtime
