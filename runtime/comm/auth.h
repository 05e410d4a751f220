// Authentication of a run's gRPC services: every call carries the run's token, and channels may use
// TLS. Under mutual TLS a server accepts any client certificate at the handshake and checks it per
// call against the run's CA, so that a rejected caller is logged with its address (a handshake
// failure inside gRPC would be logged without it).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace grpc {
class ChannelCredentials;
class ServerContext;
class ServerCredentials;
class Status;
}

namespace fg::runtime {

inline constexpr char kTokenMetadata[] = "fg-token";

// TLS of a run's gRPC channels (PEM contents); no certificate: plaintext. With a CA, mutual TLS:
// servers require a client certificate the CA signed (CallerCheck), and clients verify servers
// against the CA; without one, servers ask for no client certificate and clients verify servers
// against the system's roots. Certificates must name the host peers dial (launch: the
// coordinator's host name, each worker's advertised host; loopback runs: 127.0.0.1).
struct Tls {
  std::string cert, key, ca;
  bool enabled() const { return !cert.empty(); }
};
// Reads the PEM files of --tls_cert, --tls_key and --tls_ca (all empty: plaintext); errors name the
// flag and the file. A certificate needs its key; a CA needs both.
absl::StatusOr<Tls> LoadTls(const std::string& cert_file, const std::string& key_file,
                            const std::string& ca_file);
std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const Tls& tls);
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const Tls& tls);

// The check every served call makes: the run's token (compared in constant time) and, under mutual
// TLS, a client certificate chain the CA verifies for TLS clients. A failure is UNAUTHENTICATED and
// is logged on stderr as "<who>: rejected a call from <peer address>: <reason>" (the first 20 of a
// process).
class CallerCheck {
 public:
  CallerCheck(std::string token, const Tls& tls, std::string who);
  ~CallerCheck();
  grpc::Status Check(const grpc::ServerContext& ctx) const;

 private:
  class Ca;
  std::string token_, who_;
  std::unique_ptr<Ca> ca_;  // null without mutual TLS
};

}  // namespace fg::runtime
