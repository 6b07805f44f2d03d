#pragma once

// Starting child processes, behind a seam: the supervisor starts etcd and etcdctl through a
// ProcessLauncher, so a unit test hands it a fake one that records what was started and lets the
// test write the child's output and end it.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <memory>

#include "agent/supervisor/child_process.hpp"
#include "common/error.hpp"

namespace etcdagent::agent {

// A started child. Dropping the handle of a child that still runs kills it.
class Process {
 public:
  virtual ~Process() = default;
  [[nodiscard]] virtual pid_t pid() const = 0;
  virtual void signal(int sig) = 0;
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  // As ChildProcess::spawn: `on_line` gets every output line, `on_exit` runs once, after the last.
  virtual Result<std::unique_ptr<Process>> spawn(const ChildSpec& spec,
                                                 ChildProcess::LineHandler on_line,
                                                 ChildProcess::ExitHandler on_exit) = 0;
};

// The real one: fork+exec on the event loop (ChildProcess).
class ChildLauncher final : public ProcessLauncher {
 public:
  explicit ChildLauncher(boost::asio::io_context& io) : io_(io) {}
  Result<std::unique_ptr<Process>> spawn(const ChildSpec& spec, ChildProcess::LineHandler on_line,
                                         ChildProcess::ExitHandler on_exit) override;

 private:
  boost::asio::io_context& io_;
};

}  // namespace etcdagent::agent
