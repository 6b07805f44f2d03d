#pragma once

// Test helper for agent/http: a blocking raw TCP client on 127.0.0.1 (what a hostile or broken
// client sends, byte for byte), every read bounded by a socket timeout.

#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <string>

namespace etcdagent::agent::testing {

class RawHttpClient {
 public:
  explicit RawHttpClient(unsigned short port,
                         std::chrono::milliseconds read_timeout = std::chrono::seconds(10))
      : socket_(io_) {
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    timeval tv{static_cast<time_t>(read_timeout.count() / 1000),
               static_cast<suseconds_t>((read_timeout.count() % 1000) * 1000)};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }

  void send(const std::string& bytes) {
    boost::system::error_code ec;
    boost::asio::write(socket_, boost::asio::buffer(bytes), ec);
  }

  // Everything until the server closes the connection (or the read timeout: then "timed out" is
  // appended, so a test sees the difference).
  std::string readToClose() {
    std::string out;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(socket_.native_handle(), buf, sizeof buf, 0);
      if (n > 0) {
        out.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) out += "<timed out>";
      return out;
    }
  }

  // Reads until `marker` was seen (or close/timeout).
  std::string readUntil(const std::string& marker) {
    std::string out;
    char buf[4096];
    while (out.find(marker) == std::string::npos) {
      const ssize_t n = ::recv(socket_.native_handle(), buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }

  void close() {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
};

inline std::string statusLine(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

}  // namespace etcdagent::agent::testing
