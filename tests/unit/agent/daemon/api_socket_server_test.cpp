// ApiSocketServer with a real gRPC server on a Unix socket in a temp dir: what gRPC 1.51 says a
// call's peer is, the uid behind it, the socket's mode, a stale socket replaced, a second server
// refused, a refused peer closed before gRPC, and the file removed at close.

#include "agent/daemon/api_socket_server.hpp"

#include <gmock/gmock.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "common/file_util.hpp"
#include "etcdagent/v1/agent.grpc.pb.h"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// GetStatus answers with what the server knows of the call: its peer and that peer's uid. With
// `hold`, the call waits (bounded) until released, then looks its caller up again.
class EchoService final : public v1::Agent::Service {
 public:
  grpc::Status GetStatus(grpc::ServerContext* context, const v1::GetStatusRequest*,
                         v1::AgentStatus* out) override {
    const std::string peer = context->peer();
    auto uid = server->callerUid(peer);
    {
      std::unique_lock lock(mutex);
      seen_peer = peer;
      seen_uid = uid;
      if (hold) {
        held = true;
        wake.notify_all();
        // Until released (bounded): tells the test when gRPC saw the client give up.
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (hold && std::chrono::steady_clock::now() < deadline) {
          wake.wait_for(lock, 20ms);
          cancelled = context->IsCancelled();
          wake.notify_all();
        }
        uid_after_hold = server->callerUid(peer);
        done = true;
        wake.notify_all();
      }
    }
    out->set_status_line(peer);
    return grpc::Status::OK;
  }

  ApiSocketServer* server = nullptr;
  std::mutex mutex;
  std::condition_variable wake;
  bool hold = false;
  bool held = false;
  bool done = false;
  bool cancelled = false;
  std::string seen_peer;
  std::optional<uid_t> seen_uid;
  std::optional<uid_t> uid_after_hold;
};

// The server on a loop of its own thread.
class SocketFixture {
 public:
  explicit SocketFixture(const std::string& path)
      : server(io, path, service, CallerPolicy::forThisProcess(), {},
               [this](int, const std::string& text) {
                 std::scoped_lock lock(notices_mutex);
                 notices.push_back(text);
               }),
        work(io.get_executor()),
        thread([this] { io.run(); }) {
    service.server = &server;
  }
  ~SocketFixture() {
    boost::asio::post(io, [this] { server.close(std::chrono::system_clock::now()); });
    work.reset();
    thread.join();
    server.wait();
  }
  SocketFixture(const SocketFixture&) = delete;
  SocketFixture& operator=(const SocketFixture&) = delete;

  // start() on the loop, as the agent calls it.
  Result<void> start() {
    std::promise<Result<void>> started;
    boost::asio::post(io, [&] { started.set_value(server.start()); });
    return started.get_future().get();
  }
  ApiSocketStats stats() {
    std::promise<ApiSocketStats> s;
    boost::asio::post(io, [&] { s.set_value(server.stats()); });
    return s.get_future().get();
  }

  boost::asio::io_context io;
  EchoService service;
  ApiSocketServer server;
  std::mutex notices_mutex;
  std::vector<std::string> notices;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work;
  std::thread thread;
};

grpc::Status getStatus(const std::string& path, v1::AgentStatus* out,
                       std::chrono::milliseconds timeout = 5s) {
  auto channel = grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
  v1::Agent::Stub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  return stub.GetStatus(&ctx, {}, out);
}

TEST(ApiSocketServer, GrpcNamesAnFdChannelsPeerFdNAndTheCallIsItsConnectionsUid) {
  testing::UnitTempDir dir;
  SocketFixture f(dir.path() + "/run/api.sock");
  ASSERT_TRUE(f.start());
  v1::AgentStatus out;
  auto s = getStatus(dir.path() + "/run/api.sock", &out);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // Measured on gRPC 1.51: "fd:<the fd handed to AddInsecureChannelFromFd>".
  EXPECT_THAT(out.status_line(), ::testing::StartsWith("fd:"));
  std::scoped_lock lock(f.service.mutex);
  EXPECT_EQ(f.service.seen_uid, ::geteuid());
  EXPECT_EQ(f.stats().admitted, 1U);
}

// Raw connection to `path` (root: admitted), kept open for the scope.
UniqueFd rawConnect(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

template <class Done>
bool waitUntil(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// The uid map is keyed by fd number: it holds only if gRPC keeps a connection's fd open while a
// call on it runs, even after the client closed it (else a new connection could get the number).
TEST(ApiSocketServer, ACallKeepsItsConnectionAndUidAfterItsClientWentAway) {
  testing::UnitTempDir dir;
  const std::string path = dir.path() + "/api.sock";
  SocketFixture f(path);
  ASSERT_TRUE(f.start());
  f.service.hold = true;
  {
    v1::AgentStatus out;
    auto s = getStatus(path, &out, 300ms);  // gives up while the call is held
    EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  }  // the client's channel, and with it the connection, is gone
  {
    std::unique_lock lock(f.service.mutex);
    ASSERT_TRUE(f.service.wake.wait_for(lock, 10s, [&] { return f.service.cancelled; }));
  }
  auto other = rawConnect(path);
  ASSERT_TRUE(waitUntil([&] { return f.stats().admitted == 2; }));
  EXPECT_EQ(f.stats().open, 2U) << "the held call's fd was closed (or reused) under it";
  std::unique_lock lock(f.service.mutex);
  f.service.hold = false;
  f.service.wake.notify_all();
  ASSERT_TRUE(f.service.wake.wait_for(lock, 10s, [&] { return f.service.done; }));
  EXPECT_EQ(f.service.uid_after_hold, ::geteuid());
}

TEST(ApiSocketServer, TheSocketIsMode0660InTheAgentsGroupAndGoneAfterClose) {
  testing::UnitTempDir dir;
  const std::string path = dir.path() + "/api.sock";
  {
    SocketFixture f(path);
    const mode_t old = ::umask(077);  // the units' UMask
    auto started = f.start();
    ::umask(old);
    ASSERT_TRUE(started) << started.error().message;
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0660U);
    EXPECT_EQ(st.st_gid, ::getegid());
  }
  struct stat st {};
  EXPECT_NE(::lstat(path.c_str(), &st), 0) << "the socket file outlived its server";
}

TEST(ApiSocketServer, AStaleSocketFileIsReplaced) {
  testing::UnitTempDir dir;
  const std::string path = dir.path() + "/api.sock";
  {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  }
  SocketFixture f(path);
  auto started = f.start();
  ASSERT_TRUE(started) << started.error().message;
  v1::AgentStatus out;
  EXPECT_TRUE(getStatus(path, &out).ok());
}

TEST(ApiSocketServer, ASecondServerOnTheSamePathIsRefusedAndNamesIt) {
  testing::UnitTempDir dir;
  const std::string path = dir.path() + "/api.sock";
  SocketFixture first(path);
  ASSERT_TRUE(first.start());
  SocketFixture second(path);
  auto r = second.start();
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr(path + " (agent.api_socket)"));
  EXPECT_THAT(r.error().message, HasSubstr("another etcd-agent"));
  // The first one still serves, on its own file.
  v1::AgentStatus out;
  EXPECT_TRUE(getStatus(path, &out).ok());
}

// A child that becomes uid/gid 65534 without groups, connects, and reports whether the server
// closed the connection without a byte (0), or something else happened (1..3).
int connectAsNobody(const std::string& path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) _exit(2);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) _exit(3);
    const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    // MSG_NOSIGNAL: the server may have closed the connection already (that is the point), and
    // a write to it must not kill the child with SIGPIPE.
    (void)::send(fd, preface, sizeof preface - 1, MSG_NOSIGNAL);
    char buf[64];
    const ssize_t n = ::read(fd, buf, sizeof buf);  // blocks until the server answers or closes
    _exit(n <= 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

TEST(ApiSocketServer, APeerThatIsNotAdmittedIsClosedCountedAndLoggedOnce) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another uid";
  testing::UnitTempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  const std::string path = dir.path() + "/api.sock";
  SocketFixture f(path);
  ASSERT_TRUE(f.start());
  // Past the file mode (which alone keeps uid 65534 out): the credentials must refuse it too.
  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
  EXPECT_EQ(connectAsNobody(path), 0);
  EXPECT_EQ(connectAsNobody(path), 0);
  const auto stats = f.stats();
  EXPECT_EQ(stats.refused, 2U);
  EXPECT_EQ(stats.admitted, 0U);
  std::scoped_lock lock(f.notices_mutex);
  ASSERT_EQ(f.notices.size(), 1U) << "one line per uid within the rate limit";
  EXPECT_THAT(f.notices[0], HasSubstr("uid 65534"));
  v1::AgentStatus out;
  EXPECT_TRUE(getStatus(path, &out).ok()) << "root still gets in";
}

}  // namespace
}  // namespace etcdagent::agent
