#include "agent/bootstrap/preflight.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <vector>

#include "agent/config/etcd_binary.hpp"
#include "common/file_util.hpp"

namespace etcdagent::agent {
namespace {

namespace fs = std::filesystem;

v1::PreflightCheck* check(v1::PreflightResponse& r, const std::string& name, bool ok,
                          const std::string& detail, bool warning = false) {
  auto* c = r.add_checks();
  c->set_name(name);
  c->set_ok(ok);
  c->set_warning(warning);
  c->set_detail(detail);
  return c;
}

}  // namespace

bool portFree(const std::string& host, int port) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
  auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, host.c_str(), &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<std::uint16_t>(port));
    len = sizeof *a4;
  } else if (inet_pton(AF_INET6, host.c_str(), &a6->sin6_addr) == 1) {
    family = AF_INET6;
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<std::uint16_t>(port));
    len = sizeof *a6;
  } else {
    // A host name: check the wildcard address, which conflicts with any listener on the port.
    a4->sin_family = AF_INET;
    a4->sin_addr.s_addr = htonl(INADDR_ANY);
    a4->sin_port = htons(static_cast<std::uint16_t>(port));
    len = sizeof *a4;
  }
  UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return false;
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  return ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) == 0;
}

int findFreePort(const std::string& host, int from, const std::vector<int>& avoid) {
  for (int port = from; port < 65536; ++port) {
    if (std::find(avoid.begin(), avoid.end(), port) == avoid.end() && portFree(host, port)) {
      return port;
    }
  }
  return 0;
}

Result<std::uint64_t> fsyncProbe(const std::string& dir, int samples) {
  const std::string path = dir + "/.fsync-probe";
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) return fail(Errc::kIo, "cannot create " + path + ": " + errnoText(errno));
  std::array<char, 4096> block{};
  std::vector<std::uint64_t> micros;
  for (int i = 0; i < samples; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (::pwrite(fd.get(), block.data(), block.size(), static_cast<off_t>(i) * 4096) < 0 ||
        ::fdatasync(fd.get()) != 0) {
      int e = errno;
      ::unlink(path.c_str());
      return fail(Errc::kIo, "fsync probe in " + dir + " failed: " + errnoText(e));
    }
    micros.push_back(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count()));
  }
  ::unlink(path.c_str());
  std::sort(micros.begin(), micros.end());
  return micros[std::min(micros.size() - 1, micros.size() * 99 / 100)];
}

v1::PreflightResponse preflight(const PreflightInput& in) {
  const AgentConfig& cfg = in.config;
  v1::PreflightResponse r;
  r.set_member_name(cfg.member.name);
  r.set_advertise_host(cfg.member.advertise_host);
  r.set_unix_time_nanos(std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count());
  bool ok = true;

  // Data dir: empty, or already this cluster's member (a re-run bootstrap).
  r.set_data_dir_empty(in.state == nullptr &&
                       (!fs::exists(cfg.dataDir()) || fs::is_empty(cfg.dataDir())));
  if (in.state != nullptr) {
    r.set_existing_cluster_token(in.state->plan().cluster_token());
    bool same = in.state->plan().cluster_token() == in.cluster_token;
    check(r, "data dir", same,
          same ? "already a member of cluster \"" + in.cluster_token + "\""
               : cfg.dataDir() + " belongs to cluster \"" + in.state->plan().cluster_token() +
                     "\", not \"" + in.cluster_token + "\"; remove that member first");
    ok = ok && same;
  } else if (!r.data_dir_empty()) {
    // Orphaned: a member's data whose plan (state.json) is gone. Never offered as an empty host.
    check(r, "data dir", false,
          cfg.dataDir() + " holds a member's data but " + cfg.statePath() +
              " is missing (orphaned): put state.json back and restart etcd-agent, or wipe it "
              "(etcd-fleet agent wipe --host " +
              cfg.agent.api_listen + " --force)");
    ok = false;
  } else {
    check(r, "data dir", true, cfg.dataDir() + " is empty");
  }

  // Ports: the plan's when there is one; otherwise the configured ones or the next free ones.
  int client = cfg.member.client_port;
  int peer = cfg.member.peer_port;
  if (in.state != nullptr) {
    client = static_cast<int>(in.state->plan().client_port());
    peer = static_cast<int>(in.state->plan().peer_port());
  } else {
    std::vector<int> avoid = in.avoid_ports;
    if (client == 0) client = findFreePort(cfg.member.advertise_host, 2379, avoid);
    avoid.push_back(client);
    if (peer == 0) peer = findFreePort(cfg.member.advertise_host, client + 1, avoid);
  }
  r.set_client_port(static_cast<unsigned>(client));
  r.set_peer_port(static_cast<unsigned>(peer));
  if (!in.member_running) {
    for (auto [name, port] : {std::pair{"client port", client}, {"peer port", peer}}) {
      bool free = port > 0 && portFree(cfg.member.advertise_host, port);
      check(r, name, free,
            cfg.member.advertise_host + ":" + std::to_string(port) +
                (free ? " is free" : " is in use"));
      ok = ok && free;
    }
  }

  // The etcd binary and its version.
  // The same bounded probe as the agent's start (agent/config/etcd_binary).
  const auto version = probeEtcdBinary(cfg.etcd.binary);
  r.set_etcd_version(version ? *version : std::string());
  check(r, "etcd binary", version.has_value(),
        version ? cfg.etcd.binary + " is etcd " + *version
                : version.error().message + " (install etcd-server)");
  ok = ok && version.has_value();

  // Disk latency.
  std::error_code ec;
  fs::create_directories(cfg.memberDir(), ec);
  auto p99 = fsyncProbe(cfg.memberDir());
  if (p99) {
    r.set_fsync_p99_micros(*p99);
    bool slow = *p99 > 10000;
    check(r, "disk", true,
          "fsync p99 " + std::to_string(*p99 / 1000.0).substr(0, 5) + " ms" +
              (slow ? " (etcd wants < 10 ms: expect leader elections under load)" : ""),
          slow);
  } else {
    check(r, "disk", false, p99.error().message);
    ok = false;
  }
  r.set_ok(ok);
  return r;
}

}  // namespace etcdagent::agent
