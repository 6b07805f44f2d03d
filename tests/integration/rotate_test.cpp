// Certificate rotation on a real TLS fleet (docs/security.md, "Certificate rotation"): three
// enrolled agents and their etcd members, `etcd-fleet certs rotate` while a client writes through
// etcdctl to every endpoint. No write may fail, every acknowledged write is there afterwards, and
// every member serves new certificates for new keys, checked on the wire by TLS handshakes, with
// the old keys gone from the hosts and etcd never restarted.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"
#include "tests/support/writer.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

// What a server presented in a TLS handshake: its certificate's serial and public key.
struct Served {
  std::string serial;
  std::string public_key;
  bool operator==(const Served&) const = default;
};

// A TLS handshake with `host:port` (openssl s_client, presenting `cert`/`key` of the fleet CA):
// the certificate the server presented.
Served servedAt(const std::string& address, const std::string& ca, const std::string& cert,
                const std::string& key) {
  auto hello = run({"openssl", "s_client", "-connect", address, "-CAfile", ca, "-cert", cert,
                    "-key", key, "-verify_return_error"},
                   {.timeout = 20s});
  const auto begin = hello.out.find("-----BEGIN CERTIFICATE-----");
  const auto end = hello.out.find("-----END CERTIFICATE-----");
  if (begin == std::string::npos || end == std::string::npos) {
    ADD_FAILURE() << "no certificate from " << address << ": " << hello.err;
    return {};
  }
  const std::string pem = hello.out.substr(begin, end + 25 - begin) + "\n";
  auto serial = run({"openssl", "x509", "-noout", "-serial"}, {.input = pem});
  auto pub = run({"openssl", "x509", "-noout", "-pubkey"}, {.input = pem});
  return {serial.out, pub.out};
}

// "rotate/c-00042": the writer's letter and the write's number.
std::string keyOf(char writer, int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rotate/%c-%05d", writer, i);
  return buf;
}

class Rotate : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string inventory_ = dir_.path() + "/fleet.toml";
  std::string pki_ = dir_.path() + "/pki";
  std::vector<std::unique_ptr<AgentHarness>> agents_;
  mutable std::mutex app_mu_;
  std::string app_dir_;

  ~Rotate() override {
    if (etcdctl_writer_) etcdctl_writer_->stop();
    if (fleet_writer_) fleet_writer_->stop();
    // Followers' etcd first would be faster, but any order ends: the agents stop their etcd.
    for (auto it = agents_.rbegin(); it != agents_.rend(); ++it) (*it)->stop();
  }

  RunResult etcdFleet(const std::vector<std::string>& args,
                      std::chrono::milliseconds timeout = 180s) const {
    std::vector<std::string> argv{fleetBinary(), "--fleet", inventory_};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv,
               {.timeout = timeout, .unset_env = {"ETCDCTL_ENDPOINTS", "ETCD_FLEET_ENDPOINTS"}});
  }

  // A CA, a token, three agents enrolled by `bootstrap` and their TLS members.
  void formTlsFleet() {
    ASSERT_EQ(etcdFleet({"ca", "init"}).exit_code, 0);
    auto token = etcdFleet({"token", "create", "--ttl", "1h"});
    ASSERT_EQ(token.exit_code, 0) << token.err;
    std::string text = token.out;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    std::string hosts;
    for (int i = 1; i <= 3; ++i) {
      const std::string name = "m" + std::to_string(i);
      std::filesystem::create_directories(dir_.path() + "/" + name);
      agents_.push_back(std::make_unique<AgentHarness>(
          dir_.path() + "/" + name,
          AgentOptions{.name = name, .host = "127.0.0." + std::to_string(50 + i)}));
      std::ofstream(agents_.back()->tokenFile()) << text << "\n";
      std::filesystem::permissions(
          agents_.back()->tokenFile(),
          std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
      hosts += (hosts.empty() ? "" : ",") + agents_.back()->apiAddress();
    }
    for (auto& a : agents_) a->start();
    for (auto& a : agents_) {
      auto local = AgentClient::connect("unix:" + a->socketPath(), 5s);
      ASSERT_TRUE(local);
      ASSERT_TRUE(eventually([&] { return local->status().has_value(); }))
          << readText(a->logPath());
    }
    auto formed = etcdFleet({"bootstrap", "--hosts", hosts});
    ASSERT_EQ(formed.exit_code, 0) << formed.out << formed.err;
    newAppIdentity("app");
  }

  // A client identity of its own, as an application has: a copy of the fleet's client
  // certificate as it is now (the rotation may re-issue pki/fleet.crt under it), in dir/<name>/.
  // The clients use it from their next write on.
  void newAppIdentity(const std::string& name) {
    const std::string dir = dir_.path() + "/" + name;
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(pki_ + "/fleet.crt", dir + "/client.crt");
    std::filesystem::copy_file(pki_ + "/fleet.key", dir + "/client.key");
    std::lock_guard lock(app_mu_);
    app_dir_ = dir;
  }
  [[nodiscard]] std::string appDir() const {
    std::lock_guard lock(app_mu_);
    return app_dir_;
  }
  [[nodiscard]] std::string appCert() const { return appDir() + "/client.crt"; }
  [[nodiscard]] std::string appKey() const { return appDir() + "/client.key"; }

  [[nodiscard]] std::string endpoints() const {
    std::string out;
    for (const auto& a : agents_)
      out += (out.empty() ? "" : ",") + ("https://" + a->clientEndpoint());
    return out;
  }

  // etcdctl, or etcd-fleet's etcdctl-compatible client, with the application's certificate.
  RunResult appCtl(const std::vector<std::string>& args, bool with_fleet = false) const {
    // One read of the identity: a switch between two reads would pair one's key with another's
    // certificate.
    const std::string app = appDir();
    std::vector<std::string> argv{
        "--cacert",          pki_ + "/ca.crt", "--cert", app + "/client.crt", "--key",
        app + "/client.key", "--dial-timeout", "3s",     "--command-timeout", "10s"};
    argv.insert(argv.end(), args.begin(), args.end());
    return with_fleet ? fleet(endpoints(), argv, {.timeout = 30s})
                      : etcdctl(endpoints(), argv, {.timeout = 30s});
  }

  v1::AgentStatus localStatus(const AgentHarness& a) const {
    auto local = AgentClient::connect("unix:" + a.socketPath(), 5s);
    EXPECT_TRUE(local);
    auto s = local->status();
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    return s ? *s : v1::AgentStatus{};
  }

  // What each member serves on its client port, its peer port and its agent API.
  std::map<std::string, Served> servedEverywhere() const {
    std::map<std::string, Served> out;
    for (const auto& a : agents_) {
      const std::string peer = a->options().host + ":" + std::to_string(a->peerPort());
      for (const auto& address : {a->clientEndpoint(), peer, a->apiAddress()}) {
        out[address] = servedAt(address, pki_ + "/ca.crt", appCert(), appKey());
      }
    }
    return out;
  }

  // The agents' private keys, by path.
  std::map<std::string, std::string> agentKeys() const {
    std::map<std::string, std::string> out;
    for (const auto& a : agents_) {
      for (const char* use : {"api", "etcd-server", "etcd-peer", "etcd-client"}) {
        const std::string path = a->pkiDir() + "/" + use + ".key";
        out[path] = readText(path);
      }
    }
    return out;
  }

  // Two clients write, a process per write: etcdctl (Go's clientv3) and etcd-fleet (gRPC C++).
  // `retries`: how often a failed write is sent again (0: a failure is final).
  void startWriters(int retries = 0) {
    etcdctl_writer_ = std::make_unique<Writer>(
        [this](int i) {
          return appCtl({"put", keyOf('c', i), "v" + std::to_string(i)});
        },
        retries);
    fleet_writer_ = std::make_unique<Writer>(
        [this](int i) {
          return appCtl({"put", keyOf('f', i), "v" + std::to_string(i)}, true);
        },
        retries);
    ASSERT_TRUE(eventually([&] { return acknowledged() >= 40; }, 60s))
        << "the clients did not get going: "
        << ::testing::PrintToString(etcdctl_writer_->failures())
        << ::testing::PrintToString(fleet_writer_->failures());
  }
  [[nodiscard]] int acknowledged() const {
    return etcdctl_writer_->acknowledged() + fleet_writer_->acknowledged();
  }
  // `action` while the clients write, then some more writes (over connections that handshake
  // with whatever the action left). Counts the writes acknowledged while it ran.
  RunResult underWrites(const std::function<RunResult()>& action) {
    const int started = acknowledged();
    auto result = action();
    const int during = acknowledged() - started;
    written_during_ += during;
    EXPECT_TRUE(eventually([&] { return acknowledged() >= started + during + 40; }, 60s));
    return result;
  }
  // No write failed (`failures_allowed`: no write was lost, its retries included), and every
  // acknowledged one is there.
  void stopWritersAndCheck(bool failures_allowed = false) {
    etcdctl_writer_->stop();
    fleet_writer_->stop();
    EXPECT_EQ(etcdctl_writer_->lost() + fleet_writer_->lost(), 0)
        << ::testing::PrintToString(etcdctl_writer_->failures())
        << ::testing::PrintToString(fleet_writer_->failures());
    const auto failed = etcdctl_writer_->failures().size() + fleet_writer_->failures().size();
    if (!failures_allowed) {
      EXPECT_EQ(etcdctl_writer_->failures(), std::vector<std::string>{});
      EXPECT_EQ(fleet_writer_->failures(), std::vector<std::string>{});
    } else {
      std::cout << "failed attempts, each written again successfully: " << failed << std::endl;
      for (const auto& f : etcdctl_writer_->failures()) std::cout << "  etcdctl " << f;
      for (const auto& f : fleet_writer_->failures()) std::cout << "  etcd-fleet " << f;
    }
    auto keys = appCtl({"get", "rotate/", "--prefix", "--keys-only"});
    ASSERT_EQ(keys.exit_code, 0) << keys.err;
    int stored = 0;
    for (std::size_t at = keys.out.find("rotate/"); at != std::string::npos;
         at = keys.out.find("rotate/", at + 1)) {
      ++stored;
    }
    EXPECT_EQ(stored, acknowledged());
    for (auto [letter, writer] :
         {std::pair{'c', etcdctl_writer_.get()}, std::pair{'f', fleet_writer_.get()}}) {
      for (int i = 0; i < writer->acknowledged(); i += 37) {
        auto one = appCtl({"get", keyOf(letter, i), "--print-value-only"});
        EXPECT_EQ(one.out, "v" + std::to_string(i) + "\n") << keyOf(letter, i);
      }
    }
    std::cout << "writes acknowledged: " << acknowledged() << ", " << written_during_
              << " of them while the rotation ran" << std::endl;
  }

  std::unique_ptr<Writer> etcdctl_writer_;
  std::unique_ptr<Writer> fleet_writer_;
  int written_during_ = 0;
};

TEST_F(Rotate, EveryMemberGetsNewKeysAndCertificatesWhileAClientWritesWithoutAFailure) {
  formTlsFleet();
  if (HasFatalFailure()) return;
  const auto served_before = servedEverywhere();
  const auto keys_before = agentKeys();
  std::map<std::string, int> pids;
  for (const auto& a : agents_) pids[a->options().name] = localStatus(*a).etcd_pid();

  startWriters();
  if (HasFatalFailure()) return;
  auto rotated = underWrites([&] { return etcdFleet({"certs", "rotate", "--fleet-cert"}); });
  stopWritersAndCheck();
  ASSERT_EQ(rotated.exit_code, 0) << rotated.out << rotated.err << readText(agents_[0]->logPath());
  EXPECT_THAT(rotated.out, HasSubstr("re-issued with a new key (asked (--fleet-cert))"));
  EXPECT_THAT(rotated.out, HasSubstr("every member has new certificates"));
  for (const auto& a : agents_) {
    EXPECT_THAT(rotated.out, HasSubstr(a->options().name + " " + a->apiAddress() + " rotated ("));
  }

  // Followers first, the leader last.
  auto lineOf = [&](const std::string& step) {
    const auto at = rotated.err.find(step);
    EXPECT_NE(at, std::string::npos) << step << " in " << rotated.err;
    return at == std::string::npos ? "" : rotated.err.substr(at, rotated.err.find('\n', at) - at);
  };
  EXPECT_THAT(lineOf("[1/3] new certificates: "), ::testing::Not(HasSubstr("the leader")));
  EXPECT_THAT(lineOf("[2/3] new certificates: "), ::testing::Not(HasSubstr("the leader")));
  EXPECT_THAT(lineOf("[3/3] new certificates: "), HasSubstr(", the leader"));

  // On the wire: every port of every member serves a new certificate for a new key; etcd was
  // never restarted.
  const auto served_after = servedEverywhere();
  for (const auto& [address, before] : served_before) {
    const Served& after = served_after.at(address);
    EXPECT_FALSE(after.serial.empty()) << address;
    EXPECT_NE(after.serial, before.serial) << address;
    EXPECT_NE(after.public_key, before.public_key) << address;
  }
  for (const auto& a : agents_) {
    EXPECT_EQ(localStatus(*a).etcd_pid(), pids[a->options().name]) << a->options().name;
    EXPECT_FALSE(exists(a->pkiDir() + "/rotation.pending"));
    EXPECT_FALSE(exists(a->pkiDir() + "/rotation.switching"));
  }
  // The old keys are gone from every file of the agents' pki directories.
  for (const auto& a : agents_) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(a->pkiDir())) {
      if (!e.is_regular_file()) continue;
      const std::string content = readText(e.path().string());
      for (const auto& [path, old_key] : keys_before) {
        EXPECT_EQ(content.find(old_key), std::string::npos)
            << e.path() << " holds the old key of " << path;
      }
    }
  }
  EXPECT_FALSE(exists(pki_ + "/rotation.json")) << "the journal outlived the rotation";
  EXPECT_NE(readText(pki_ + "/fleet.crt"), readText(appCert()));

  // etcd-fleet goes on with its new certificate; an agent restarted loads the new set.
  auto status = etcdFleet({"member", "list"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  agents_[0]->stop();
  agents_[0]->start();
  const std::string api = agents_[0]->apiAddress();
  ASSERT_TRUE(eventually(
      [&] {
        return etcdFleet({"agent", "status", "--host", api}, 20s).exit_code == 0;
      },
      60s))
      << readText(agents_[0]->logPath());
  EXPECT_EQ(servedAt(api, pki_ + "/ca.crt", appCert(), appKey()), served_after.at(api));
}

// The PEM certificates of a file, sorted: the CAs it holds, whatever their order.
std::vector<std::string> certBlocks(const std::string& path) {
  const std::string text = readText(path);
  std::vector<std::string> out;
  for (std::size_t at = text.find("-----BEGIN"); at != std::string::npos;
       at = text.find("-----BEGIN", at + 1)) {
    out.push_back(text.substr(at, text.find("-----END", at) - at));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The fingerprint of the CA (or the first CA) of a PEM file, as the openssl CLI computes it.
std::string caFingerprint(const std::string& pem_file) {
  auto pub = run({"openssl", "x509", "-in", pem_file, "-pubkey", "-noout"});
  auto der = run({"openssl", "pkey", "-pubin", "-outform", "der"}, {.input = pub.out});
  auto digest = run({"openssl", "dgst", "-sha256", "-r"}, {.input = der.out});
  return "sha256:" + digest.out.substr(0, 64);
}

// CA rotation, the whole documented path on a real TLS fleet under writes: trust old and new
// (rolling etcd restarts; --trust-only pauses there, members still verified by the old CA alone),
// re-issue under the new CA, (applications get certificates of the new
// CA), drop the old CA (another rolling restart). No write fails; in the end every port serves a
// certificate of the new CA, nothing trusts the old one, and a client of the old CA is refused.
TEST_F(Rotate, TheFleetCaIsReplacedTrustingBothThenReissuingThenDroppingTheOld) {
  formTlsFleet();
  if (HasFatalFailure()) return;
  const std::string old_ca_file = dir_.path() + "/old-ca.crt";
  std::filesystem::copy_file(pki_ + "/ca.crt", old_ca_file);
  const std::string old_ca = caFingerprint(old_ca_file);
  std::map<std::string, int> pids;
  for (const auto& a : agents_) pids[a->options().name] = localStatus(*a).etcd_pid();

  // The members restart twice each: etcd 3.4 drops a request in flight on a member that stops
  // (docs/security.md, "CA rotation"), so these clients send a failed write again.
  startWriters(3);
  if (HasFatalFailure()) return;
  // --trust-only: every member trusts both CAs and still presents certificates of the old one,
  // so an application whose CA file holds only the old CA still verifies them: the pause in
  // which applications get the bundle (pki/ca.crt).
  auto trusted = underWrites([&] { return etcdFleet({"ca", "rotate", "--trust-only"}, 300s); });
  ASSERT_EQ(trusted.exit_code, 0) << trusted.out << trusted.err;
  EXPECT_THAT(trusted.out, HasSubstr("still presents certificates of the old one"));
  const auto verifiesUnder = [&](const std::string& ca_file, const std::string& address) {
    auto hello = run({"openssl", "s_client", "-connect", address, "-CAfile", ca_file, "-cert",
                      appCert(), "-key", appKey(), "-verify_return_error"},
                     {.timeout = 20s});
    return hello.out.find("Verify return code: 0 (ok)") != std::string::npos;
  };
  for (const auto& a : agents_) {
    EXPECT_THAT(trusted.out, HasSubstr("trust-both " + a->options().name));
    EXPECT_EQ(certBlocks(a->pkiDir() + "/ca.crt"), certBlocks(pki_ + "/ca.crt"))
        << a->options().name;
    EXPECT_TRUE(verifiesUnder(old_ca_file, a->clientEndpoint())) << a->options().name;
  }
  EXPECT_THAT(trusted.out, Not(HasSubstr("reissue ")));
  auto kept = underWrites([&] { return etcdFleet({"ca", "rotate", "--keep-old"}, 300s); });
  ASSERT_EQ(kept.exit_code, 0) << kept.out << kept.err << readText(agents_[0]->logPath());
  EXPECT_THAT(kept.out, HasSubstr("still trusts the old one"));
  // Both CAs trusted everywhere, the new one signing; etcd restarted to read the bundle.
  EXPECT_EQ(run({"grep", "-c", "BEGIN CERTIFICATE", pki_ + "/ca.crt"}).out, "2\n");
  const std::string new_ca = caFingerprint(pki_ + "/ca.crt");
  EXPECT_NE(new_ca, old_ca);
  EXPECT_THAT(kept.out, HasSubstr(new_ca));
  for (const auto& a : agents_) {
    EXPECT_EQ(certBlocks(a->pkiDir() + "/ca.crt"), certBlocks(pki_ + "/ca.crt"))
        << a->options().name;
    EXPECT_NE(localStatus(*a).etcd_pid(), pids[a->options().name]) << "etcd was not restarted";
    EXPECT_THAT(kept.out, HasSubstr("reissue " + a->options().name));
    // From the re-issue on, the old CA alone no longer verifies the members; the bundle does.
    EXPECT_FALSE(verifiesUnder(old_ca_file, a->clientEndpoint())) << a->options().name;
    EXPECT_TRUE(verifiesUnder(pki_ + "/ca.crt", a->clientEndpoint())) << a->options().name;
  }
  // The application takes a certificate of the new CA before the old one goes.
  const std::string old_app = appDir();
  newAppIdentity("app-new-ca");
  auto dropped = underWrites([&] { return etcdFleet({"ca", "rotate"}, 300s); });
  stopWritersAndCheck(true);
  ASSERT_EQ(dropped.exit_code, 0) << dropped.out << dropped.err;
  EXPECT_THAT(dropped.out, HasSubstr("the old CA is trusted nowhere"));
  EXPECT_FALSE(exists(pki_ + "/rotation.json"));
  EXPECT_EQ(run({"grep", "-c", "BEGIN CERTIFICATE", pki_ + "/ca.crt"}).out, "1\n");
  EXPECT_EQ(caFingerprint(pki_ + "/ca.crt"), new_ca);

  // On the wire, every port serves a certificate that verifies under the new CA alone.
  for (const auto& a : agents_) {
    EXPECT_EQ(certBlocks(a->pkiDir() + "/ca.crt"), certBlocks(pki_ + "/ca.crt"));
    const std::string peer = a->options().host + ":" + std::to_string(a->peerPort());
    for (const auto& address : {a->clientEndpoint(), peer, a->apiAddress()}) {
      auto hello = run({"openssl", "s_client", "-connect", address, "-CAfile", pki_ + "/ca.crt",
                        "-cert", appCert(), "-key", appKey(), "-verify_return_error"},
                       {.timeout = 20s});
      EXPECT_THAT(hello.out, HasSubstr("Verify return code: 0 (ok)")) << address << hello.err;
    }
  }
  // A client of the old CA is refused by etcd and by the agents.
  auto stale =
      etcdctl(endpoints(), {"--cacert", pki_ + "/ca.crt", "--cert", old_app + "/client.crt",
                            "--key", old_app + "/client.key", "--dial-timeout", "2s",
                            "--command-timeout", "3s", "get", "x"});
  EXPECT_NE(stale.exit_code, 0) << "a certificate of the old CA was served";
  auto old_agent =
      run({"openssl", "s_client", "-connect", agents_[1]->apiAddress(), "-CAfile", pki_ + "/ca.crt",
           "-cert", old_app + "/client.crt", "-key", old_app + "/client.key"},
          {.input = "", .timeout = 20s});
  EXPECT_EQ(old_agent.out.find("Verify return code: 0 (ok)\n---\n---"), std::string::npos);
  // etcd-fleet goes on with its re-issued certificate.
  auto members = etcdFleet({"member", "list"});
  EXPECT_EQ(members.exit_code, 0) << members.err;
  auto status = etcdFleet({"agent", "status", "--host", agents_[2]->apiAddress()});
  EXPECT_EQ(status.exit_code, 0) << status.err;
}

}  // namespace
}  // namespace etcdagent::testing
