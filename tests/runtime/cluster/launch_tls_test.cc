// TLS in launched runs: mutual TLS gives the plaintext run's losses and refuses uncertified peers
// naming them; misconfigured TLS files (self-signed, expired, wrong name, another CA, no CA, a key
// that is not the certificate's) fail at once naming the cause; a worker that cannot reach the
// coordinator over TLS gives up with gRPC's reason.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
#include <string>

#include "tests/runtime/cluster/launch_util.h"
#include "tests/runtime/comm/test_certificates.h"

namespace {

using namespace fg::testing;  // NOLINT: the process helpers

TEST(Launch, MutualTlsRunsMatchPlaintextAndRefusesUncertifiedPeersNamingThem) {
  const std::string d = Dir("fg_launch_tls");
  ASSERT_TRUE(MakeTestCertificates(d)) << "cannot make the test certificates in " << d << " (openssl is needed)";
  const std::string tls = " --tls_cert " + d + "/node.pem --tls_key " + d + "/node.key --tls_ca " + d + "/ca.pem";
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " launch --quiet --workers 2 --log_dir " + d + "/plain" + kTrain + " --summary_json " + d +
                  "/plain.json"), 0);
  ASSERT_EQ(Shell(kFlexgraph + " launch --quiet --workers 2 --log_dir " + d + "/tls" + tls + kTrain + " --summary_json " +
                  d + "/tls.json", &out), 0) << out;
  EXPECT_EQ(Losses(Read(d + "/tls.json")), Losses(Read(d + "/plain.json")));
  EXPECT_EQ(Losses(Read(d + "/tls.json")).size(), 8u);
  // A coordinator with mutual TLS refuses a plaintext worker and one whose certificate its CA did not sign.
  std::string port;
  const pid_t coord = StartCoordinator(d, "right", "--workers 1" + tls, " -- train --dataset " + kCora, &port);
  ASSERT_FALSE(port.empty()) << Read(d + "/coord.log");
  const std::string worker = "env FG_RUN_TOKEN=right " + kFlexgraph + " worker --register_timeout 3 --coordinator 127.0.0.1:" + port;
  EXPECT_EQ(Shell(worker + kTrain, &out), 1);
  EXPECT_NE(out.find("does the coordinator use TLS?"), std::string::npos) << out;
  EXPECT_EQ(Shell(worker + " --tls_cert " + d + "/other.pem --tls_key " + d + "/other.key --tls_ca " + d + "/other.pem" +
                  kTrain, &out), 1);
  EXPECT_NE(out.find("certificate verify failed"), std::string::npos) << out;
  // A worker that trusts the coordinator but presents a certificate another CA signed is refused
  // per call, and the coordinator logs it with the caller's address.
  EXPECT_EQ(Shell(worker + " --tls_cert " + d + "/ca2node.pem --tls_key " + d + "/node.key --tls_ca " + d +
                  "/ca_and_ca2.pem" + kTrain, &out), 1);
  EXPECT_NE(out.find("client certificate not accepted"), std::string::npos) << out;
  kill(coord, SIGTERM);
  waitpid(coord, nullptr, 0);
  EXPECT_NE(Read(d + "/coord.log").find("coordinator: rejected a call from ipv4:127.0.0.1:"), std::string::npos)
      << Read(d + "/coord.log");
  EXPECT_TRUE(std::regex_search(Read(d + "/coord.log"),
                                std::regex("rejected a call from ipv4:127.0.0.1:[0-9]+ \\(a worker registering "
                                           "from 127.0.0.1:[0-9]+, by its own account\\): client certificate not "
                                           "accepted")))
      << Read(d + "/coord.log");
  // Flags are checked before anything starts, naming the flag and the file.
  EXPECT_EQ(Shell(kFlexgraph + " launch --tls_cert " + d + "/node.pem" + kTrain, &out), 2);
  EXPECT_NE(out.find("--tls_cert and --tls_key go together"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " launch --tls_cert " + d + "/node.pem --tls_key " + d + "/ext.cnf" + kTrain, &out), 2);
  EXPECT_NE(out.find("--tls_key " + d + "/ext.cnf: not a PEM file"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " launch --tls_cert " + d + "/none.pem --tls_key " + d + "/node.key" + kTrain, &out), 2);
  EXPECT_NE(out.find("--tls_cert " + d + "/none.pem: cannot read it"), std::string::npos) << out;
}

TEST(Launch, TlsMisconfigurationsFailAtOnceNamingTheCause) {
  // What a peer's handshake would refuse stops the run before it starts, naming the file and why,
  // rather than after the registration timeout as "only 0 of 2 workers registered".
  const std::string d = Dir("fg_launch_tls_errors");
  ASSERT_TRUE(MakeTestCertificates(d)) << "cannot make the test certificates in " << d << " (openssl is needed)";
  const std::string f = d + "/";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"other.pem other.key ca.pem",  // self-signed
       "--tls_cert " + f + "other.pem does not verify against --tls_ca " + f + "ca.pem as a TLS server (self-signed"},
      {"expired.pem node.key ca.pem", "--tls_cert " + f + "expired.pem expired on "},
      {"wrongname.pem node.key ca.pem",
       "--tls_cert " + f + "wrongname.pem does not name 127.0.0.1, the address peers dial to reach this process (it "
       "names DNS:example.com)"},
      {"ca2node.pem node.key ca.pem",  // another CA
       "--tls_cert " + f + "ca2node.pem does not verify against --tls_ca " + f +
           "ca.pem as a TLS server (unable to get local issuer certificate)"},
      {"node.pem node.key", "--tls_cert " + f + "node.pem is not signed by a CA this machine trusts"},  // no --tls_ca
      {"node.pem other.key ca.pem", "--tls_key " + f + "other.key is not the key of --tls_cert " + f + "node.pem"},
  };
  for (const auto& [files, cause] : cases) {
    SCOPED_TRACE(files);
    std::vector<std::string> x;
    std::istringstream words(files);
    for (std::string w; words >> w;) x.push_back(w);
    std::string tls = " --tls_cert " + f + x[0] + " --tls_key " + f + x[1];
    if (x.size() > 2) tls += " --tls_ca " + f + x[2];
    std::string out;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(Shell(kFlexgraph + " launch --workers 2 --log_dir " + d + "/logs" + tls + kTrain, &out), 2);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10);
    EXPECT_NE(out.find("flexgraph launch: " + cause), std::string::npos) << out;
    // The coordinator and a worker started by hand refuse them too (a key that is not the
    // certificate's said "cannot listen on 127.0.0.1:0").
    for (const std::string command : {" coordinator --workers 1", " worker --coordinator 127.0.0.1:1"}) {
      EXPECT_NE(Shell("env FG_RUN_TOKEN=t " + kFlexgraph + command + tls + kTrain, &out), 0) << command;
      EXPECT_NE(out.find(cause), std::string::npos) << command << ": " << out;
    }
  }
}

TEST(Launch, AWorkerThatCannotReachTheCoordinatorOverTlsFailsAtOnceNamingTheCause) {
  const std::string d = Dir("fg_launch_tls_refused");
  ASSERT_TRUE(MakeTestCertificates(d)) << "cannot make the test certificates in " << d << " (openssl is needed)";
  const std::string f = d + "/";
  const std::string tls = " --tls_cert " + f + "node.pem --tls_key " + f + "node.key --tls_ca " + f + "ca.pem";
  auto seconds_since = [](auto t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  // Workers whose own files are sound but whose handshake with the coordinator fails: they fail
  // within seconds with gRPC's reason, not after their registration timeout (here 60 s).
  std::string port;
  const pid_t coord = StartCoordinator(d, "t", "--workers 2" + tls, kTrain, &port);
  ASSERT_FALSE(port.empty()) << Read(d + "/coord.log");
  const std::string worker = "env FG_RUN_TOKEN=t " + kFlexgraph + " worker --register_timeout 60 --coordinator 127.0.0.1:" + port;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "it refused the connection"},  // plaintext against TLS
      {" --tls_cert " + f + "ca2node.pem --tls_key " + f + "node.key --tls_ca " + f + "ca2.pem",  // another CA
       "certificate verify failed"},
  };
  for (const auto& [flags, cause] : cases) {
    SCOPED_TRACE(flags);
    std::string out;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(Shell(worker + flags + kTrain, &out), 1);
    EXPECT_LT(seconds_since(t0), 15);
    EXPECT_NE(out.find("cannot register with the coordinator at 127.0.0.1:" + port), std::string::npos) << out;
    EXPECT_NE(out.find(cause), std::string::npos) << out;
  }
  kill(coord, SIGTERM);
  waitpid(coord, nullptr, 0);
  // A TLS worker against a plaintext coordinator.
  std::filesystem::create_directories(d + "/plain");
  const pid_t plain = StartCoordinator(d + "/plain", "t", "--workers 2", kTrain, &port);
  {
    std::string out;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(Shell("env FG_RUN_TOKEN=t " + kFlexgraph + " worker --register_timeout 60 --coordinator 127.0.0.1:" +
                    port + tls + kTrain, &out), 1);
    EXPECT_LT(seconds_since(t0), 15);
    EXPECT_NE(out.find("it refused the connection"), std::string::npos) << out;
    EXPECT_NE(out.find("Ssl handshake failed"), std::string::npos) << out;
  }
  kill(plain, SIGTERM);
  waitpid(plain, nullptr, 0);
  // Over ssh, a worker host that trusts other roots than the launcher's (no --tls_ca: the roots of
  // $GRPC_DEFAULT_SSL_ROOTS_FILE_PATH) stops at start-up, and the launcher's failure report names
  // the worker and says why.
  {
    std::ofstream(d + "/hosts") << "127.0.0.1\n127.0.0.1\n";
    std::ofstream(d + "/ssh") << "#!/bin/sh\n# ssh -o BatchMode=yes HOST COMMAND, run here with other roots\nshift 3\n"
                                 "exec env GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=" + f + "ca2.pem sh -c \"$1\"\n";
    ASSERT_EQ(Shell("chmod +x " + d + "/ssh"), 0);
    std::string out;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(Shell("env GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=" + f + "ca.pem " + kFlexgraph + " launch --workers 2 --hosts " +
                    d + "/hosts --ssh " + d + "/ssh --coordinator_host 127.0.0.1 --log_dir " + d + "/ssh-logs --tls_cert " +
                    f + "node.pem --tls_key " + f + "node.key" + kTrain, &out), 1);
    EXPECT_LT(seconds_since(t0), 30);
    EXPECT_TRUE(std::regex_search(out, std::regex("flexgraph launch: worker [01] on 127.0.0.1 \\(pid [0-9]+\\) exited")))
        << out;
    EXPECT_NE(out.find("--tls_cert " + f + "node.pem is not signed by a CA this machine trusts"), std::string::npos) << out;
  }
}

}  // namespace
