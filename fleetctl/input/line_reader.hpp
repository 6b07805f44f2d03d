#pragma once

// Lines of the operator's input that an event can cut short: `watch --interactive` reads its
// requests from stdin while the watch stream may end (or the user interrupts) at any time. A
// file descriptor is polled together with a wake-up descriptor (an eventfd); any other stream
// (tests that hand the command an istringstream) is read as it is.
//
// Like Go's bufio.Reader.ReadString('\n'), a last line without its '\n' counts as the end.

#include <istream>
#include <string>

namespace etcdagent::fleet {

class LineReader {
 public:
  enum class Status { kLine, kEof, kWoken };

  // Reads `in`; when `in` is std::cin, reads its descriptor, so `wakeFd` can cut a read short.
  LineReader(std::istream& in, int wakeFd);
  // Reads the descriptor `fd`, polled with `wakeFd`.
  LineReader(int fd, int wakeFd) : fd_(fd), wake_fd_(wakeFd) {}

  // The next line (without its '\n'); kWoken as soon as `wakeFd` is readable.
  Status next(std::string& line);

 private:
  std::istream* in_ = nullptr;  // when not reading a descriptor
  int fd_ = -1;
  int wake_fd_ = -1;
  std::string buf_;
  bool eof_ = false;
};

}  // namespace etcdagent::fleet
