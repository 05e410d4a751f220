// Certificates of the TLS tests, made with the openssl command in a directory:
//   ca.pem, ca.key             the run's CA
//   node.pem, node.key         signed by the CA for 127.0.0.1 and localhost
//   other.pem, other.key       self-signed, for 127.0.0.1 (no CA vouches for it)
//   ca2.pem, ca2node.pem       another CA, and a certificate it signed for 127.0.0.1 (node.key's)
//   expired.pem                signed by the CA for 127.0.0.1 (node.key's), expired yesterday
//   wrongname.pem              signed by the CA for example.com only (node.key's)
//   ca_and_ca2.pem             both CAs (trusting the run's CA beside another)
#pragma once

#include <string>

#include "tests/runtime/process_util.h"

namespace fg::testing {

// False when openssl is missing or fails (the tests fail then: CI installs openssl).
inline bool MakeTestCertificates(const std::string& d) {
  auto q = [](const std::string& cn) { return " -subj /CN=" + cn + " 2>/dev/null"; };
  const std::string sign = " -CA " + d + "/ca.pem -CAkey " + d + "/ca.key -CAcreateserial";
  auto ext = [&](const std::string& name, const std::string& names) {
    return Shell("sh -c 'printf \"subjectAltName=" + names + "\\n\" > " + d + "/" + name + "'") == 0;
  };
  return Shell("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout " + d + "/ca.key -out " + d + "/ca.pem" +
               q("fg-test-ca")) == 0 &&
         Shell("openssl req -newkey rsa:2048 -nodes -keyout " + d + "/node.key -out " + d + "/node.csr" + q("localhost")) == 0 &&
         ext("ext.cnf", "IP:127.0.0.1,DNS:localhost") && ext("wrong.cnf", "DNS:example.com") &&
         Shell("openssl x509 -req -in " + d + "/node.csr" + sign + " -out " + d + "/node.pem -days 2 -extfile " + d +
               "/ext.cnf") == 0 &&
         Shell("openssl x509 -req -in " + d + "/node.csr" + sign + " -out " + d + "/expired.pem -days -1 -extfile " +
               d + "/ext.cnf") == 0 &&
         Shell("openssl x509 -req -in " + d + "/node.csr" + sign + " -out " + d + "/wrongname.pem -days 2 -extfile " +
               d + "/wrong.cnf") == 0 &&
         Shell("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout " + d + "/other.key -out " + d +
               "/other.pem" + q("fg-test-other") + " -addext subjectAltName=IP:127.0.0.1") == 0 &&
         Shell("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout " + d + "/ca2.key -out " + d + "/ca2.pem" +
               q("fg-test-ca2")) == 0 &&
         Shell("openssl x509 -req -in " + d + "/node.csr -CA " + d + "/ca2.pem -CAkey " + d +
               "/ca2.key -CAcreateserial -out " + d + "/ca2node.pem -days 2 -extfile " + d + "/ext.cnf") == 0 &&
         Shell("sh -c 'cat " + d + "/ca.pem " + d + "/ca2.pem > " + d + "/ca_and_ca2.pem'") == 0;
}

}  // namespace fg::testing
