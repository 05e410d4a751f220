// Authentication of a run's gRPC services: every call carries the run's token, and channels may use
// TLS. Under mutual TLS a server accepts any client certificate at the handshake and checks it per
// call against the run's CA, so that a rejected caller is logged with its address (a handshake
// failure inside gRPC would be logged without it).
#pragma once

#include <memory>
#include <mutex>
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
  std::string cert_file, key_file, ca_file;  // where they were read from (for messages)
  bool enabled() const { return !cert.empty(); }
};
// Reads the PEM files of --tls_cert, --tls_key and --tls_ca (all empty: plaintext) and checks them
// as a peer's handshake would, so that a misconfiguration stops the process at start-up with its
// cause rather than as refused connections: the key is the certificate's, the certificate is valid
// now (not expired), and the CA (without --tls_ca: the roots of this machine that gRPC uses,
// $GRPC_DEFAULT_SSL_ROOTS_FILE_PATH or OpenSSL's) verifies it for a TLS server and, under mutual
// TLS, for a client. Errors name the flag and the file. A certificate needs its key; a CA needs both.
absl::StatusOr<Tls> LoadTls(const std::string& cert_file, const std::string& key_file,
                            const std::string& ca_file);
// Whether the certificate names `host` (an IP address or a DNS name, wildcards as TLS allows them),
// the address peers dial to reach this process, which they check; OK without TLS and for a
// wildcard address ("", "0.0.0.0", "::"), which nobody dials.
absl::Status CheckTlsNames(const Tls& tls, const std::string& host);
std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const Tls& tls);
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const Tls& tls);

// Metadata a caller adds to say who it is ("worker 1 at host:port"): unauthenticated, it only helps
// a refusal's log name the caller beside its connection's address.
inline constexpr char kCallerMetadata[] = "fg-caller";

// The check every served call makes: the run's token (compared in constant time) and, under mutual
// TLS, a client certificate chain the CA verifies for TLS clients. A failure is UNAUTHENTICATED and
// is logged on stderr as "<who>: rejected a call from <peer address> (<caller's own account>):
// <reason>" (the first 20 of a process). A caller that fails the TLS handshake itself (plaintext,
// or a server certificate it does not trust) never reaches a service: gRPC refuses it, and the
// caller's side reports it, naming this process.
class CallerCheck {
 public:
  CallerCheck(std::string token, const Tls& tls, std::string who);
  ~CallerCheck();
  grpc::Status Check(const grpc::ServerContext& ctx) const;
  // How many calls were rejected, and the log line of the last ("" when none).
  int rejected() const;
  std::string last_rejection() const;

 private:
  class Ca;
  std::string token_, who_;
  std::unique_ptr<Ca> ca_;  // null without mutual TLS
  mutable std::mutex mu_;
  mutable int rejected_ = 0;
  mutable std::string last_rejection_;
};

}  // namespace fg::runtime
