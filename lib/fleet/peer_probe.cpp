#include "fleet/peer_probe.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>

#include "fleet/inventory.hpp"

namespace etcdagent::fleet {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A socket closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

int msLeft(SteadyClock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Waits for `events` on `fd` until `deadline`: the revents, 0 on timeout.
short waitFor(int fd, short events, SteadyClock::time_point deadline) {
  pollfd p{.fd = fd, .events = events, .revents = 0};
  for (;;) {
    const int n = ::poll(&p, 1, msLeft(deadline));
    if (n > 0) return p.revents;
    if (n == 0 || errno != EINTR) return 0;
  }
}

// One connection to `address`: whether the listener reacted to the request before `deadline`.
bool reacts(const addrinfo& address, const std::string& request, SteadyClock::time_point deadline) {
  Fd fd(::socket(address.ai_family, address.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                 address.ai_protocol));
  if (fd.get() < 0) return false;
  if (::connect(fd.get(), address.ai_addr, address.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return false;  // refused: nothing listens
    if ((waitFor(fd.get(), POLLOUT, deadline) & POLLOUT) == 0) return false;
    int error = 0;
    socklen_t len = sizeof error;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) {
      return false;
    }
  }
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) < 0) {
    // The listener reset the connection already: it is served (and refused the request).
    return errno == ECONNRESET || errno == EPIPE;
  }
  // An answer, an end of stream or a reset: each means a process reads the connection.
  return (waitFor(fd.get(), POLLIN, deadline) & (POLLIN | POLLHUP | POLLERR)) != 0;
}

}  // namespace

bool peerAnswers(std::string_view peer_url, Duration timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  const std::string host_port = hostPortOf(peer_url);
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = host_port.substr(0, colon);
  const std::string port = host_port.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    return false;
  }
  const std::string request = "GET /version HTTP/1.0\r\nHost: " + host_port + "\r\n\r\n";
  bool served = false;
  for (const addrinfo* a = found; a != nullptr && !served && msLeft(deadline) > 0; a = a->ai_next) {
    served = reacts(*a, request, deadline);
  }
  ::freeaddrinfo(found);
  return served;
}

}  // namespace etcdagent::fleet
