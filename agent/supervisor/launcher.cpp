#include "agent/supervisor/launcher.hpp"

namespace etcdagent::agent {
namespace {

class SpawnedChild final : public Process {
 public:
  explicit SpawnedChild(std::shared_ptr<ChildProcess> child) : child_(std::move(child)) {}
  [[nodiscard]] pid_t pid() const override { return child_->pid(); }
  void signal(int sig) override { child_->signal(sig); }

 private:
  std::shared_ptr<ChildProcess> child_;
};

}  // namespace

Result<std::unique_ptr<Process>> ChildLauncher::spawn(const ChildSpec& spec,
                                                      ChildProcess::LineHandler on_line,
                                                      ChildProcess::ExitHandler on_exit) {
  auto child = ChildProcess::spawn(io_, spec, std::move(on_line), std::move(on_exit));
  if (!child) return fail(child.error());
  return std::make_unique<SpawnedChild>(std::move(*child));
}

}  // namespace etcdagent::agent
