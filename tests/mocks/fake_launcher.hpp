#pragma once

// A ProcessLauncher that starts nothing: it records every spec, and the test writes the child's
// output (line()) and ends it (exit()), as the event loop would report a real child's.

#include <sys/types.h>

#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/supervisor/launcher.hpp"

namespace etcdagent::testing {

class FakeLauncher final : public agent::ProcessLauncher {
 public:
  struct Child {
    agent::ChildSpec spec;
    pid_t pid = 0;
    agent::ChildProcess::LineHandler on_line;
    agent::ChildProcess::ExitHandler on_exit;
    std::vector<int> signals;  // received, in order
    bool exited = false;
  };

  Result<std::unique_ptr<agent::Process>> spawn(const agent::ChildSpec& spec,
                                                agent::ChildProcess::LineHandler on_line,
                                                agent::ChildProcess::ExitHandler on_exit) override {
    if (fail_next_) return fail(*std::exchange(fail_next_, std::nullopt));
    children_.push_back(
        Child{spec, next_pid_++, std::move(on_line), std::move(on_exit), {}, false});
    return std::make_unique<Handle>(children_.back());
  }

  // The next spawn() fails with `error` (as an exec failure does).
  void failNextSpawn(Error error) { fail_next_ = std::move(error); }

  [[nodiscard]] std::size_t spawned() const { return children_.size(); }
  Child& child(std::size_t i) { return children_.at(i); }
  Child& last() { return children_.back(); }
  // The last child was started and has not exited.
  [[nodiscard]] bool running() const { return !children_.empty() && !children_.back().exited; }

  void line(const std::string& text) { last().on_line(text); }
  void exit(agent::ExitStatus status) {
    Child& c = last();
    c.exited = true;
    auto on_exit = c.on_exit;  // the supervisor drops the handle inside
    on_exit(status);
  }

 private:
  class Handle final : public agent::Process {
   public:
    explicit Handle(Child& child) : child_(child) {}
    [[nodiscard]] pid_t pid() const override { return child_.pid; }
    void signal(int sig) override { child_.signals.push_back(sig); }

   private:
    Child& child_;
  };

  std::deque<Child> children_;  // stable references for the handles
  std::optional<Error> fail_next_;
  pid_t next_pid_ = 4001;
};

}  // namespace etcdagent::testing
