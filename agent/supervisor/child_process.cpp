#include "agent/supervisor/child_process.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/buffers_iterator.hpp>
#include <boost/asio/read_until.hpp>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "common/file_util.hpp"

extern char** environ;

namespace etcdagent::agent {
namespace {
constexpr std::size_t kMaxLine = 64 * 1024;
}  // namespace

std::string ExitStatus::describe() const {
  if (signal != 0) return std::string("killed by signal ") + strsignal(signal);
  return "exited with status " + std::to_string(code);
}

Result<std::shared_ptr<ChildProcess>> ChildProcess::spawn(boost::asio::io_context& io,
                                                          const ChildSpec& spec,
                                                          LineHandler on_line,
                                                          ExitHandler on_exit) {
  if (spec.argv.empty()) return fail(Errc::kInvalidArgument, "no program to start");
  int out[2];
  int err_pipe[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    return fail(Errc::kIo, std::string("pipe: ") + std::strerror(errno));
  }
  // Everything the child needs is prepared before fork(): after it, only async-signal-safe calls.
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The agent's environment minus what systemd handed to the agent alone: with NOTIFY_SOCKET etcd
  // would send its own sd_notify messages to the agent's unit (systemd rejects them, and logs so).
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view var(*e);
    if (var.starts_with("NOTIFY_SOCKET=") || var.starts_with("WATCHDOG_USEC=") ||
        var.starts_with("WATCHDOG_PID=") || var.starts_with("LISTEN_FDS=") ||
        var.starts_with("LISTEN_PID=") || var.starts_with("LISTEN_FDNAMES=")) {
      continue;
    }
    const bool overridden = std::ranges::any_of(spec.env, [&](const std::string& extra) {
      const auto eq = extra.find('=');
      return eq != std::string::npos && var.starts_with(std::string_view(extra).substr(0, eq + 1));
    });
    if (!overridden) env.push_back(*e);
  }
  for (const auto& extra : spec.env) env.push_back(const_cast<char*>(extra.c_str()));
  env.push_back(nullptr);
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  const pid_t parent = getpid();

  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    for (int fd : {out[0], out[1], err_pipe[0], err_pipe[1]}) close(fd);
    return fail(Errc::kIo, std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    // The child. Dies with SIGTERM when the agent goes away (a graceful stop for etcd).
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
    for (int fd : spec.inherit_fds) fcntl(fd, F_SETFD, 0);
    // The parent learns which step failed and why: {0, errno} for chdir, {1, errno} for execve.
    int failure[2] = {0, 0};
    if (cwd == nullptr || chdir(cwd) == 0) {
      failure[0] = 1;
      execve(argv[0], argv.data(), env.data());
    }
    failure[1] = errno;
    ssize_t ignored = write(err_pipe[1], failure, sizeof failure);
    (void)ignored;
    _exit(127);
  }
  close(out[1]);
  close(err_pipe[1]);
  int failure[2] = {0, 0};
  ssize_t n;
  do {
    n = read(err_pipe[0], failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  close(err_pipe[0]);
  if (n > 0) {
    waitpid(pid, nullptr, 0);
    close(out[0]);
    const std::string reason = std::strerror(failure[1]);
    if (failure[0] == 0) {
      return fail(Errc::kIo,
                  "cannot start " + spec.argv[0] + ": cannot enter " + spec.cwd + ": " + reason);
    }
    return fail(Errc::kIo, "cannot start " + spec.argv[0] + ": " + reason);
  }
  // glibc 2.36's <sys/pidfd.h> lacks extern "C"; the raw system call is the portable way.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    int e = errno;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(out[0]);
    return fail(Errc::kIo, std::string("pidfd_open: ") + std::strerror(e));
  }
  std::shared_ptr<ChildProcess> child(
      new ChildProcess(io, pid, pidfd, out[0], std::move(on_line), std::move(on_exit)));
  child->readLines();
  child->waitExit();
  return child;
}

ChildProcess::ChildProcess(boost::asio::io_context& io, pid_t pid, int pidfd, int out_fd,
                           LineHandler on_line, ExitHandler on_exit)
    : pid_(pid),
      pidfd_(io, pidfd),
      out_(io, out_fd),
      buffer_(kMaxLine),
      on_line_(std::move(on_line)),
      on_exit_(std::move(on_exit)) {}

ChildProcess::~ChildProcess() {
  if (!status_) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void ChildProcess::signal(int sig) {
  if (!status_) ::kill(pid_, sig);
}

void ChildProcess::readLines() {
  boost::asio::async_read_until(
      out_, buffer_, '\n',
      [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
        auto take = [&](std::size_t count, std::size_t drop) {
          auto begin = boost::asio::buffers_begin(self->buffer_.data());
          std::string line(begin, begin + static_cast<std::ptrdiff_t>(count));
          self->buffer_.consume(count + drop);
          if (self->on_line_) self->on_line_(line);
        };
        if (!ec) {
          take(n - 1, 1);  // one line, without its '\n'
          self->readLines();
          return;
        }
        if (ec == boost::asio::error::not_found) {
          take(self->buffer_.size(), 0);  // an over-long line: pass it on in pieces
          self->readLines();
          return;
        }
        if (self->buffer_.size() > 0) take(self->buffer_.size(), 0);  // unterminated last line
        self->output_closed_ = true;
        self->maybeFinish();
      });
}

void ChildProcess::waitExit() {
  pidfd_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                    [self = shared_from_this()](const boost::system::error_code& ec) {
                      if (ec == boost::asio::error::operation_aborted) return;
                      siginfo_t info{};
                      if (waitid(P_PID, static_cast<id_t>(self->pid_), &info, WEXITED) != 0) {
                        self->status_ = ExitStatus{};
                      } else if (info.si_code == CLD_EXITED) {
                        self->status_ = ExitStatus{info.si_status, 0};
                      } else {
                        self->status_ = ExitStatus{-1, info.si_status};
                      }
                      self->maybeFinish();
                    });
}

void ChildProcess::maybeFinish() {
  // The exit is reported after the last output line, so the handler sees the whole story.
  if (finished_ || !status_ || !output_closed_) return;
  finished_ = true;
  if (on_exit_) on_exit_(*status_);
}

}  // namespace etcdagent::agent
