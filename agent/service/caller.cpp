#include "agent/service/caller.hpp"

#include <arpa/inet.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <vector>

#include "common/file_util.hpp"
#include "common/strings.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::agent {
namespace {

constexpr std::string_view kEstablished = "01";

// gRPC may percent-encode the address part of peer() (%3A for ':', %5B/%5D for brackets).
std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned v = 0;
    if (s[i] == '%' && i + 2 < s.size() &&
        std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16).ptr == s.data() + i + 3) {
      out += static_cast<char>(v);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::optional<std::uint16_t> parsePort(std::string_view s, int base) {
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty() || v > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(v);
}

SocketEndpoint mapped(const in_addr& v4, std::uint16_t port) {
  SocketEndpoint e;
  e.address[10] = 0xff;
  e.address[11] = 0xff;
  std::memcpy(e.address.data() + 12, &v4, 4);
  e.port = port;
  return e;
}

// "0100007F:1F90" (IPv4, 8 hex digits) or 32 hex digits (IPv6, four host-order words).
std::optional<SocketEndpoint> parseProcEndpoint(std::string_view field) {
  const auto colon = field.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto port = parsePort(field.substr(colon + 1), 16);
  const auto hex = field.substr(0, colon);
  if (!port || (hex.size() != 8 && hex.size() != 32)) return std::nullopt;
  std::array<std::uint8_t, 16> bytes{};
  for (std::size_t w = 0; w < hex.size() / 8; ++w) {
    std::uint32_t word = 0;
    auto part = hex.substr(w * 8, 8);
    if (std::from_chars(part.data(), part.data() + 8, word, 16).ptr != part.data() + 8) {
      return std::nullopt;
    }
    std::memcpy(bytes.data() + w * 4, &word, 4);  // the kernel printed the word in host order
  }
  if (hex.size() == 8) {
    in_addr v4{};
    std::memcpy(&v4, bytes.data(), 4);
    return mapped(v4, *port);
  }
  SocketEndpoint e;
  e.address = bytes;
  e.port = *port;
  return e;
}

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    auto j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

std::optional<SocketEndpoint> parseGrpcPeer(std::string_view peer) {
  const bool v4 = peer.starts_with("ipv4:");
  if (!v4 && !peer.starts_with("ipv6:")) return std::nullopt;
  const std::string rest = unescape(peer.substr(5));
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  auto port = parsePort(std::string_view(rest).substr(colon + 1), 10);
  std::string host = rest.substr(0, colon);
  if (!port) return std::nullopt;
  if (v4) {
    in_addr a{};
    if (::inet_pton(AF_INET, host.c_str(), &a) != 1) return std::nullopt;
    return mapped(a, *port);
  }
  if (host.size() < 2 || host.front() != '[' || host.back() != ']') return std::nullopt;
  host = host.substr(1, host.size() - 2);
  if (auto pct = host.find('%'); pct != std::string::npos) host.resize(pct);  // a zone
  in6_addr a{};
  if (::inet_pton(AF_INET6, host.c_str(), &a) != 1) return std::nullopt;
  SocketEndpoint e;
  std::memcpy(e.address.data(), &a, 16);
  e.port = *port;
  return e;
}

std::optional<SocketEndpoint> parseListenEndpoint(std::string_view host_port) {
  const std::string prefix = host_port.starts_with('[') ? "ipv6:" : "ipv4:";
  return parseGrpcPeer(prefix + std::string(host_port));
}

std::optional<uid_t> socketOwner(std::string_view table, const SocketEndpoint& local,
                                 const std::optional<SocketEndpoint>& remote) {
  std::optional<uid_t> owner;
  while (!table.empty()) {
    const auto nl = table.find('\n');
    const auto line = table.substr(0, nl);
    table.remove_prefix(nl == std::string_view::npos ? table.size() : nl + 1);
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
    const auto f = fields(line);
    if (f.size() < 10 || f[3] != kEstablished) continue;
    auto endpoint = parseProcEndpoint(f[1]);
    if (!endpoint || *endpoint != local) continue;
    if (remote) {
      auto other_end = parseProcEndpoint(f[2]);
      if (!other_end || *other_end != *remote) continue;
    }
    uid_t uid = 0;
    if (std::from_chars(f[7].data(), f[7].data() + f[7].size(), uid).ptr !=
        f[7].data() + f[7].size()) {
      continue;
    }
    if (owner && *owner != uid) return std::nullopt;  // two owners: nobody can be trusted
    owner = uid;
  }
  return owner;
}

std::optional<uid_t> callerUid(std::string_view grpc_peer,
                               const std::optional<SocketEndpoint>& server,
                               const std::string& proc_net) {
  auto peer = parseGrpcPeer(grpc_peer);
  if (!peer) return std::nullopt;
  std::optional<uid_t> found;
  for (const char* table : {"/tcp", "/tcp6"}) {
    auto text = readFile(proc_net + table);
    if (!text) continue;
    auto uid = socketOwner(*text, *peer, server);
    if (!uid) continue;
    if (found && *found != *uid) return std::nullopt;
    found = uid;
  }
  return found;
}

bool uidInGroup(uid_t uid, gid_t group) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* pwp = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &pwp) != 0 || pwp == nullptr) return false;
  if (pw.pw_gid == group) return true;
  const std::string name = pw.pw_name;
  std::vector<char> gbuf(65536);
  struct group gr {};
  struct group* grp = nullptr;
  if (::getgrgid_r(group, &gr, gbuf.data(), gbuf.size(), &grp) != 0 || grp == nullptr) {
    return false;
  }
  for (char** m = gr.gr_mem; m != nullptr && *m != nullptr; ++m) {
    if (name == *m) return true;
  }
  return false;
}

CallerPolicy CallerPolicy::forThisProcess() {
  CallerPolicy p;
  p.agent_uid = ::geteuid();
  p.group = ::getegid();
  std::vector<char> buf(65536);
  struct group gr {};
  struct group* grp = nullptr;
  if (::getgrgid_r(p.group, &gr, buf.data(), buf.size(), &grp) == 0 && grp != nullptr) {
    p.group_name = gr.gr_name;
  }
  p.in_group = uidInGroup;
  return p;
}

bool isPrivileged(std::optional<uid_t> caller, const CallerPolicy& policy) {
  return caller && (*caller == 0 || *caller == policy.agent_uid ||
                    (policy.in_group && policy.in_group(*caller, policy.group)));
}

Result<void> authorizeMutation(std::optional<uid_t> caller, std::string_view method,
                               const CallerPolicy& policy) {
  if (isPrivileged(caller, policy)) return {};
  const std::string who = caller ? "uid " + std::to_string(*caller)
                                 : std::string(
                                       "a caller this agent cannot identify (not a "
                                       "loopback TCP connection it can trace to a uid)");
  const std::string group = (policy.group_name.empty() ? std::string() : policy.group_name + " ") +
                            "(gid " + std::to_string(policy.group) + ")";
  return fail(Errc::kPermissionDenied,
              std::string(method) + " changes the member, and " + who +
                  " may only read (GetStatus) on this agent: mutating calls are for root, the "
                  "agent's own user (uid " +
                  std::to_string(policy.agent_uid) + ") and members of group " + group +
                  ". Run etcd-fleet as one of them (e.g. with sudo)");
}

Result<void> authorizeCertificateMutation(std::string_view common_name, std::string_view method) {
  if (common_name == tls::kFleetClientCommonName) return {};
  return fail(Errc::kPermissionDenied,
              std::string(method) +
                  " changes the member or hands out its data, and the "
                  "certificate " +
                  quoteForMessage(common_name) +
                  " may only read (GetStatus) on this agent: such calls are for etcd-fleet's "
                  "own certificate (CN etcd-fleet, pki/fleet.crt)");
}

namespace {

// etcd-fleet's certificate, or one of the fleet's agents' (etcd-agent:<member>).
bool fleetOrAgent(std::string_view common_name) {
  return common_name == tls::kFleetClientCommonName ||
         (common_name.starts_with(tls::kAgentCommonNamePrefix) &&
          common_name.size() > tls::kAgentCommonNamePrefix.size());
}

}  // namespace

Result<void> authorizeDiscoveryRelay(std::string_view common_name) {
  if (fleetOrAgent(common_name)) return {};
  return fail(Errc::kPermissionDenied,
              "RelayDiscovery registers members of the fleet's clusters, and the certificate " +
                  quoteForMessage(common_name) +
                  " is neither an agent's of this fleet (CN etcd-agent:<member>) nor etcd-fleet's");
}

Result<void> authorizeSnapshotCopy(std::string_view common_name) {
  if (fleetOrAgent(common_name)) return {};
  return fail(Errc::kPermissionDenied,
              "StoreSnapshotCopy keeps a member's snapshot on this agent's disk for the fleet, "
              "and the certificate " +
                  quoteForMessage(common_name) +
                  " is neither an agent's of this fleet (CN etcd-agent:<member>) nor etcd-fleet's");
}

}  // namespace etcdagent::agent
