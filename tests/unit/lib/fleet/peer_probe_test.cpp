// peerAnswers against real sockets on 127.0.0.1: a port nobody listens on, a listener that never
// accepts (etcd's peer port between its bind and its serve), one that answers, and one that closes
// the connection on the request (a TLS listener refusing plain HTTP).

#include "fleet/peer_probe.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;

// A TCP socket bound to 127.0.0.1 on a free port; listening unless told not to.
class Listener {
 public:
  explicit Listener(bool listen = true) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
    if (listen) {
      EXPECT_EQ(::listen(fd_, 8), 0);
    }
  }
  ~Listener() { ::close(fd_); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  [[nodiscard]] std::string url(const std::string& scheme = "http") const {
    return scheme + "://127.0.0.1:" + std::to_string(port_);
  }
  // Accepts one connection, reads the request, then answers `reply` (or closes when empty).
  std::jthread serveOnce(std::string reply) {
    return std::jthread([this, reply = std::move(reply)] {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[512];
      (void)::recv(c, buf, sizeof buf, 0);
      if (!reply.empty()) (void)::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(c);
    });
  }

 private:
  int fd_ = -1;
  unsigned port_ = 0;
};

TEST(PeerAnswers, APortNobodyListensOnIsNotServed) {
  Listener bound_only(/*listen=*/false);  // bound, not listening: connections are refused
  EXPECT_FALSE(peerAnswers(bound_only.url(), 2s));
}

TEST(PeerAnswers, AListenerThatNeverAcceptsIsNotServedWithinTheTimeout) {
  Listener silent;  // the kernel completes the connection; nobody reads it
  EXPECT_FALSE(peerAnswers(silent.url(), 150ms));
}

TEST(PeerAnswers, AListenerThatAnswersIsServed) {
  Listener served;
  auto server = served.serveOnce("HTTP/1.0 200 OK\r\n\r\n{\"etcdserver\":\"3.4.23\"}");
  EXPECT_TRUE(peerAnswers(served.url(), 5s));
}

TEST(PeerAnswers, AListenerThatClosesOnTheRequestIsServed) {
  Listener tls;  // a TLS listener drops a connection that speaks plain HTTP
  auto server = tls.serveOnce("");
  EXPECT_TRUE(peerAnswers(tls.url("https"), 5s));
}

TEST(PeerAnswers, AnUnusableUrlIsNotServed) {
  EXPECT_FALSE(peerAnswers("http://no-port-here", 100ms));
  EXPECT_FALSE(peerAnswers("http://host.invalid:2380", 100ms));
}

// listenerRefuses: a stopped etcd's port refuses at once; anything else is not known to refuse.
TEST(ListenerRefuses, APortNobodyListensOnRefusesAndAListenerDoesNot) {
  Listener bound_only(/*listen=*/false);
  EXPECT_TRUE(listenerRefuses(bound_only.url(), 2s));
  EXPECT_TRUE(listenerRefuses(bound_only.url("https"), 2s));
  Listener silent;  // accepted by the kernel, never served: it does not refuse
  EXPECT_FALSE(listenerRefuses(silent.url(), 2s));
}

TEST(ListenerRefuses, WhatCannotBeAskedIsNotKnownToRefuse) {
  EXPECT_FALSE(listenerRefuses("unix:///run/etcd-agent/m1.sock", 100ms));
  EXPECT_FALSE(listenerRefuses("http://127.0.0.1", 100ms)) << "no port";
}

}  // namespace
}  // namespace etcdagent::fleet
