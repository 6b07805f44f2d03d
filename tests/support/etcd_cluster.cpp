#include "tests/support/etcd_cluster.hpp"

#include <csignal>
#include <cstdlib>
#include <regex>
#include <stdexcept>
#include <thread>

namespace etcdagent::testing {
namespace {

std::string fromEnv(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

}  // namespace

std::string fleetBinary() {
  return fromEnv("ETCD_FLEET_BINARY", ETCD_FLEET_BINARY_PATH);
}
std::string agentBinary() {
  return fromEnv("ETCD_AGENT_BINARY", ETCD_AGENT_BINARY_PATH);
}
std::string etcdBinary() {
  return fromEnv("ETCD_BINARY", "etcd");
}
std::string etcdctlBinary() {
  return fromEnv("ETCDCTL_BINARY", "etcdctl");
}

std::vector<std::string> etcdMemberArgv(const std::string& name, const std::string& data_dir,
                                        const std::string& client_url, const std::string& peer_url,
                                        const std::string& initial_cluster) {
  return {etcdBinary(),
          "--name=" + name,
          "--data-dir=" + data_dir,
          "--listen-client-urls=" + client_url,
          "--advertise-client-urls=" + client_url,
          "--listen-peer-urls=" + peer_url,
          "--initial-advertise-peer-urls=" + peer_url,
          "--initial-cluster=" + initial_cluster};
}

EtcdCluster::EtcdCluster(Options options) : options_(std::move(options)) {
  const std::string& host = options_.host;
  members_.resize(static_cast<std::size_t>(options_.size));
  std::string initial;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    auto& m = members_[i];
    m.name = "m" + std::to_string(i + 1);
    m.client_port = freePort();
    m.peer_port = freePort();
    m.client_url = "http://" + host + ":" + std::to_string(m.client_port);
    m.peer_url = "http://" + host + ":" + std::to_string(m.peer_port);
    m.data_dir = dir_.path() + "/" + m.name + ".etcd";
    m.log_path = dir_.path() + "/" + m.name + ".log";
    initial += (initial.empty() ? "" : ",") + m.name + "=" + m.peer_url;
  }
  // One token for the whole cluster: members with different tokens get different cluster IDs
  // and never form a quorum.
  const std::string token = "test-" + std::to_string(members_.front().client_port);
  for (auto& m : members_) {
    // flag=value words: one word per setting, so the list reads (and formats) as settings.
    std::vector<std::string> argv =
        etcdMemberArgv(m.name, m.data_dir, m.client_url, m.peer_url, initial);
    argv.insert(argv.end(), {"--initial-cluster-state=new", "--initial-cluster-token=" + token,
                             "--heartbeat-interval=50", "--election-timeout=500", "--logger=zap",
                             "--log-outputs=stderr"});
    for (const auto& f : options_.extra_flags) argv.push_back(f);
    m.process = Child::start(argv, {}, m.log_path, true);
  }
  // Healthy = every member answers a linearizable read (etcdctl endpoint health), bounded.
  for (int attempt = 0; attempt < 150; ++attempt) {
    auto r = etcdctl(endpoints(), {"endpoint", "health"}, {.timeout = 10s});
    if (r.exit_code == 0) return;
    for (auto& m : members_) {
      if (!m.process.running())
        throw std::runtime_error("etcd " + m.name + " exited during start; log: " + m.log_path);
    }
    std::this_thread::sleep_for(100ms);
  }
  throw std::runtime_error("etcd cluster did not become healthy within the start deadline");
}

EtcdCluster::~EtcdCluster() {
  for (auto& m : members_) m.process.stop(SIGTERM, 5s);
}

std::string EtcdCluster::endpoint(std::size_t i) const {
  return options_.host + ":" + std::to_string(members_[i].client_port);
}

std::string EtcdCluster::endpoints() const {
  std::string out;
  for (std::size_t i = 0; i < members_.size(); ++i) out += (i ? "," : "") + endpoint(i);
  return out;
}

void EtcdCluster::kill(std::size_t i) {
  members_[i].process.kill9();
  members_[i].process.wait(10s);
}

RunResult etcdctl(const std::string& endpoints, const std::vector<std::string>& args,
                  RunOptions options) {
  std::vector<std::string> argv{etcdctlBinary(), "--endpoints", endpoints};
  argv.insert(argv.end(), args.begin(), args.end());
  options.env.emplace("ETCDCTL_API", "3");
  return run(argv, options);
}

bool waitUntilEtcdGone(const std::string& endpoint, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto r = etcdctl(endpoint, {"endpoint", "health", "--dial-timeout=1s", "--command-timeout=1s"},
                     {.timeout = std::chrono::seconds(10)});
    if (r.exit_code != 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

RunResult fleet(const std::string& endpoints, const std::vector<std::string>& args,
                RunOptions options) {
  std::vector<std::string> argv{fleetBinary(), "--endpoints", endpoints};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, options);
}

std::string maskJsonNumbers(std::string text, const std::vector<std::string>& fields) {
  for (const auto& f : fields) {
    std::regex re("\"" + f + "\":-?[0-9]+");
    text = std::regex_replace(text, re, "\"" + f + "\":N");
  }
  return text;
}

std::string maskHexIds(std::string text) {
  static const std::regex re("\\b[0-9a-f]{12,16}\\b");
  return std::regex_replace(text, re, "<ID>");
}

}  // namespace etcdagent::testing
