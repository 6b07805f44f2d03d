// Certificate rotation on a real TLS fleet (docs/security.md, "Certificate rotation"): three
// enrolled agents and their etcd members, `etcd-fleet certs rotate` while a client writes through
// etcdctl to every endpoint. No write may fail, every acknowledged write is there afterwards, and
// every member serves new certificates for new keys, checked on the wire by TLS handshakes, with
// the old keys gone from the hosts and etcd never restarted.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

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

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

template <class Done>
bool eventually(Done done, std::chrono::milliseconds timeout = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

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

class Rotate : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string inventory_ = dir_.path() + "/fleet.toml";
  std::string pki_ = dir_.path() + "/pki";
  std::vector<std::unique_ptr<AgentHarness>> agents_;

  ~Rotate() override {
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
    // A client of its own, as an application has: a copy of the fleet's client certificate
    // taken now (the rotation may re-issue pki/fleet.crt under it).
    std::filesystem::create_directories(dir_.path() + "/app");
    std::filesystem::copy_file(pki_ + "/fleet.crt", appCert());
    std::filesystem::copy_file(pki_ + "/fleet.key", appKey());
  }

  [[nodiscard]] std::string appCert() const { return dir_.path() + "/app/client.crt"; }
  [[nodiscard]] std::string appKey() const { return dir_.path() + "/app/client.key"; }

  [[nodiscard]] std::string endpoints() const {
    std::string out;
    for (const auto& a : agents_)
      out += (out.empty() ? "" : ",") + ("https://" + a->clientEndpoint());
    return out;
  }

  // etcdctl, or etcd-fleet's etcdctl-compatible client, with the application's certificate.
  RunResult appCtl(const std::vector<std::string>& args, bool with_fleet = false) const {
    std::vector<std::string> argv{
        "--cacert", pki_ + "/ca.crt", "--cert", appCert(),           "--key",
        appKey(),   "--dial-timeout", "3s",     "--command-timeout", "10s"};
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
};

// A bounded write loop: etcdctl put (a process, so a TLS handshake, per write) to every endpoint
// until stopped, at most 4000 writes or 5 minutes. Records each write's outcome.
class Writer {
 public:
  explicit Writer(std::function<RunResult(int)> put)
      : put_(std::move(put)), thread_([this] { loop(); }) {}
  ~Writer() { stop(); }

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] int acknowledged() const { return acknowledged_.load(); }
  [[nodiscard]] std::vector<std::string> failures() {
    std::lock_guard lock(mu_);
    return failures_;
  }

 private:
  void loop() {
    const auto deadline = std::chrono::steady_clock::now() + 5min;
    for (int i = 0; i < 4000 && !stop_ && std::chrono::steady_clock::now() < deadline; ++i) {
      auto r = put_(i);
      if (r.exit_code == 0) {
        ++acknowledged_;
      } else {
        std::lock_guard lock(mu_);
        failures_.push_back("write " + std::to_string(i) + ": exit " + std::to_string(r.exit_code) +
                            ": " + r.err);
      }
    }
  }

  std::function<RunResult(int)> put_;
  std::atomic<bool> stop_{false};
  std::atomic<int> acknowledged_{0};
  std::mutex mu_;
  std::vector<std::string> failures_;
  std::thread thread_;
};

// "rotate/c-00042": the writer's letter and the write's number.
std::string keyOf(char writer, int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rotate/%c-%05d", writer, i);
  return buf;
}

TEST_F(Rotate, EveryMemberGetsNewKeysAndCertificatesWhileAClientWritesWithoutAFailure) {
  formTlsFleet();
  if (HasFatalFailure()) return;
  const auto served_before = servedEverywhere();
  const auto keys_before = agentKeys();
  std::map<std::string, int> pids;
  for (const auto& a : agents_) pids[a->options().name] = localStatus(*a).etcd_pid();

  // Two clients: etcdctl (Go's clientv3) and etcd-fleet (gRPC C++), a process per write.
  Writer etcdctl_writer([this](int i) {
    return appCtl({"put", keyOf('c', i), "v" + std::to_string(i)});
  });
  Writer fleet_writer([this](int i) {
    return appCtl({"put", keyOf('f', i), "v" + std::to_string(i)}, true);
  });
  auto acknowledged = [&] { return etcdctl_writer.acknowledged() + fleet_writer.acknowledged(); };
  ASSERT_TRUE(eventually([&] { return acknowledged() >= 40; }, 60s))
      << "the clients did not get going: " << ::testing::PrintToString(etcdctl_writer.failures())
      << ::testing::PrintToString(fleet_writer.failures());
  const int started = acknowledged();
  auto rotated = etcdFleet({"certs", "rotate", "--fleet-cert"});
  const int during = acknowledged() - started;
  // A few more writes after the rotation, over connections that handshake with the new
  // certificates only.
  EXPECT_TRUE(eventually([&] { return acknowledged() >= started + during + 40; }, 60s));
  etcdctl_writer.stop();
  fleet_writer.stop();
  ASSERT_EQ(rotated.exit_code, 0) << rotated.out << rotated.err << readText(agents_[0]->logPath());
  EXPECT_THAT(rotated.out, HasSubstr("re-issued with a new key (asked (--fleet-cert))"));
  EXPECT_THAT(rotated.out, HasSubstr("every member has new certificates"));
  for (const auto& a : agents_) {
    EXPECT_THAT(rotated.out, HasSubstr(a->options().name + " " + a->apiAddress() + " rotated ("));
  }

  // Zero failed writes, and every acknowledged write is there.
  EXPECT_EQ(etcdctl_writer.failures(), std::vector<std::string>{});
  EXPECT_EQ(fleet_writer.failures(), std::vector<std::string>{});
  auto keys = appCtl({"get", "rotate/", "--prefix", "--keys-only"});
  ASSERT_EQ(keys.exit_code, 0) << keys.err;
  int stored = 0;
  for (std::size_t at = keys.out.find("rotate/"); at != std::string::npos;
       at = keys.out.find("rotate/", at + 1)) {
    ++stored;
  }
  EXPECT_EQ(stored, acknowledged());
  for (auto [letter, writer] : {std::pair{'c', &etcdctl_writer}, {'f', &fleet_writer}}) {
    for (int i = 0; i < writer->acknowledged(); i += 37) {
      auto one = appCtl({"get", keyOf(letter, i), "--print-value-only"});
      EXPECT_EQ(one.out, "v" + std::to_string(i) + "\n") << keyOf(letter, i);
    }
  }
  std::cout << "writes acknowledged: " << acknowledged() << ", " << during
            << " of them while the rotation ran" << std::endl;

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

}  // namespace
}  // namespace etcdagent::testing
