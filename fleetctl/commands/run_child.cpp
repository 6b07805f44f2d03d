#include "fleetctl/commands/run_child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/encoding.hpp"

extern char** environ;

namespace etcdagent::fleet {

Result<int> runChild(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  if (argv.empty()) return fail(Errc::kInvalidArgument, "no command to run");
  std::vector<std::string> environment = env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string name(entry.substr(0, entry.find('=') + 1));
    const bool replaced = std::any_of(env.begin(), env.end(),
                                      [&](const std::string& v) { return v.starts_with(name); });
    if (!replaced) environment.emplace_back(entry);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& v : environment) envp.push_back(const_cast<char*>(v.c_str()));
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // Go's exec.Cmd with a nil Stdin reads from the null device.
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // This process blocks SIGINT/SIGTERM (InterruptGuard); the command must get them normally.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    if (argv[0].find('/') == std::string::npos && (rc == ENOENT || rc == EACCES)) {
      return fail(Errc::kNotFound,
                  "exec: " + goQuote(argv[0]) + ": executable file not found in $PATH");
    }
    return fail(Errc::kIo, "fork/exec " + argv[0] + ": " + goErrnoText(rc));
  }
  int status = 0;
  // The command runs as long as it runs: etcdctl waits for it too, holding the lock meanwhile.
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return fail(Errc::kIo, "wait for " + argv[0] + ": " + goErrnoText(errno));
  }
  return status;
}

std::string goExitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return "exit status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    return "signal: " + goSignalName(sig) + (WCOREDUMP(wait_status) ? " (core dumped)" : "");
  }
  return "exit status " + std::to_string(wait_status);
}

}  // namespace etcdagent::fleet
