#include "fleetctl/commands/watch_exec.hpp"

#include <sys/wait.h>

#include "common/encoding.hpp"
#include "fleetctl/commands/run_child.hpp"
#include "fleetctl/output/watch.hpp"

namespace etcdagent::fleet {
namespace {

// Go's %q of a []string: ["a" "b"].
std::string goQuoteList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? " " : "") + goQuote(items[i]);
  return out + "]";
}

// exec.Command(...).Run() for one event: Go's error text on failure.
std::expected<void, std::string> runOnce(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& extraEnv) {
  auto status = runChild(argv, extraEnv);
  if (!status) return std::unexpected(status.error().message);
  if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) return {};
  return std::unexpected(goExitStatus(*status));
}

}  // namespace

std::string watchExecError(const std::vector<std::string>& argv, std::string_view reason) {
  return "command " + goQuoteList(argv) + " error (" + std::string(reason) + ")";
}

std::expected<void, std::string> runWatchExec(const std::vector<std::string>& argv,
                                              const etcdserverpb::WatchResponse& resp) {
  for (const auto& event : resp.events()) {
    if (auto r = runOnce(argv, watchExecEnvironment(resp, event)); !r) {
      return std::unexpected(watchExecError(argv, r.error()));
    }
  }
  return {};
}

}  // namespace etcdagent::fleet
