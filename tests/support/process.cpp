#include "tests/support/process.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace etcdagent::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> buildEnv(const RunOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    bool drop = options.env.contains(name);
    for (const auto& u : options.unset_env) drop = drop || u == name;
    if (!drop) env.push_back(entry);
  }
  for (const auto& [k, v] : options.env) env.push_back(k + "=" + v);
  return env;
}

std::vector<char*> cstrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Where sanitized children report: the path prefix of ASan's and LSan's report files
// (<prefix>.<pid>, the log_path of cmake/sanitizer/default_options.cpp.in) and the exit code of a
// process with a sanitizer error. The tests of a sanitizer build (ETCD_AGENT_SANITIZE) know both
// from their build; the integration tests of the main build learn them from the environment when
// ./dev sanitize runs them against the sanitized etcd-agent and etcd-fleet
// (ETCD_AGENT_SANITIZER_REPORTS, ETCD_AGENT_SANITIZER_EXITCODE). None: children are not sanitized.
struct SanitizerReports {
  std::string prefix;
  int exit_code = 0;
};

std::optional<SanitizerReports> sanitizerReports() {
  const char* prefix = std::getenv("ETCD_AGENT_SANITIZER_REPORTS");
  const char* code = std::getenv("ETCD_AGENT_SANITIZER_EXITCODE");
  if (prefix != nullptr && *prefix != '\0' && code != nullptr && *code != '\0') {
    return SanitizerReports{prefix, std::atoi(code)};
  }
#ifdef ETCD_AGENT_SANITIZER_REPORTS
  return SanitizerReports{ETCD_AGENT_SANITIZER_REPORTS, ETCD_AGENT_SANITIZER_EXITCODE};
#else
  return std::nullopt;
#endif
}

// A sanitized process with a sanitizer error exits with the sanitizers' exit code, and ASan/LSan
// write the report to <prefix>.<pid>; UBSan's goes to the process's stderr (GCC's separate
// libubsan ignores log_path next to libasan). Either fails the running test here, for every
// child we reap, whatever the test does with the exit code: a daemon's is rarely looked at. The
// report file is renamed so it is told once (./dev sanitize still lists every report file at the
// end). `err` is the child's stderr, or where it went.
void expectNoSanitizerReport(pid_t pid, const RunResult& r, const std::string& err) {
  static const std::optional<SanitizerReports> reports = sanitizerReports();
  if (!reports) return;
  const std::string path = reports->prefix + "." + std::to_string(pid);
  if (std::ifstream in(path); in) {
    std::string report((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::error_code ec;
    std::filesystem::rename(path, path + ".reported", ec);
    ADD_FAILURE() << "sanitizer report of child " << pid << " (" << path << "):\n" << report;
  } else if (r.exit_code == reports->exit_code) {
    // A report that could not go to its file (a child out of descriptors) is in the child's
    // stderr: when that went to a file, its end is shown, for a CI log to carry it.
    std::string shown = err;
    if (err.starts_with("(in ") && err.ends_with(")")) {
      if (std::ifstream stderr_file(err.substr(4, err.size() - 5)); stderr_file) {
        std::string text((std::istreambuf_iterator<char>(stderr_file)),
                         std::istreambuf_iterator<char>());
        constexpr std::size_t kTail = 16384;
        shown += ", ending:\n" + (text.size() > kTail ? text.substr(text.size() - kTail) : text);
      }
    }
    ADD_FAILURE() << "child " << pid << " exited " << r.exit_code
                  << ", the sanitizers' exit code: its report is in its stderr:\n"
                  << shown;
  }
}

RunResult statusToResult(int status) {
  RunResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

struct Spawned {
  pid_t pid;
  int in_fd;   // write end of stdin, or -1
  int out_fd;  // read end of stdout
  int err_fd;  // read end of stderr, or -1
};

Spawned spawn(const std::vector<std::string>& argv, const RunOptions& options, bool capture_err,
              const std::string& stderr_path, bool stdout_to_file) {
  int in[2], out[2], err[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  if (capture_err && pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  if (stdout_to_file && !stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&fa, 1, stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
  } else {
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  }
  if (capture_err) {
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  } else if (!stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&fa, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
  } else {
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  }
  // Each child leads its own process group, so a test can signal it without touching the runner.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  std::vector<std::string> args = argv;
  std::vector<std::string> env = buildEnv(options);
  auto cargs = cstrings(args);
  auto cenv = cstrings(env);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, cargs[0], &fa, &attr, cargs.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(in[0]);
  close(out[1]);
  if (capture_err) close(err[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    if (capture_err) close(err[0]);
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  return {pid, in[1], out[0], capture_err ? err[0] : -1};
}

}  // namespace

RunResult run(const std::vector<std::string>& argv, const RunOptions& options) {
  signal(SIGPIPE, SIG_IGN);
  Spawned s = spawn(argv, options, true, "", false);
  const auto deadline = Clock::now() + options.timeout;
  std::string out, err;
  std::size_t written = 0;
  int in_fd = s.in_fd;
  if (options.input.empty()) {
    close(in_fd);
    in_fd = -1;
  } else {
    fcntl(in_fd, F_SETFL, O_NONBLOCK);
  }
  bool timed_out = false;
  int out_fd = s.out_fd, err_fd = s.err_fd;
  while (out_fd >= 0 || err_fd >= 0) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      ::kill(s.pid, SIGKILL);
      break;
    }
    pollfd fds[3];
    int n = 0;
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (poll(fds, static_cast<nfds_t>(n), static_cast<int>(std::min<long long>(left, 1000))) < 0 &&
        errno != EINTR)
      break;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_fd) {
        ssize_t w = write(in_fd, options.input.data() + written, options.input.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if (w < 0 || written == options.input.size()) {
          close(in_fd);
          in_fd = -1;
        }
        continue;
      }
      char buf[65536];
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      if (r <= 0) {
        if (fds[i].fd == out_fd) out_fd = -1;
        if (fds[i].fd == err_fd) err_fd = -1;
        close(fds[i].fd);
        continue;
      }
      (fds[i].fd == s.out_fd ? out : err).append(buf, static_cast<std::size_t>(r));
    }
  }
  if (in_fd >= 0) close(in_fd);
  if (out_fd >= 0) close(out_fd);
  if (err_fd >= 0) close(err_fd);
  int status = 0;
  waitpid(s.pid, &status, 0);
  RunResult result = statusToResult(status);
  result.timed_out = timed_out;
  result.out = std::move(out);
  result.err = std::move(err);
  expectNoSanitizerReport(s.pid, result, result.err);
  return result;
}

Child Child::start(const std::vector<std::string>& argv, const RunOptions& options,
                   const std::string& stderr_path, bool stdout_to_stderr_file) {
  signal(SIGPIPE, SIG_IGN);
  Spawned s = spawn(argv, options, false, stderr_path, stdout_to_stderr_file);
  if (!options.input.empty()) {
    ssize_t w = write(s.in_fd, options.input.data(), options.input.size());
    (void)w;
  }
  close(s.in_fd);
  Child c;
  c.pid_ = s.pid;
  c.out_fd_ = s.out_fd;
  c.stderr_path_ = stderr_path;
  return c;
}

Child::Child(Child&& o) noexcept {
  *this = std::move(o);
}

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    pid_ = std::exchange(o.pid_, -1);
    out_fd_ = std::exchange(o.out_fd_, -1);
    stderr_path_ = std::move(o.stderr_path_);
    buffer_ = std::move(o.buffer_);
    eof_ = o.eof_;
    status_ = std::move(o.status_);
  }
  return *this;
}

Child::~Child() {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    reap(true);
  }
  if (out_fd_ >= 0) close(out_fd_);
}

void Child::reap(bool block) {
  if (pid_ <= 0 || status_) return;
  int status = 0;
  pid_t r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (r == pid_) {
    status_ = statusToResult(status);
    expectNoSanitizerReport(pid_, *status_,
                            stderr_path_.empty() ? "(discarded)" : "(in " + stderr_path_ + ")");
  }
}

bool Child::running() {
  reap(false);
  return pid_ > 0 && !status_;
}

bool Child::fill(std::chrono::milliseconds timeout) {
  if (eof_ || out_fd_ < 0) return false;
  pollfd p{out_fd_, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
  char buf[65536];
  ssize_t r = read(out_fd_, buf, sizeof buf);
  if (r <= 0) {
    eof_ = true;
    return false;
  }
  buffer_.append(buf, static_cast<std::size_t>(r));
  return true;
}

std::optional<std::string> Child::readLine(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || eof_) return std::nullopt;
    fill(left);
  }
}

std::string Child::readAll(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!eof_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    fill(left);
  }
  return std::exchange(buffer_, {});
}

RunResult Child::wait(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!status_ && Clock::now() < deadline) {
    reap(false);
    if (!status_) std::this_thread::sleep_for(10ms);
  }
  if (!status_) {
    RunResult r;
    r.timed_out = true;
    return r;
  }
  return *status_;
}

RunResult Child::stop(int sig, std::chrono::milliseconds timeout) {
  if (running()) ::kill(pid_, sig);
  auto r = wait(timeout);
  if (r.timed_out) {
    kill9();
    auto killed = wait(10s);
    killed.timed_out = true;
    return killed;
  }
  return r;
}

void Child::kill9() {
  if (running()) ::kill(pid_, SIGKILL);
}

namespace {

// The kernel's ephemeral port range: the local ports of outgoing connections.
std::pair<int, int> ephemeralPorts() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int lo = 32768;
  int hi = 60999;
  in >> lo >> hi;
  return {lo, hi};
}

bool bindable(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

}  // namespace

// Below the ephemeral range: a port the kernel handed out (bind to port 0) is one it may hand out
// again as the local port of any outgoing connection, to the very host address a test's etcd
// then cannot listen on ("peer port ... is in use", seen in CI). A random one, never the same
// twice in a process, and free on 127.0.0.1 now.
int freePort() {
  static std::mutex mu;
  static std::set<int> given;
  static std::mt19937 random(std::random_device{}());
  const auto [ephemeral_lo, ephemeral_hi] = ephemeralPorts();
  const int lo = ephemeral_lo > 12000 ? 10000 : ephemeral_hi + 1;
  const int hi = ephemeral_lo > 12000 ? ephemeral_lo - 1 : 65535;
  if (lo > hi) throw std::runtime_error("no ports outside the ephemeral range to test with");
  std::lock_guard lock(mu);
  std::uniform_int_distribution<int> pick(lo, hi);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = pick(random);
    if (given.contains(port) || !bindable(port)) continue;
    given.insert(port);
    return port;
  }
  throw std::runtime_error("no free port in " + std::to_string(lo) + "-" + std::to_string(hi));
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "etcd-agent-test-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void writeExecutable(const std::string& path, const std::string& text) {
  {
    std::ofstream out(path);
    out << text;
  }
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
}

}  // namespace etcdagent::testing
