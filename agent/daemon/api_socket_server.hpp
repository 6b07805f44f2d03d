#pragma once

// The agent API on a Unix socket (agent.api_socket), for callers on this host.
//
// gRPC's own unix: listener tells a service nothing about the peer, so this server owns the
// accept: it accepts on the agent's event loop, reads the peer's credentials from the kernel
// (SO_PEERCRED, SO_PEERGROUPS), closes the connection of a caller peer_admission.hpp does not
// admit, and hands the others to a gRPC server of their own with AddInsecureChannelFromFd. It
// remembers the uid of every connection it handed over, so the service can ask who made a call:
// gRPC 1.51 names such a connection "fd:<number>" in ServerContext::peer() (measured; see
// tests/unit/agent/daemon/api_socket_server_test.cpp), and the number stays that connection's
// while any call on it runs (gRPC closes the fd only when the transport, which every call's
// stream holds, is destroyed). An entry is trusted only while the fd still is the socket it
// recorded (same inode), so a number reused by another file never inherits a uid.
//
// Bounded like the HTTP server: connections open at once (beyond: closed), accept() out of
// descriptors waits before the next try, idle connections are closed by gRPC.

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "agent/service/caller.hpp"
#include "agent/service/peer_admission.hpp"
#include "common/error.hpp"

namespace etcdagent::agent {

// The kernel's credentials of the peer of a connected Unix socket.
Result<PeerCredentials> peerCredentials(int fd);

class ApiSocketServer {
 public:
  struct Options {
    std::size_t max_connections = 64;
    std::chrono::milliseconds accept_backoff = std::chrono::milliseconds(500);
    std::chrono::milliseconds idle_timeout = std::chrono::minutes(5);
  };
  // Refusals and accept trouble, told on the event loop (the caller logs).
  using Notice = std::function<void(int priority, const std::string&)>;

  ApiSocketServer(boost::asio::io_context& io, std::string path, grpc::Service& service,
                  CallerPolicy policy, Options options, Notice notice);
  ~ApiSocketServer();
  ApiSocketServer(const ApiSocketServer&) = delete;
  ApiSocketServer& operator=(const ApiSocketServer&) = delete;

  // Creates the directory (0750) when missing, refuses a path another live agent (or any program)
  // answers on or that is not a socket, removes a stale socket, binds, sets mode 0660 and the
  // agent's group, and starts accepting. Errors name the path and agent.api_socket.
  Result<void> start();
  // Stops accepting, removes the socket file (when it is still the one this server made) and
  // shuts gRPC down (calls in flight get until `deadline`).
  void close(std::chrono::system_clock::time_point deadline);
  void wait();

  // The uid of the admitted connection behind gRPC's peer() ("fd:N"); nullopt for any other
  // peer, or a connection this server no longer holds. Any thread.
  [[nodiscard]] std::optional<uid_t> callerUid(std::string_view peer) const;
  [[nodiscard]] ApiSocketStats stats() const;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  struct Connection {
    uid_t uid = 0;
    ino_t inode = 0;
  };
  using Socket = boost::asio::local::stream_protocol::socket;
  void accept();
  void accepted(Socket socket);
  void acceptFailed(const boost::system::error_code& ec);
  // Under mutex_: drops entries whose fd is no longer the recorded socket.
  std::size_t pruneLocked() const;
  Result<void> bindSocket();

  std::string path_;
  grpc::Service& service_;
  CallerPolicy policy_;
  Options options_;
  Notice notice_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  boost::asio::steady_timer backoff_;
  std::unique_ptr<grpc::Server> server_;
  ino_t socket_inode_ = 0;  // of the file this server bound, 0 before
  bool backing_off_ = false;
  bool at_bound_ = false;
  RefusalLog refusals_;
  ApiSocketStats stats_;  // on the loop, but open (computed under mutex_)
  mutable std::mutex mutex_;
  mutable std::map<int, Connection> connections_;  // fd -> who
};

}  // namespace etcdagent::agent
