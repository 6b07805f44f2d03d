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

enum class Connect { kConnected, kRefused, kNoAnswer };

// A non-blocking connection to `address` until `deadline`: connected (fd holds it), refused (an
// RST, or no route: nothing listens there), or no answer in time (a host that drops the SYN).
Connect connectTo(const Fd& fd, const addrinfo& address, SteadyClock::time_point deadline) {
  if (fd.get() < 0) return Connect::kNoAnswer;
  if (::connect(fd.get(), address.ai_addr, address.ai_addrlen) == 0) return Connect::kConnected;
  if (errno != EINPROGRESS) return Connect::kRefused;
  if ((waitFor(fd.get(), POLLOUT, deadline) & (POLLOUT | POLLERR | POLLHUP)) == 0) {
    return Connect::kNoAnswer;
  }
  int error = 0;
  socklen_t len = sizeof error;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len) != 0) return Connect::kNoAnswer;
  if (error == 0) return Connect::kConnected;
  return error == ECONNREFUSED || error == EHOSTUNREACH || error == ENETUNREACH
             ? Connect::kRefused
             : Connect::kNoAnswer;
}

Fd socketFor(const addrinfo& address) {
  return Fd(::socket(address.ai_family, address.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                     address.ai_protocol));
}

// One connection to `address`: whether the listener reacted to the request before `deadline`.
bool reacts(const addrinfo& address, const std::string& request, SteadyClock::time_point deadline) {
  Fd fd = socketFor(address);
  if (connectTo(fd, address, deadline) != Connect::kConnected) return false;
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) < 0) {
    // The listener reset the connection already: it is served (and refused the request).
    return errno == ECONNRESET || errno == EPIPE;
  }
  // An answer, an end of stream or a reset: each means a process reads the connection.
  return (waitFor(fd.get(), POLLIN, deadline) & (POLLIN | POLLHUP | POLLERR)) != 0;
}

// The addresses of a URL's HOST:PORT (looked up as getaddrinfo does), freed with the object.
class Addresses {
 public:
  explicit Addresses(std::string_view url) : host_port_(hostPortOf(url)) {
    if (url.starts_with("unix:") || url.starts_with("unixs:")) return;
    const auto colon = host_port_.rfind(':');
    if (colon == std::string::npos) return;
    std::string host = host_port_.substr(0, colon);
    const std::string port = host_port_.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &list_) != 0) list_ = nullptr;
  }
  ~Addresses() {
    if (list_ != nullptr) ::freeaddrinfo(list_);
  }
  Addresses(const Addresses&) = delete;
  Addresses& operator=(const Addresses&) = delete;
  [[nodiscard]] const addrinfo* first() const { return list_; }
  [[nodiscard]] const std::string& hostPort() const { return host_port_; }

 private:
  std::string host_port_;
  addrinfo* list_ = nullptr;
};

}  // namespace

bool peerAnswers(std::string_view peer_url, Duration timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  const Addresses addresses(peer_url);
  const std::string request = "GET /version HTTP/1.0\r\nHost: " + addresses.hostPort() + "\r\n\r\n";
  for (const addrinfo* a = addresses.first(); a != nullptr && msLeft(deadline) > 0;
       a = a->ai_next) {
    if (reacts(*a, request, deadline)) return true;
  }
  return false;
}

bool listenerRefuses(std::string_view url, Duration timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  const Addresses addresses(url);
  if (addresses.first() == nullptr) return false;  // nothing to ask: not known to refuse
  for (const addrinfo* a = addresses.first(); a != nullptr; a = a->ai_next) {
    Fd fd = socketFor(*a);
    if (connectTo(fd, *a, deadline) != Connect::kRefused) return false;
  }
  return true;
}

}  // namespace etcdagent::fleet
