#include "runtime/comm/auth.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>

#include <atomic>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/status.h"

namespace fg::runtime {
namespace {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct StoreFree {
  void operator()(X509_STORE* s) const { X509_STORE_free(s); }
};
using StorePtr = std::unique_ptr<X509_STORE, StoreFree>;

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

// The first private key of a PEM text; null when there is none or it is encrypted (never a prompt).
std::unique_ptr<EVP_PKEY, KeyFree> ReadKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return nullptr;
  pem_password_cb* no_password = [](char*, int, int, void*) { return 0; };
  std::unique_ptr<EVP_PKEY, KeyFree> key(PEM_read_bio_PrivateKey(bio, nullptr, no_password, nullptr));
  BIO_free(bio);
  ERR_clear_error();
  return key;
}

std::string TimeText(const ASN1_TIME* t) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "?";
  ASN1_TIME_print(bio, t);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string text(data, n > 0 ? n : 0);
  BIO_free(bio);
  return text;
}

// The names a certificate answers to: its subjectAltName entries, else its common name.
std::string Names(X509* cert) {
  std::vector<std::string> out;
  auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    if (n->type == GEN_DNS) {
      out.push_back(absl::StrCat("DNS:", std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(n->d.dNSName)),
                                                     ASN1_STRING_length(n->d.dNSName))));
    } else if (n->type == GEN_IPADD) {
      const int len = ASN1_STRING_length(n->d.iPAddress);
      char text[INET6_ADDRSTRLEN] = "?";
      inet_ntop(len == 16 ? AF_INET6 : AF_INET, ASN1_STRING_get0_data(n->d.iPAddress), text, sizeof(text));
      out.push_back(absl::StrCat("IP:", text));
    }
  }
  GENERAL_NAMES_free(names);
  if (out.empty()) {
    char cn[256] = "";
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn)) > 0) {
      out.push_back(absl::StrCat("CN=", cn));
    }
  }
  ERR_clear_error();
  return out.empty() ? "no name" : absl::StrJoin(out, ", ");
}

// Empty when `leaf`, with the intermediates of `chain`, verifies against `store` for `purpose`
// (X509_PURPOSE_SSL_SERVER or _CLIENT); otherwise OpenSSL's reason.
std::string Verify(X509_STORE* store, X509* leaf, const std::vector<X509Ptr>& chain, int purpose) {
  STACK_OF(X509)* untrusted = sk_X509_new_null();
  for (const X509Ptr& c : chain) {
    if (c.get() != leaf) sk_X509_push(untrusted, c.get());
  }
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  std::string why;
  if (ctx == nullptr || X509_STORE_CTX_init(ctx, store, leaf, untrusted) != 1) {
    why = "cannot verify the certificate";
  } else {
    X509_STORE_CTX_set_purpose(ctx, purpose);
    if (X509_verify_cert(ctx) != 1) why = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
  }
  X509_STORE_CTX_free(ctx);
  sk_X509_free(untrusted);
  ERR_clear_error();
  return why;
}

StorePtr StoreOf(const std::vector<X509Ptr>& certs) {
  StorePtr store(X509_STORE_new());
  for (const X509Ptr& cert : certs) X509_STORE_add_cert(store.get(), cert.get());
  return store;
}

// The roots a gRPC client without --tls_ca trusts: $GRPC_DEFAULT_SSL_ROOTS_FILE_PATH, else this
// machine's (OpenSSL's default locations).
StorePtr DefaultRoots() {
  StorePtr store(X509_STORE_new());
  const char* grpc_roots = std::getenv("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH");
  if (grpc_roots != nullptr && *grpc_roots != '\0') {
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    X509_STORE_load_file(store.get(), grpc_roots);
#else
    X509_STORE_load_locations(store.get(), grpc_roots, nullptr);
#endif
  } else {
    X509_STORE_set_default_paths(store.get());
  }
  ERR_clear_error();
  return store;
}

bool IsWildcardAddress(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]";
}

}  // namespace

absl::StatusOr<Tls> LoadTls(const std::string& cert_file, const std::string& key_file,
                            const std::string& ca_file) {
  Tls tls;
  if (cert_file.empty() && key_file.empty() && ca_file.empty()) return tls;
  if (cert_file.empty() || key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together (and --tls_ca needs both)");
  }
  tls.cert_file = cert_file;
  tls.key_file = key_file;
  tls.ca_file = ca_file;
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
  std::vector<X509Ptr> ca;
  if (!ca_file.empty()) {
    FG_RETURN_IF_ERROR(read("--tls_ca", ca_file, "-----BEGIN CERTIFICATE-----", &tls.ca));
    ca = ReadCertificates(tls.ca);
    if (ca.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--tls_ca ", ca_file, ": no readable certificate"));
    }
  }
  // What a peer's handshake would refuse, checked here where the files can be named.
  const std::vector<X509Ptr> chain = ReadCertificates(tls.cert);
  if (chain.empty()) return absl::InvalidArgumentError(absl::StrCat("--tls_cert ", cert_file, ": no readable certificate"));
  X509* leaf = chain[0].get();
  const auto key = ReadKey(tls.key);
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--tls_key ", key_file,
                                                   ": no readable private key (an encrypted key is not supported)"));
  }
  if (X509_check_private_key(leaf, key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat("--tls_key ", key_file, " is not the key of --tls_cert ", cert_file,
                                                   " (the key of another certificate?)"));
  }
  if (X509_cmp_current_time(X509_get0_notAfter(leaf)) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--tls_cert ", cert_file, " expired on ",
                                                   TimeText(X509_get0_notAfter(leaf))));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(leaf)) > 0) {
    return absl::InvalidArgumentError(absl::StrCat("--tls_cert ", cert_file, " is not valid before ",
                                                   TimeText(X509_get0_notBefore(leaf))));
  }
  const StorePtr store = ca.empty() ? DefaultRoots() : StoreOf(ca);
  const std::vector<std::pair<int, const char*>> purposes =
      ca.empty() ? std::vector<std::pair<int, const char*>>{{X509_PURPOSE_SSL_SERVER, "a TLS server"}}
                 : std::vector<std::pair<int, const char*>>{{X509_PURPOSE_SSL_SERVER, "a TLS server"},
                                                            {X509_PURPOSE_SSL_CLIENT, "a TLS client"}};
  for (const auto& [purpose, as] : purposes) {
    const std::string why = Verify(store.get(), leaf, chain, purpose);
    if (why.empty()) continue;
    if (ca.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tls_cert ", cert_file, " is not signed by a CA this machine trusts (", why,
          "): without --tls_ca peers verify it against this machine's roots; pass the CA that signed it as --tls_ca"));
    }
    return absl::InvalidArgumentError(absl::StrCat("--tls_cert ", cert_file, " does not verify against --tls_ca ",
                                                   ca_file, " as ", as, " (", why, "): peers would refuse it"));
  }
  return tls;
}

absl::Status CheckTlsNames(const Tls& tls, const std::string& host) {
  if (!tls.enabled() || IsWildcardAddress(host)) return absl::OkStatus();
  std::vector<X509Ptr> chain = ReadCertificates(tls.cert);
  if (chain.empty()) return absl::InvalidArgumentError(absl::StrCat("--tls_cert ", tls.cert_file, ": no readable certificate"));
  std::string name = host;
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') name = name.substr(1, name.size() - 2);
  unsigned char ip[16];
  const bool is_ip = inet_pton(AF_INET, name.c_str(), ip) == 1 || inet_pton(AF_INET6, name.c_str(), ip) == 1;
  const int ok = is_ip ? X509_check_ip_asc(chain[0].get(), name.c_str(), 0)
                       : X509_check_host(chain[0].get(), name.data(), name.size(), 0, nullptr);
  ERR_clear_error();
  if (ok == 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--tls_cert ", tls.cert_file, " does not name ", name,
                                                 ", the address peers dial to reach this process (it names ",
                                                 Names(chain[0].get()), "): peers would refuse it"));
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
  explicit Ca(const std::string& pem) : store_(StoreOf(ReadCertificates(pem))) {}
  // Empty when `leaf_pem` (with the intermediates of `chain_pem`) verifies; otherwise the reason.
  std::string Verify(const std::string& leaf_pem, const std::string& chain_pem) const {
    std::vector<X509Ptr> leaf = ReadCertificates(leaf_pem), chain = ReadCertificates(chain_pem);
    if (leaf.empty()) return "no client certificate";
    const std::string why = runtime::Verify(store_.get(), leaf[0].get(), chain, X509_PURPOSE_SSL_CLIENT);
    return why.empty() ? why : absl::StrCat("client certificate not accepted: ", why);
  }

 private:
  StorePtr store_;
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
  // The caller's own account of itself, unauthenticated: printable and short.
  std::string caller;
  if (auto c = ctx.client_metadata().find(kCallerMetadata); c != ctx.client_metadata().end()) {
    for (char ch : c->second.substr(0, 100)) caller += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
  }
  const std::string line = absl::StrCat(who_, ": rejected a call from ", ctx.peer(),
                                        caller.empty() ? "" : absl::StrCat(" (", caller, ", by its own account)"),
                                        ": ", why);
  int n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    n = rejected_++;
    last_rejection_ = line;
  }
  if (n < 20) {
    std::fprintf(stderr, "%s%s\n", line.c_str(), n == 19 ? " (further rejections are not logged)" : "");
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, why);
}

int CallerCheck::rejected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rejected_;
}

std::string CallerCheck::last_rejection() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_rejection_;
}

}  // namespace fg::runtime
