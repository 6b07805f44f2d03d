// TLS from --cacert/--cert/--key against a real etcd that requires client certificates.

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <iterator>
#include <thread>

#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;

// A CA, a server certificate for 127.0.0.1 and a client certificate, made with the openssl CLI.
void makeCertificates(const std::string& dir) {
  {
    std::ofstream ext(dir + "/server.ext");
    ext << "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n";
    std::ofstream cext(dir + "/client.ext");
    cext << "extendedKeyUsage=clientAuth\n";
  }
  auto ossl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "openssl");
    auto r = run(args, {.timeout = 30s});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  ossl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-days", "2", "-subj", "/CN=test-ca", "-keyout", dir + "/ca.key", "-out", dir + "/ca.crt"});
  for (const std::string name : {"server", "client"}) {
    ossl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj",
          "/CN=" + name, "-keyout", dir + "/" + name + ".key", "-out", dir + "/" + name + ".csr"});
    ossl({"x509", "-req", "-in", dir + "/" + name + ".csr", "-CA", dir + "/ca.crt", "-CAkey",
          dir + "/ca.key", "-CAcreateserial", "-days", "2", "-extfile", dir + "/" + name + ".ext",
          "-out", dir + "/" + name + ".crt"});
  }
}

// A TLS cluster of `size` members of etcd on loopback ports (client https with client
// certificate auth, peer http), with the certificates of makeCertificates in `certs`.
struct TlsMember {
  int client = 0, peer = 0;
  Child etcd;
};
std::vector<TlsMember> startTlsCluster(const std::string& certs, const std::string& data,
                                       int size) {
  std::vector<TlsMember> members(size);
  std::string initial;
  for (int i = 0; i < size; ++i) {
    members[i].client = freePort();
    members[i].peer = freePort();
    initial += (i ? "," : "") + std::string("m") + std::to_string(i) +
               "=http://127.0.0.1:" + std::to_string(members[i].peer);
  }
  for (int i = 0; i < size; ++i) {
    const std::string name = "m" + std::to_string(i);
    const std::string curl = "https://127.0.0.1:" + std::to_string(members[i].client);
    const std::string purl = "http://127.0.0.1:" + std::to_string(members[i].peer);
    auto argv = etcdMemberArgv(name, data + "/" + name, curl, purl, initial);
    argv.insert(argv.end(),
                {"--cert-file=" + certs + "/server.crt", "--key-file=" + certs + "/server.key",
                 "--trusted-ca-file=" + certs + "/ca.crt", "--client-cert-auth"});
    members[i].etcd = Child::start(argv, {}, data + "/" + name + ".log", true);
  }
  return members;
}

// Whether process `pid` has an established TCP connection to 127.0.0.1:port (its call is on the
// wire), from ss(8).
bool connectedTo(pid_t pid, int port) {
  auto ss =
      run({"ss", "-Htnp", "state", "established", "dst", "127.0.0.1:" + std::to_string(port)});
  return ss.out.find("pid=" + std::to_string(pid) + ",") != std::string::npos;
}

// `args` with the TLS flags of makeCertificates' client certificate (etcdctl's and etcd-fleet's).
std::vector<std::string> withClientCert(std::vector<std::string> args, const std::string& certs) {
  args.insert(args.end(), {"--cacert", certs + "/ca.crt", "--cert", certs + "/client.crt", "--key",
                           certs + "/client.key"});
  return args;
}

// Waits (bounded: 20 s) until etcd at `url` answers etcdctl with the client certificate.
bool healthy(const std::string& url, const std::string& certs) {
  for (int i = 0; i < 200; ++i) {
    if (etcdctl(url, withClientCert({"endpoint", "health"}, certs), {.timeout = 10s}).exit_code ==
        0) {
      return true;
    }
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

// Each test: the certificates of makeCertificates, and a directory for its etcds' data.
class Tls : public ::testing::Test {
 protected:
  void SetUp() override { makeCertificates(certs_.path()); }
  TempDir certs_;
  TempDir data_;
};

TEST_F(Tls, ClientCertificatesWorkLikeEtcdctl) {
  const std::string d = certs_.path();
  auto members = startTlsCluster(d, data_.path(), 1);
  const int client = members[0].client;
  const std::string curl = "https://127.0.0.1:" + std::to_string(client);
  auto with = [&](std::vector<std::string> args) { return withClientCert(std::move(args), d); };
  ASSERT_TRUE(healthy(curl, d)) << "etcd with TLS did not come up";

  auto put = fleet(curl, with({"put", "secure", "yes"}));
  ASSERT_EQ(put.exit_code, 0) << put.err;
  EXPECT_EQ(put.out, "OK\n");
  auto ours = fleet(curl, with({"get", "secure"}));
  auto theirs = etcdctl(curl, with({"get", "secure"}));
  EXPECT_EQ(ours.out, theirs.out);
  EXPECT_EQ(ours.out, "secure\nyes\n");

  // Without a client certificate the server refuses; both tools fail.
  auto no_cert = fleet(curl, {"get", "secure", "--cacert", d + "/ca.crt", "--dial-timeout", "1s"});
  EXPECT_NE(no_cert.exit_code, 0);
  EXPECT_NE(no_cert.err.find("127.0.0.1:" + std::to_string(client)), std::string::npos)
      << no_cert.err;
  // It says why (gRPC's status says only "Endpoint read failed"), and gRPC's own log lines
  // ("Corruption detected", "TSI_DATA_CORRUPTED") stay out of stderr unless --debug asks.
  EXPECT_NE(no_cert.err.find("the TLS connection failed ("), std::string::npos) << no_cert.err;
  EXPECT_NE(no_cert.err.find("the server requires a client certificate: pass --cert and --key"),
            std::string::npos)
      << no_cert.err;
  EXPECT_EQ(no_cert.err.find("TSI_DATA_CORRUPTED"), std::string::npos) << no_cert.err;
  auto debug =
      fleet(curl, {"get", "secure", "--cacert", d + "/ca.crt", "--dial-timeout", "1s", "--debug"});
  EXPECT_NE(debug.exit_code, 0);
  EXPECT_NE(debug.err.find("TSI_DATA_CORRUPTED"), std::string::npos) << debug.err;
  // A missing key file is named.
  auto missing = fleet(curl, {"get", "secure", "--cacert", d + "/ca.crt", "--cert",
                              d + "/client.crt", "--key", d + "/nope.key"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("nope.key"), std::string::npos) << missing.err;
}

// A call in flight when its TLS member stops fails with a message; gRPC 1.51's retry code
// aborted the process there (the trailers of such a call carry no grpc-status), which killed an
// etcd-agent whose health read was waiting when its etcd stopped.
TEST_F(Tls, ACallInFlightWhenItsMemberStopsFailsAndDoesNotAbort) {
  const std::string d = certs_.path();
  auto members = startTlsCluster(d, data_.path(), 3);
  const std::string first = "https://127.0.0.1:" + std::to_string(members[0].client);
  ASSERT_TRUE(healthy(first, d)) << "the TLS cluster did not come up";
  // Without quorum, a linearizable read waits on the last member until its deadline.
  members[1].etcd.stop(SIGTERM);
  members[2].etcd.stop(SIGTERM);
  const std::string err_path = data_.path() + "/fleet.err";
  Child get = Child::start(
      withClientCert(
          {fleetBinary(), "--endpoints", first, "--command-timeout", "60s", "get", "waits"}, d),
      {}, err_path);
  bool waiting = false;
  for (int i = 0; i < 300 && !waiting && get.running(); ++i) {
    waiting = connectedTo(get.pid(), members[0].client);
    if (!waiting) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(waiting) << "etcd-fleet get never reached the member";
  members[0].etcd.stop(SIGTERM);
  auto ended = get.wait(60s);
  EXPECT_EQ(ended.signal, 0) << "etcd-fleet died by a signal: " << ended.signal;
  EXPECT_EQ(ended.exit_code, 1);
  std::ifstream in(err_path);
  const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(err.find("127.0.0.1:" + std::to_string(members[0].client)), std::string::npos) << err;
  EXPECT_EQ(err.find("Assertion"), std::string::npos) << err;
}

}  // namespace
}  // namespace etcdagent::testing
