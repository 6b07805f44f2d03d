#pragma once

// OpenSSL reports why a call failed on a per-thread error queue; lib/tls turns it into the tail
// of its messages and leaves the queue empty, so no stale entry is blamed on a later call.

#include <string>

namespace etcdagent::tls {

// The queued errors, oldest first, "; "-separated ("" when none); the queue is cleared.
std::string takeOpenSslErrors();

// ": <the queued errors>" or "" (for appending to a message).
std::string opensslReason();

}  // namespace etcdagent::tls
