#pragma once

// A child process we started (etcd), on the agent's event loop:
// - fork+exec with its stdout and stderr on one pipe, read line by line;
// - exit observed through a pidfd (an event, no polling), then reaped;
// - chosen fds inherited (the member lock), everything else closed;
// - SIGTERM to the child if the agent dies (PR_SET_PDEATHSIG), so no orphan keeps the data dir.
// Destroying a ChildProcess that still runs SIGKILLs and reaps it.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/streambuf.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace etcdagent::agent {

struct ExitStatus {
  int code = -1;   // exit code, or -1 when killed by a signal
  int signal = 0;  // the signal that killed it
  [[nodiscard]] std::string describe() const;
};

struct ChildSpec {
  std::vector<std::string> argv;
  std::vector<int> inherit_fds;  // kept open across exec
  std::vector<std::string> env;  // NAME=VALUE added to (or overriding) the agent's environment
  std::string cwd;               // the child's working directory; "": the agent's
};

class ChildProcess : public std::enable_shared_from_this<ChildProcess> {
 public:
  using LineHandler = std::function<void(const std::string&)>;
  using ExitHandler = std::function<void(ExitStatus)>;

  // Starts the child. `on_line` gets every output line; `on_exit` runs once, after the last line.
  static Result<std::shared_ptr<ChildProcess>> spawn(boost::asio::io_context& io,
                                                     const ChildSpec& spec, LineHandler on_line,
                                                     ExitHandler on_exit);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] bool exited() const { return status_.has_value(); }
  void signal(int sig);

 private:
  ChildProcess(boost::asio::io_context& io, pid_t pid, int pidfd, int out_fd, LineHandler on_line,
               ExitHandler on_exit);
  void readLines();
  void waitExit();
  void maybeFinish();

  pid_t pid_;
  boost::asio::posix::stream_descriptor pidfd_;
  boost::asio::posix::stream_descriptor out_;
  boost::asio::streambuf buffer_;
  LineHandler on_line_;
  ExitHandler on_exit_;
  std::optional<ExitStatus> status_;
  bool output_closed_ = false;
  bool finished_ = false;
};

}  // namespace etcdagent::agent
