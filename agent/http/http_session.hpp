#pragma once

// One HTTP connection of HttpServer: read a request within the limits, answer it, repeat while
// keep-alive. Framing errors are answered (400, 413, 431) and the connection closed; a client too
// slow to send its request is dropped.

#include <boost/asio/ip/tcp.hpp>
#include <memory>

#include "agent/http/http_server.hpp"

namespace etcdagent::agent {

// Serves `socket` until the peer or a limit closes it. `stats` counts the connection while it is
// open.
void startHttpSession(boost::asio::ip::tcp::socket socket, const HttpServer& server,
                      std::shared_ptr<HttpStats> stats);

// The status a request that failed to parse is answered with: 431 (headers too large), 413 (body
// too large), 400 (malformed), or 0 when the connection is closed without an answer (end of
// stream, timeout, reset).
int statusForReadError(const boost::system::error_code& ec);

}  // namespace etcdagent::agent
