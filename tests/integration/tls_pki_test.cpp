// Certificates from lib/tls against the real tools: `etcd-fleet ca init` makes the fleet CA,
// lib/tls signs an etcd server/peer certificate from a CSR, a real etcd serves client TLS with
// --client-cert-auth on it, the real etcdctl (and etcd-fleet) read and write through it with
// the fleet's client certificate, and `openssl verify` accepts every chain.

#include <gtest/gtest.h>

#include <thread>

#include "common/file_util.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tls/csr.hpp"
#include "tls/fleet_pki.hpp"
#include "tls/sign.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;

// A key and a certificate signed by `ca` for `profile`, written as NAME.key / NAME.crt in dir.
void issue(const tls::Ca& ca, const std::string& dir, const std::string& name,
           const std::string& cn, tls::Profile profile, const std::vector<std::string>& sans) {
  auto key = tls::Key::generate();
  ASSERT_TRUE(key) << key.error().message;
  auto pem = tls::createCsr(*key, {.common_name = cn, .sans = sans});
  ASSERT_TRUE(pem) << pem.error().message;
  auto csr = tls::Csr::parse(*pem);
  ASSERT_TRUE(csr) << csr.error().message;
  auto cert = tls::signCsr(ca, *csr, {.profile = profile, .allowed_sans = sans});
  ASSERT_TRUE(cert) << cert.error().message;
  ASSERT_TRUE(tls::writeKeyFile(dir + "/" + name + ".key", *key));
  ASSERT_TRUE(
      tls::writeCertificateFile(dir + "/" + name + ".crt", *cert, 0600, tls::Overwrite::kNo));
}

RunResult fleetCa(const std::string& inventory, const std::vector<std::string>& args) {
  std::vector<std::string> argv{fleetBinary(), "ca"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--fleet", inventory});
  return run(argv, {.timeout = 30s});
}

TEST(TlsPki, CertificatesFromTheFleetCaServeEtcdToEtcdctlWithClientCertAuth) {
  TempDir work;
  const std::string inventory = work.path() + "/op/fleet.toml";
  auto init = fleetCa(inventory, {"init"});
  ASSERT_EQ(init.exit_code, 0) << init.err;
  const auto paths = tls::fleetPkiPaths(inventory);
  auto ca = tls::loadCa(paths.ca_cert, paths.ca_key);
  ASSERT_TRUE(ca) << ca.error().message;
  const std::string fingerprint = tls::spkiFingerprint(ca->cert);
  EXPECT_NE(init.out.find("CA fingerprint: " + fingerprint + "\n"), std::string::npos) << init.out;

  auto again = fleetCa(inventory, {"init"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("a CA already exists at " + paths.dir), std::string::npos) << again.err;
  auto show = fleetCa(inventory, {"show"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("Fingerprint:  " + fingerprint + "\n"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("Directory:    " + paths.dir + "\n"), std::string::npos) << show.out;

  // The member's own certificates, as an agent will have them: one key per use.
  const std::string d = work.path() + "/member";
  ASSERT_TRUE(createPrivateDirectories(d));
  issue(*ca, d, "etcd-server", "m1", tls::Profile::kServer, {"127.0.0.1", "localhost"});
  issue(*ca, d, "etcd-peer", "m1", tls::Profile::kPeer, {"127.0.0.1", "localhost"});
  if (::testing::Test::HasFatalFailure()) return;

  // openssl accepts each chain, for its purpose.
  for (const auto& [cert, purpose] :
       std::vector<std::pair<std::string, std::string>>{{d + "/etcd-server.crt", "sslserver"},
                                                        {d + "/etcd-peer.crt", "sslserver"},
                                                        {d + "/etcd-peer.crt", "sslclient"},
                                                        {paths.fleet_cert, "sslclient"}}) {
    auto v = run({"openssl", "verify", "-CAfile", paths.ca_cert, "-purpose", purpose, cert});
    EXPECT_EQ(v.exit_code, 0) << cert << " " << purpose << ": " << v.out << v.err;
    EXPECT_EQ(v.out, cert + ": OK\n");
  }
  // ... and refuses the fleet's client certificate as a server's.
  auto wrong = run(
      {"openssl", "verify", "-CAfile", paths.ca_cert, "-purpose", "sslserver", paths.fleet_cert});
  EXPECT_NE(wrong.exit_code, 0) << wrong.out;

  const int client = freePort(), peer = freePort();
  const std::string curl = "https://127.0.0.1:" + std::to_string(client);
  const std::string purl = "https://127.0.0.1:" + std::to_string(peer);
  auto argv = etcdMemberArgv("m1", work.path() + "/data", curl, purl, "m1=" + purl);
  argv.insert(
      argv.end(),
      {"--cert-file=" + d + "/etcd-server.crt", "--key-file=" + d + "/etcd-server.key",
       "--trusted-ca-file=" + paths.ca_cert, "--client-cert-auth",
       "--peer-cert-file=" + d + "/etcd-peer.crt", "--peer-key-file=" + d + "/etcd-peer.key",
       "--peer-trusted-ca-file=" + paths.ca_cert, "--peer-client-cert-auth"});
  Child etcd = Child::start(argv, {}, work.path() + "/etcd.log", true);
  const std::vector<std::string> tls = {"--cacert",       paths.ca_cert, "--cert",
                                        paths.fleet_cert, "--key",       paths.fleet_key};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), tls.begin(), tls.end());
    return args;
  };
  bool up = false;
  for (int i = 0; i < 100 && !up && etcd.running(); ++i) {
    up = etcdctl(curl, with({"endpoint", "health"}), {.timeout = 10s}).exit_code == 0;
    if (!up) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(up) << "etcd with the fleet CA's certificates did not come up; its log: "
                  << readFile(work.path() + "/etcd.log").value_or("");

  auto put = etcdctl(curl, with({"put", "pki", "works"}));
  ASSERT_EQ(put.exit_code, 0) << put.err;
  EXPECT_EQ(put.out, "OK\n");
  auto get = etcdctl(curl, with({"get", "pki"}));
  EXPECT_EQ(get.out, "pki\nworks\n") << get.err;
  auto ours = fleet(curl, with({"get", "pki"}));
  EXPECT_EQ(ours.out, "pki\nworks\n") << ours.err;

  // A client certificate of another CA is refused in the handshake.
  TempDir stranger;
  auto other = tls::createCa();
  ASSERT_TRUE(other);
  issue(*other, stranger.path(), "client", "intruder", tls::Profile::kClient, {});
  if (::testing::Test::HasFatalFailure()) return;
  auto refused = etcdctl(
      curl,
      {"get", "pki", "--cacert", paths.ca_cert, "--cert", stranger.path() + "/client.crt", "--key",
       stranger.path() + "/client.key", "--dial-timeout", "2s", "--command-timeout", "3s"},
      {.timeout = 20s});
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_EQ(refused.out.find("works"), std::string::npos) << refused.out;
}

}  // namespace
}  // namespace etcdagent::testing
