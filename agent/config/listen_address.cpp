#include "agent/config/listen_address.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace etcdagent::agent {
namespace {

// The canonical text of an IP literal ("::0:1" and "::1" are one address), or the name itself.
std::string canonical(std::string_view host) {
  const std::string h = host == "localhost" ? "127.0.0.1" : std::string(host);
  char text[INET6_ADDRSTRLEN] = {};
  in_addr a4{};
  if (inet_pton(AF_INET, h.c_str(), &a4) == 1) return inet_ntop(AF_INET, &a4, text, sizeof text);
  in6_addr a6{};
  if (inet_pton(AF_INET6, h.c_str(), &a6) == 1) return inet_ntop(AF_INET6, &a6, text, sizeof text);
  return h;
}

}  // namespace

std::optional<HostPort> parseHostPort(std::string_view listen) {
  const auto colon = listen.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const auto port = listen.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  HostPort hp{std::string(listen.substr(0, colon)), std::stoi(std::string(port))};
  if (hp.port > 65535) return std::nullopt;
  if (hp.host.starts_with('[') && hp.host.ends_with(']')) {
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  }
  return hp;
}

std::string formatHostPort(std::string_view host, int port) {
  const std::string h(host);
  return (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + std::to_string(port);
}

bool isIpAddress(std::string_view host) {
  const std::string h(host);
  in_addr a4{};
  in6_addr a6{};
  return inet_pton(AF_INET, h.c_str(), &a4) == 1 || inet_pton(AF_INET6, h.c_str(), &a6) == 1;
}

bool isWildcardHost(std::string_view host) {
  const std::string h(host);
  in_addr a4{};
  if (inet_pton(AF_INET, h.c_str(), &a4) == 1) return a4.s_addr == INADDR_ANY;
  in6_addr a6{};
  if (inet_pton(AF_INET6, h.c_str(), &a6) == 1) return IN6_IS_ADDR_UNSPECIFIED(&a6);
  return h.empty();
}

bool isLoopbackHost(std::string_view host) {
  const std::string h = canonical(host);
  in_addr a4{};
  if (inet_pton(AF_INET, h.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  in6_addr a6{};
  if (inet_pton(AF_INET6, h.c_str(), &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
  return false;
}

bool sameSocket(const HostPort& a, const HostPort& b) {
  if (a.port == 0 || a.port != b.port) return false;
  return isWildcardHost(a.host) || isWildcardHost(b.host) || canonical(a.host) == canonical(b.host);
}

}  // namespace etcdagent::agent
