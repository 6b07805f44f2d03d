#include "fleetctl/input/line_reader.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>

namespace etcdagent::fleet {

LineReader::LineReader(std::istream& in, int wakeFd) : wake_fd_(wakeFd) {
  if (&in == &std::cin) {
    fd_ = STDIN_FILENO;
  } else {
    in_ = &in;
  }
}

LineReader::Status LineReader::next(std::string& line) {
  if (in_ != nullptr) {
    if (!std::getline(*in_, line) || in_->eof()) return Status::kEof;
    return Status::kLine;
  }
  for (;;) {
    if (auto nl = buf_.find('\n'); nl != std::string::npos) {
      line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return Status::kLine;
    }
    if (eof_) return Status::kEof;
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return Status::kEof;
    }
    if (fds[1].revents != 0) return Status::kWoken;
    char chunk[4096];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof_ = true;
      continue;
    }
    buf_.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace etcdagent::fleet
