#pragma once

// Probes of an etcd member's listeners from outside, without speaking its protocols.
//
// peerAnswers: whether a member's peer listener is served yet. etcd binds its peer port before it
// checks whether its cluster exists and serves it only afterwards (embed.StartEtcd: servePeers
// after NewServer); meanwhile the kernel completes a TCP connection to it and nobody reads. So:
// connect, send one HTTP/1.0 request (GET /version), and count any reaction within the timeout as
// served: an answer (plain HTTP), or the connection closed (a TLS listener refuses the plain
// request). A port nobody bound refuses at once; a port bound but not yet served keeps silent until
// the timeout. Nothing is trusted or read beyond the first byte. Blocking, bounded by `timeout`.

#include <string_view>

#include "common/duration.hpp"

namespace etcdagent::fleet {

// `peer_url`: "http://HOST:PORT" or "https://HOST:PORT" (an IPv6 HOST in brackets).
bool peerAnswers(std::string_view peer_url, Duration timeout);

// Whether nothing listens at a URL's HOST:PORT: every address of it refuses the connection (or has
// no route) within `timeout`. False when one connects or does not answer in time (a host that is
// down drops the connection attempt: that proves nothing), and for unix:// URLs. A member whose
// etcd stopped refuses at once, so a health check need not wait its dial timeout for it.
bool listenerRefuses(std::string_view url, Duration timeout);

}  // namespace etcdagent::fleet
