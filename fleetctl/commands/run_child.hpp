#pragma once

// The commands etcd-fleet runs for `lock <name> <command...>` (while it holds the lock) and for
// `watch ... -- <command>` (once per event).

#include <string>
#include <vector>

#include "common/error.hpp"

namespace etcdagent::fleet {

// Runs `argv` as etcdctl does with Go's os/exec: the program is looked up in PATH unless it
// contains a '/', `env` (ETCD_LOCK_*, ETCD_WATCH_*) comes before the inherited environment and
// replaces a variable of the same name, stdin is /dev/null (Go's nil Stdin), stdout and stderr are
// inherited, SIGINT/SIGTERM are unblocked and at their default action. Returns the waitpid status.
// Errors use Go's words (`exec: "x": executable file not found in $PATH`, `fork/exec /x: no such
// file or directory`).
Result<int> runChild(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// Go's os.ProcessState.String() for a waitpid status: "exit status 3", "signal: killed".
std::string goExitStatus(int wait_status);

}  // namespace etcdagent::fleet
