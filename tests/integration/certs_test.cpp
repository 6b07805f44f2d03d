// Client certificates for applications and certificate expiry, with the real etcd-fleet,
// etcd-agent, etcd, etcdctl and openssl: `certs issue` and `certs sign` give certificates that a
// TLS member of a fleet (formed by `bootstrap`, which enrolls its agent) serves to etcdctl and
// etcd-fleet; each refusal has its message and exit code and writes nothing; every certificate's
// expiry shows in GetStatus, `etcd-fleet status -w json` and /metrics, and one with less than 30
// days left is named in the agent's Status line (systemd's STATUS=, read from a notify socket of
// the test's own) and warned of by `etcd-fleet status`.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"
#include "tls/csr.hpp"
#include "tls/expiry.hpp"
#include "tls/fleet_pki.hpp"
#include "tls/sign.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

std::int64_t unixSeconds(tls::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

tls::TimePoint notAfterOf(const std::string& path) {
  auto cert = tls::Certificate::load(path);
  EXPECT_TRUE(cert) << path;
  auto end = cert ? tls::notAfter(*cert) : Result<tls::TimePoint>{};
  EXPECT_TRUE(end) << path;
  return end.value_or(tls::TimePoint{});
}

// The datagrams a process sends to $NOTIFY_SOCKET (what systemd reads for Type=notify).
class NotifySocket {
 public:
  explicit NotifySocket(std::string path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path_.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0) << path_;
  }
  ~NotifySocket() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

  // The first STATUS= line (of the datagrams that arrive within `timeout`) holding `text`, or "".
  std::string waitForStatus(const std::string& text, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      std::istringstream lines(std::string(buf, static_cast<std::size_t>(n)));
      for (std::string line; std::getline(lines, line);) {
        if (line.starts_with("STATUS=") && line.find(text) != std::string::npos) return line;
      }
    }
    return "";
  }

 private:
  std::string path_;
  int fd_ = -1;
};

class Certs : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string inventory_ = dir_.path() + "/op/fleet.toml";
  std::string pki_ = dir_.path() + "/op/pki";
  std::unique_ptr<AgentHarness> agent_;

  RunResult etcdFleet(std::vector<std::string> args) const {
    std::vector<std::string> argv{fleetBinary(), "--fleet", inventory_};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, {.timeout = 90s});
  }

  // A one-member fleet with TLS on, as a user gets it: `ca init`, a token on the host, and
  // `bootstrap`, which enrolls the agent and plans its member with client and peer TLS.
  void bootstrapTlsFleet(const std::string& host) {
    ASSERT_EQ(etcdFleet({"ca", "init"}).exit_code, 0);
    auto token = etcdFleet({"token", "create", "--ttl", "1h"});
    ASSERT_EQ(token.exit_code, 0) << token.err;
    agent_ = std::make_unique<AgentHarness>(dir_.path(), AgentOptions{.name = "m1", .host = host});
    {
      std::ofstream out(agent_->tokenFile());
      out << token.out;
    }
    std::filesystem::permissions(agent_->tokenFile(), std::filesystem::perms::owner_read |
                                                          std::filesystem::perms::owner_write);
    agent_->start();
    auto formed = etcdFleet({"bootstrap", "--hosts", agent_->apiAddress()});
    ASSERT_EQ(formed.exit_code, 0) << formed.out << formed.err << readText(agent_->logPath());
    ASSERT_THAT(formed.err, HasSubstr(agent_->apiAddress() + " enrolled (member m1"));
  }

  [[nodiscard]] std::string url() const { return "https://" + agent_->clientEndpoint(); }

  // GetStatus over the agent's Unix socket (its TCP port serves mutual TLS only).
  [[nodiscard]] Result<v1::AgentStatus> localStatus() const {
    auto local = AgentClient::connect("unix:" + agent_->socketPath(), 5s);
    if (!local) return fail(local.error());
    return local->status();
  }

  static std::vector<std::string> tlsFlags(const std::string& ca, const std::string& cert,
                                           const std::string& key) {
    return {"--cacert", ca, "--cert", cert, "--key", key};
  }
  static std::vector<std::string> with(std::vector<std::string> args,
                                       const std::vector<std::string>& flags) {
    args.insert(args.end(), flags.begin(), flags.end());
    return args;
  }
  // openssl req: an EC P-256 key and a CSR for it in DIR/NAME.key, DIR/NAME.csr.
  static void makeCsr(const std::string& dir, const std::string& name,
                      std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{"openssl",
                                  "req",
                                  "-new",
                                  "-newkey",
                                  "ec",
                                  "-pkeyopt",
                                  "ec_paramgen_curve:prime256v1",
                                  "-nodes",
                                  "-keyout",
                                  dir + "/" + name + ".key",
                                  "-out",
                                  dir + "/" + name + ".csr"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = run(argv, {.timeout = 30s});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
};

TEST_F(Certs, AnIssuedAndASignedCertificateReadAndWriteATlsMemberWithEtcdctlAndEtcdFleet) {
  bootstrapTlsFleet("127.0.0.51");
  if (HasFatalFailure()) return;
  const std::string out = dir_.path() + "/app";
  auto issued = etcdFleet({"certs", "issue", "app1", "--out", out});
  ASSERT_EQ(issued.exit_code, 0) << issued.err;
  const std::string key = out + "/app1.key", cert = out + "/app1.crt", ca = out + "/ca.crt";
  EXPECT_EQ(modeOf(key), 0600U);
  EXPECT_EQ(modeOf(cert), 0644U);
  EXPECT_EQ(readText(ca), readText(pki_ + "/ca.crt"));
  // What to pass, with the fleet's endpoints, for etcdctl and for Patroni.
  EXPECT_THAT(issued.out, HasSubstr("etcdctl --endpoints " + url() + " --cacert " + ca +
                                    " --cert " + cert + " --key " + key));
  EXPECT_THAT(issued.out, HasSubstr("  etcd3:\n    hosts: " + agent_->clientEndpoint() +
                                    "\n    protocol: https\n    cacert: " + ca +
                                    "\n    cert: " + cert + "\n    key: " + key + "\n"));
  auto verify = run({"openssl", "verify", "-CAfile", ca, "-purpose", "sslclient", cert});
  EXPECT_EQ(verify.out, cert + ": OK\n") << verify.err;

  const auto app1 = tlsFlags(ca, cert, key);
  auto put = etcdctl(url(), with({"put", "app-key", "from app1"}, app1));
  ASSERT_EQ(put.exit_code, 0) << put.err;
  EXPECT_EQ(put.out, "OK\n");
  auto theirs = etcdctl(url(), with({"get", "app-key"}, app1));
  auto ours = fleet(url(), with({"get", "app-key"}, app1));
  EXPECT_EQ(theirs.out, "app-key\nfrom app1\n") << theirs.err;
  EXPECT_EQ(ours.out, theirs.out) << ours.err;
  ASSERT_EQ(fleet(url(), with({"put", "fleet-key", "by etcd-fleet"}, app1)).exit_code, 0);

  // A key that never leaves the application: its CSR, made by openssl, signed.
  const std::string app2 = dir_.path() + "/app2";
  std::filesystem::create_directories(app2);
  makeCsr(app2, "app2", {"-subj", "/CN=app2"});
  if (HasFatalFailure()) return;
  auto signed_cert = etcdFleet({"certs", "sign", app2 + "/app2.csr", "--validity", "30d"});
  ASSERT_EQ(signed_cert.exit_code, 0) << signed_cert.err;
  EXPECT_THAT(signed_cert.out, HasSubstr("Signed " + app2 +
                                         "/app2.csr: a client certificate for app2 (CN app2, "
                                         "clientAuth)"));
  EXPECT_THAT(signed_cert.out, HasSubstr(app2 + "/app2.crt"));
  EXPECT_LE(notAfterOf(app2 + "/app2.crt"),
            std::chrono::system_clock::now() + std::chrono::days(30));
  const auto app2_flags = tlsFlags(pki_ + "/ca.crt", app2 + "/app2.crt", app2 + "/app2.key");
  auto read = etcdctl(url(), with({"get", "fleet-key", "--print-value-only"}, app2_flags));
  EXPECT_EQ(read.exit_code, 0) << read.err;
  EXPECT_EQ(read.out, "by etcd-fleet\n");
  EXPECT_EQ(fleet(url(), with({"get", "app-key", "--print-value-only"}, app2_flags)).out,
            "from app1\n");
}

TEST_F(Certs, EveryRefusalSaysWhyExitsWithItsCodeAndWritesNothing) {
  const std::string out = dir_.path() + "/out";
  // No CA yet.
  auto no_ca = etcdFleet({"certs", "issue", "app1", "--out", out});
  EXPECT_EQ(no_ca.exit_code, 1);
  EXPECT_THAT(no_ca.err, HasSubstr("no fleet CA at " + pki_ +
                                   ": create one with `etcd-fleet ca "
                                   "init`"));
  EXPECT_FALSE(exists(out));
  ASSERT_EQ(etcdFleet({"ca", "init"}).exit_code, 0);

  // Names that cannot be an etcd user or a file name, and bad arguments: 128, as etcdctl's.
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad_args = {
      {{"certs", "issue"}, "certs issue takes one argument: the application's name"},
      {{"certs", "issue", "app:secret"},
       "the name \"app:secret\" has ':' at position 4: etcdctl's `user add NAME:PASSWORD` would "
       "split the name there"},
      {{"certs", "issue", "../app"}, "the name \"../app\" has '/' at position 3"},
      {{"certs", "issue", "etcd-fleet"}, "\"etcd-fleet\" is etcd-fleet's own identity"},
      {{"certs", "issue", std::string(65, 'a')}, "is 65 characters long: at most 64"},
      {{"certs", "issue", "app1", "--validity", "0d"}, "--validity: invalid validity \"0d\""},
      {{"certs", "sign"}, "certs sign takes one argument: the CSR file"},
  };
  for (const auto& [args, message] : bad_args) {
    auto with_out = args;
    with_out.insert(with_out.end(), {"--out", out});
    auto r = etcdFleet(with_out);
    EXPECT_EQ(r.exit_code, 128) << args.back() << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(message)) << args.back();
  }
  EXPECT_FALSE(exists(out)) << "a refused name wrote something";

  // Files in the way: named, nothing replaced.
  ASSERT_EQ(etcdFleet({"certs", "issue", "app1", "--out", out}).exit_code, 0);
  const std::string key_before = readText(out + "/app1.key");
  auto again = etcdFleet({"certs", "issue", "app1", "--out", out});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("refusing to overwrite " + out + "/app1.key, " + out +
                                   "/app1.crt: remove them to issue a new certificate for app1 "
                                   "there, or give --out another directory"));
  EXPECT_EQ(readText(out + "/app1.key"), key_before);
  EXPECT_EQ(again.out, "");

  // CSRs: missing, garbled, altered after signing, or asking for what a client must not have.
  const std::string csrs = dir_.path() + "/csrs";
  std::filesystem::create_directories(csrs);
  { std::ofstream(csrs + "/garbled.csr") << "hello, I am not a CSR\n"; }
  makeCsr(csrs, "web", {"-subj", "/CN=web", "-addext", "subjectAltName=DNS:web.example.org"});
  makeCsr(csrs, "ca", {"-subj", "/CN=sub-ca", "-addext", "basicConstraints=critical,CA:TRUE"});
  makeCsr(csrs, "org", {"-subj", "/CN=app3/O=Acme"});
  makeCsr(csrs, "admin", {"-subj", "/CN=etcd-fleet"});
  makeCsr(csrs, "altered", {"-subj", "/CN=app3", "-outform", "DER"});
  if (HasFatalFailure()) return;
  {
    // The CN changed after the CSR was signed: its signature no longer covers what it says.
    std::string der = readText(csrs + "/altered.csr");
    const auto at = der.find("app3");
    ASSERT_NE(at, std::string::npos);
    der[at + 3] = '4';
    std::ofstream(csrs + "/altered.der", std::ios::binary) << der;
    auto pem = run({"openssl", "req", "-inform", "DER", "-in", csrs + "/altered.der", "-out",
                    csrs + "/altered.csr"});
    ASSERT_EQ(pem.exit_code, 0) << pem.err;
  }
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"missing", "cannot open " + csrs + "/missing.csr: No such file or directory"},
      {"garbled", csrs + "/garbled.csr: not a PEM CSR"},
      {"altered", csrs + "/altered.csr: the CSR's signature does not verify"},
      {"web", csrs + "/web.csr: the CSR asks for the subject alternative names web.example.org: "
                     "a client certificate carries none"},
      {"ca", csrs + "/ca.csr: the CSR asks to be a CA (basicConstraints CA:TRUE)"},
      {"org", csrs + "/org.csr: the CSR's subject has O=\"Acme\" besides its CN"},
      {"admin", "\"etcd-fleet\" is etcd-fleet's own identity"},
  };
  for (const auto& [name, message] : refused) {
    auto r = etcdFleet({"certs", "sign", csrs + "/" + name + ".csr"});
    EXPECT_EQ(r.exit_code, 1) << name << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(message)) << name;
    EXPECT_EQ(r.out, "") << name;
    EXPECT_FALSE(exists(csrs + "/" + name + ".crt")) << name;
  }
  // A certificate file in the way of certs sign.
  makeCsr(csrs, "app4", {"-subj", "/CN=app4"});
  { std::ofstream(csrs + "/app4.crt") << "mine\n"; }
  auto in_the_way = etcdFleet({"certs", "sign", csrs + "/app4.csr"});
  EXPECT_EQ(in_the_way.exit_code, 1);
  EXPECT_THAT(in_the_way.err, HasSubstr("refusing to overwrite " + csrs +
                                        "/app4.crt: remove it, or give --out another file"));
  EXPECT_EQ(readText(csrs + "/app4.crt"), "mine\n");
  auto elsewhere = etcdFleet({"certs", "sign", csrs + "/app4.csr", "--out", csrs + "/x.crt"});
  EXPECT_EQ(elsewhere.exit_code, 0) << elsewhere.err;
}

// Every certificate of an enrolled agent, with its end, as GetStatus, etcd-fleet status and
// /metrics show it; a fresh enrollment (1 year) raises no warning.
TEST_F(Certs, EachCertificatesExpiryShowsInGetStatusFleetStatusAndMetrics) {
  bootstrapTlsFleet("127.0.0.52");
  if (HasFatalFailure()) return;
  const std::string dir = agent_->pkiDir();
  std::vector<std::pair<std::string, tls::TimePoint>> expected;
  for (const char* name : {"api", "etcd-server", "etcd-peer", "etcd-client", "ca"}) {
    expected.emplace_back(name, notAfterOf(dir + "/" + name + ".crt"));
  }

  auto status = localStatus();
  ASSERT_TRUE(status) << status.error().message;
  ASSERT_EQ(status->certificates_size(), 5) << status->DebugString();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(status->certificates(static_cast<int>(i)).name(), expected[i].first);
    EXPECT_EQ(status->certificates(static_cast<int>(i)).not_after(),
              unixSeconds(expected[i].second))
        << expected[i].first;
  }
  EXPECT_THAT(status->status_line(), Not(HasSubstr("certificate")));

  RunResult fleet_status;
  ASSERT_TRUE(eventually([&] {
    fleet_status = etcdFleet({"status", "-w", "json"});
    return fleet_status.exit_code == 0 &&
           fleet_status.out.find("\"state\":\"running\"") != std::string::npos;
  })) << fleet_status.out
      << fleet_status.err;
  for (const auto& [name, end] : expected) {
    EXPECT_THAT(fleet_status.out, HasSubstr("{\"name\":\"" + name + "\",\"not_after\":\"" +
                                            tls::formatTime(end) + "\"}"));
  }
  const auto first = std::min_element(expected.begin(), expected.end(),
                                      [](auto& a, auto& b) { return a.second < b.second; });
  EXPECT_THAT(fleet_status.out,
              HasSubstr("\"certificates_until\":\"" + tls::formatTime(first->second) + "\""));
  EXPECT_THAT(fleet_status.out,
              HasSubstr("\"pki\":{\"ca\":\"" + pki_ + "/ca.crt\",\"ca_not_after\":\"" +
                        tls::formatTime(notAfterOf(pki_ + "/ca.crt")) + "\",\"fleet\":\"" + pki_ +
                        "/fleet.crt\",\"fleet_not_after\":\"" +
                        tls::formatTime(notAfterOf(pki_ + "/fleet.crt")) + "\"}"));
  EXPECT_THAT(fleet_status.err, Not(HasSubstr("expires in")));
  auto table = etcdFleet({"status"});
  EXPECT_THAT(table.out, HasSubstr("CERTS UNTIL"));
  EXPECT_THAT(table.out, HasSubstr(tls::formatTime(first->second).substr(0, 10)));
  EXPECT_THAT(table.out,
              HasSubstr("fleet CA valid until " + tls::formatTime(notAfterOf(pki_ + "/ca.crt"))));

  auto metrics = run({"curl", "-sS", "http://" + agent_->httpAddress() + "/metrics"});
  for (const auto& [name, end] : expected) {
    EXPECT_THAT(metrics.out, HasSubstr("etcd_agent_certificate_expiry_timestamp_seconds{member="
                                       "\"m1\",certificate=\"" +
                                       name + "\"} " + std::to_string(unixSeconds(end)) + "\n"))
        << metrics.err;
  }
}

// A certificate with less than 30 days left: its etcd-server certificate re-issued by the fleet CA
// for 12 days (the same key, names and usages: etcd serves with it), as a lapsed renewal leaves it.
TEST_F(Certs, ACertificateEndingWithinThirtyDaysIsNamedInTheStatusLineAndByFleetStatus) {
  bootstrapTlsFleet("127.0.0.53");
  if (HasFatalFailure()) return;
  ASSERT_EQ(agent_->stop().exit_code, 0);
  const std::string server_cert = agent_->pkiDir() + "/etcd-server.crt";
  {
    auto ca = tls::loadCa(pki_ + "/ca.crt", pki_ + "/ca.key");
    ASSERT_TRUE(ca) << ca.error().message;
    auto key = tls::Key::load(agent_->pkiDir() + "/etcd-server.key");
    ASSERT_TRUE(key) << key.error().message;
    auto old = tls::inspectCertificate(*tls::Certificate::load(server_cert));
    ASSERT_TRUE(old);
    auto pem = tls::createCsr(*key, {.common_name = old->common_name, .sans = old->sans});
    ASSERT_TRUE(pem) << pem.error().message;
    auto csr = tls::Csr::parse(*pem);
    ASSERT_TRUE(csr);
    auto cert = tls::signCsr(*ca, *csr,
                             {.profile = tls::Profile::kPeer,
                              .allowed_sans = old->sans,
                              .validity = std::chrono::days(12) + std::chrono::hours(1)});
    ASSERT_TRUE(cert) << cert.error().message;
    ASSERT_TRUE(
        tls::writeCertificateFile(server_cert, *cert, 0600, tls::Overwrite::kYes).has_value());
  }

  NotifySocket notify(dir_.path() + "/notify.sock");
  ::setenv("NOTIFY_SOCKET", notify.path().c_str(), 1);
  agent_->start();
  ::unsetenv("NOTIFY_SOCKET");
  const std::string note = "certificate etcd-server expires in 12 days";
  // systemd's Status line: from the first READY=1 on, and once the member leads.
  const std::string line = notify.waitForStatus("leader", 60s);
  EXPECT_THAT(line, HasSubstr("STATUS=member m1 · leader · cluster "))
      << readText(agent_->logPath());
  EXPECT_THAT(line, HasSubstr(" · " + note)) << line;

  auto status = localStatus();
  ASSERT_TRUE(status) << status.error().message;
  EXPECT_THAT(status->status_line(), HasSubstr(" · " + note));
  EXPECT_EQ(status->certificates(1).not_after(), unixSeconds(notAfterOf(server_cert)));

  // etcd serves with the re-issued certificate, and etcd-fleet status warns of it.
  RunResult fleet_status;
  ASSERT_TRUE(eventually([&] {
    fleet_status = etcdFleet({"status"});
    return fleet_status.exit_code == 0 && fleet_status.out.find("leader") != std::string::npos;
  })) << fleet_status.out
      << fleet_status.err;
  EXPECT_THAT(fleet_status.err,
              HasSubstr("warning: the agent of m1 on " + agent_->apiAddress() + ": " + note));
  EXPECT_THAT(fleet_status.out, HasSubstr(tls::formatTime(notAfterOf(server_cert)).substr(0, 10)));
  ASSERT_EQ(etcdFleet({"put", "still", "served"}).exit_code, 0);
  EXPECT_EQ(etcdFleet({"get", "still", "--print-value-only"}).out, "served\n");
}

}  // namespace
}  // namespace etcdagent::testing
