#pragma once

// Hosts and HOST:PORT listen addresses in agent.toml: what they are (IP literal, loopback,
// wildcard) and whether two listeners would take the same socket. Pure.

#include <optional>
#include <string>
#include <string_view>

namespace etcdagent::agent {

struct HostPort {
  std::string host;  // without the brackets of "[::1]:2378"; may be empty (":2378")
  int port = 0;
};

// "HOST:PORT" or "[IPv6]:PORT" with PORT 0..65535; nullopt when it is not of that form.
std::optional<HostPort> parseHostPort(std::string_view listen);
// The inverse: "HOST:PORT", "[IPv6]:PORT" for a host with a ':'.
std::string formatHostPort(std::string_view host, int port);

bool isIpAddress(std::string_view host);
// 0.0.0.0, ::, or no host at all: every address of the machine.
bool isWildcardHost(std::string_view host);
// 127.0.0.0/8, ::1 or "localhost".
bool isLoopbackHost(std::string_view host);

// Whether listeners on a and b would collide: same port (not 0, which picks a free one) and the
// same address, or either one a wildcard.
bool sameSocket(const HostPort& a, const HostPort& b);

}  // namespace etcdagent::agent
