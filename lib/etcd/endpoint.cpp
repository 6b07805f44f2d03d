#include "etcd/endpoint.hpp"

#include <arpa/inet.h>

namespace etcdagent::etcd {
namespace {

bool isIpv4(const std::string& host) {
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1;
}

bool isIpv6(const std::string& host) {
  in6_addr a{};
  return inet_pton(AF_INET6, host.c_str(), &a) == 1;
}

}  // namespace

Result<Endpoint> parseEndpoint(std::string_view text) {
  Endpoint ep;
  ep.original = std::string(text);
  std::string_view rest = text;
  auto bad = [&](const std::string& why) {
    return fail(Errc::kInvalidArgument,
                "invalid endpoint \"" + std::string(text) + "\": " + why +
                    " (expected HOST:PORT, http://HOST:PORT or https://HOST:PORT)");
  };
  if (rest.empty()) return bad("empty");
  if (rest.starts_with("unix://") || rest.starts_with("unixs://")) {
    ep.tls = rest.starts_with("unixs://");
    auto path = rest.substr(rest.find("://") + 3);
    ep.target = "unix:" + std::string(path);
    ep.host = "localhost";
    return ep;
  }
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
    ep.tls = true;
  } else if (rest.find("://") != std::string_view::npos) {
    return bad("unknown scheme");
  }
  if (auto slash = rest.find('/'); slash != std::string_view::npos) rest = rest.substr(0, slash);
  std::string host;
  std::string port;
  if (rest.starts_with('[')) {
    auto close = rest.find(']');
    if (close == std::string_view::npos) return bad("unterminated [");
    host = std::string(rest.substr(1, close - 1));
    auto after = rest.substr(close + 1);
    if (!after.starts_with(':')) return bad("missing port");
    port = std::string(after.substr(1));
  } else {
    auto colon = rest.rfind(':');
    if (colon == std::string_view::npos) return bad("missing port");
    host = std::string(rest.substr(0, colon));
    port = std::string(rest.substr(colon + 1));
  }
  if (host.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos) {
    return bad("missing host or port");
  }
  ep.host = host;
  if (isIpv4(host)) {
    ep.target = "ipv4:" + host + ":" + port;
  } else if (isIpv6(host)) {
    ep.target = "ipv6:[" + host + "]:" + port;
  } else {
    ep.target = "dns:///" + host + ":" + port;
  }
  return ep;
}

}  // namespace etcdagent::etcd
