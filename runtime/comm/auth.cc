#include "runtime/comm/auth.h"

#include <grpcpp/grpcpp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"

namespace fg::runtime {
namespace {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

// Every certificate in a PEM text, in order.
std::vector<X509Ptr> ReadCertificates(const std::string& pem) {
  std::vector<X509Ptr> certs;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return certs;
  while (X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) certs.emplace_back(x);
  BIO_free(bio);
  ERR_clear_error();  // the end of the text reads as an error
  return certs;
}

}  // namespace

absl::StatusOr<Tls> LoadTls(const std::string& cert_file, const std::string& key_file,
                            const std::string& ca_file) {
  Tls tls;
  if (cert_file.empty() && key_file.empty() && ca_file.empty()) return tls;
  if (cert_file.empty() || key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together (and --tls_ca needs both)");
  }
  auto read = [](const char* flag, const std::string& path, const char* marker, std::string* out) -> absl::Status {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": cannot read it"));
    *out = ss.str();
    if (out->find(marker) == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": not a PEM file (no '", marker, "')"));
    }
    return absl::OkStatus();
  };
  FG_RETURN_IF_ERROR(read("--tls_cert", cert_file, "-----BEGIN CERTIFICATE-----", &tls.cert));
  FG_RETURN_IF_ERROR(read("--tls_key", key_file, "PRIVATE KEY-----", &tls.key));
  if (!ca_file.empty()) {
    FG_RETURN_IF_ERROR(read("--tls_ca", ca_file, "-----BEGIN CERTIFICATE-----", &tls.ca));
    if (ReadCertificates(tls.ca).empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--tls_ca ", ca_file, ": no readable certificate"));
    }
  }
  return tls;
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const Tls& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  // With a CA the client's certificate is asked for and checked per call (CallerCheck), where the
  // caller's address is known.
  grpc::SslServerCredentialsOptions options(tls.ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                           : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_BUT_DONT_VERIFY);
  options.pem_root_certs = tls.ca;
  options.pem_key_cert_pairs.push_back({tls.key, tls.cert});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const Tls& tls) {
  if (!tls.enabled()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls.ca;  // empty: the system's roots
  if (!tls.ca.empty()) {            // mutual TLS: present this process's certificate
    options.pem_private_key = tls.key;
    options.pem_cert_chain = tls.cert;
  }
  return grpc::SslCredentials(options);
}

// The run's CA as an OpenSSL store. The TLS handshake has already proved that the client holds the
// key of the certificate it presented; Verify checks that the CA vouches for it.
class CallerCheck::Ca {
 public:
  explicit Ca(const std::string& pem) : store_(X509_STORE_new()) {
    for (X509Ptr& cert : ReadCertificates(pem)) X509_STORE_add_cert(store_, cert.get());
  }
  ~Ca() { X509_STORE_free(store_); }
  // Empty when `leaf_pem` (with the intermediates of `chain_pem`) verifies; otherwise the reason.
  std::string Verify(const std::string& leaf_pem, const std::string& chain_pem) const {
    std::vector<X509Ptr> leaf = ReadCertificates(leaf_pem), chain = ReadCertificates(chain_pem);
    if (leaf.empty()) return "no client certificate";
    STACK_OF(X509)* untrusted = sk_X509_new_null();
    for (X509Ptr& c : chain) sk_X509_push(untrusted, c.get());
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    std::string why;
    if (ctx == nullptr || X509_STORE_CTX_init(ctx, store_, leaf[0].get(), untrusted) != 1) {
      why = "cannot verify the client certificate";
    } else {
      X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT);
      if (X509_verify_cert(ctx) != 1) {
        why = absl::StrCat("client certificate not accepted: ",
                           X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
      }
    }
    X509_STORE_CTX_free(ctx);
    sk_X509_free(untrusted);
    ERR_clear_error();
    return why;
  }

 private:
  X509_STORE* store_;
};

CallerCheck::CallerCheck(std::string token, const Tls& tls, std::string who)
    : token_(std::move(token)), who_(std::move(who)) {
  if (tls.enabled() && !tls.ca.empty()) ca_ = std::make_unique<Ca>(tls.ca);
}

CallerCheck::~CallerCheck() = default;

grpc::Status CallerCheck::Check(const grpc::ServerContext& ctx) const {
  std::string why;
  auto it = ctx.client_metadata().find(kTokenMetadata);
  bool same = it != ctx.client_metadata().end() && it->second.size() == token_.size();
  if (same) {  // constant time in the token's contents
    unsigned char diff = 0;
    for (size_t i = 0; i < token_.size(); ++i) diff |= static_cast<unsigned char>(it->second.data()[i] ^ token_[i]);
    same = diff == 0;
  }
  if (!same) why = "missing or wrong run token";
  if (why.empty() && ca_) {
    auto first = [&](const char* property) {
      const auto values = ctx.auth_context()->FindPropertyValues(property);
      return values.empty() ? std::string() : std::string(values.front().data(), values.front().size());
    };
    why = ca_->Verify(first(GRPC_X509_PEM_CERT_PROPERTY_NAME), first(GRPC_X509_PEM_CERT_CHAIN_PROPERTY_NAME));
  }
  if (why.empty()) return grpc::Status::OK;
  static std::atomic<int> logged{0};
  if (const int n = logged++; n < 20) {
    std::fprintf(stderr, "%s: rejected a call from %s: %s%s\n", who_.c_str(), ctx.peer().c_str(), why.c_str(),
                 n == 19 ? " (further rejections are not logged)" : "");
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, why);
}

}  // namespace fg::runtime
