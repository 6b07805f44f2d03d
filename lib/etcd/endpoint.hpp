#pragma once

// An etcd client endpoint as users write it ("127.0.0.1:2379", "http://h:2379", "https://h:2379",
// "unix:///run/etcd.sock") and the gRPC target we dial for it.

#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent::etcd {

struct Endpoint {
  std::string original;  // as given, for messages
  std::string target;    // gRPC target string
  bool tls = false;      // https:// or unixs://
  std::string host;      // for the TLS authority / SNI
};

// IP literals get the ipv4:/ipv6: resolvers (no DNS round trip at start-up); names use dns:///.
Result<Endpoint> parseEndpoint(std::string_view text);

}  // namespace etcdagent::etcd
