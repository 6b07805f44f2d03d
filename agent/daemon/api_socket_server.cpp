#include "agent/daemon/api_socket_server.hpp"

#include <fcntl.h>
#include <grpcpp/server_posix.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "agent/config/api_socket.hpp"
#include "common/file_util.hpp"

namespace etcdagent::agent {
namespace {

std::optional<ino_t> inodeOf(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return std::nullopt;
  return st.st_ino;
}

bool outOfDescriptors(const boost::system::error_code& ec) {
  return ec == boost::system::errc::too_many_files_open ||
         ec == boost::system::errc::too_many_files_open_in_system ||
         ec == boost::system::errc::no_buffer_space || ec == boost::system::errc::not_enough_memory;
}

}  // namespace

Result<PeerCredentials> peerCredentials(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return fail(Errc::kIo, "SO_PEERCRED: " + errnoText(errno));
  }
  PeerCredentials peer{cred.uid, cred.gid, cred.pid, {}};
  // SO_PEERGROUPS (Linux 4.13): the groups the peer had at connect(); ERANGE tells the size.
  std::vector<gid_t> groups(64);
  for (int attempt = 0; attempt < 2; ++attempt) {
    socklen_t bytes = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &bytes) == 0) {
      groups.resize(bytes / sizeof(gid_t));
      peer.groups = std::move(groups);
      return peer;
    }
    if (errno != ERANGE) break;
    groups.resize(bytes / sizeof(gid_t) + 1);
  }
  return peer;  // without groups: only the uid and the primary gid can admit it
}

ApiSocketServer::ApiSocketServer(boost::asio::io_context& io, std::string path,
                                 grpc::Service& service, CallerPolicy policy, Options options,
                                 Notice notice)
    : path_(std::move(path)),
      service_(service),
      policy_(std::move(policy)),
      options_(options),
      notice_(std::move(notice)),
      acceptor_(io),
      backoff_(io) {}

ApiSocketServer::~ApiSocketServer() {
  try {
    close(std::chrono::system_clock::now());
  } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): a destructor cannot report
  }
}

Result<void> ApiSocketServer::bindSocket() {
  const std::string where = "agent API socket " + path_ + " (agent.api_socket): ";
  if (auto dir = makeSocketDirectory(path_); !dir) {
    return fail(Errc::kFailedPrecondition, where + dir.error().message);
  }
  const SocketProbe probe = probeSocketPath(path_);
  switch (probe.state) {
    case SocketState::kAbsent: break;
    case SocketState::kStale:
      // Left by an agent that died: nobody listens, so it is safe to take over.
      if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
        return fail(Errc::kFailedPrecondition,
                    where + "cannot remove the stale socket: " + errnoText(errno));
      }
      break;
    case SocketState::kAnswers:
      return fail(Errc::kFailedPrecondition,
                  where +
                      "another etcd-agent (or another program) serves there: stop it, or "
                      "give this agent an agent.api_socket of its own");
    case SocketState::kNotSocket:
      return fail(Errc::kFailedPrecondition, where + "the path exists and is not a socket");
    case SocketState::kNoAccess:
    case SocketState::kError: return fail(Errc::kFailedPrecondition, where + probe.detail);
  }
  boost::system::error_code ec;
  boost::asio::local::stream_protocol::endpoint ep(path_);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (ec) {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    return fail(Errc::kFailedPrecondition, where + "cannot bind: " + ec.message());
  }
  // bind() applied the umask; the group must be able to connect, nobody else. The file's group is
  // already the agent's egid (bind() creates it so in a directory without setgid); no chown: the
  // unit's seccomp filter (~@privileged) kills the process on any chown call.
  if (::chmod(path_.c_str(), 0660) != 0) {
    const int err = errno;
    acceptor_.close(ec);
    ::unlink(path_.c_str());
    return fail(Errc::kFailedPrecondition, where + "cannot set mode 0660: " + errnoText(err));
  }
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0) socket_inode_ = st.st_ino;
  acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) return fail(Errc::kFailedPrecondition, where + "cannot listen: " + ec.message());
  return {};
}

Result<void> ApiSocketServer::start() {
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(options_.idle_timeout.count()));
  builder.RegisterService(&service_);
  server_ = builder.BuildAndStart();
  if (!server_) {
    return fail(Errc::kInternal, "agent API socket " + path_ + ": the gRPC server did not start");
  }
  if (auto bound = bindSocket(); !bound) {
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
    server_.reset();
    return bound;
  }
  stats_.enabled = true;
  accept();
  return {};
}

void ApiSocketServer::close(std::chrono::system_clock::time_point deadline) {
  boost::system::error_code ignored;
  backoff_.cancel();
  if (acceptor_.is_open()) {
    acceptor_.close(ignored);
    struct stat st {};
    // Only our own file: a successor may have replaced a socket we left.
    if (socket_inode_ != 0 && ::lstat(path_.c_str(), &st) == 0 && st.st_ino == socket_inode_) {
      ::unlink(path_.c_str());
    }
    socket_inode_ = 0;
  }
  if (server_) server_->Shutdown(deadline);
}

void ApiSocketServer::wait() {
  if (server_) server_->Wait();
}

void ApiSocketServer::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, Socket socket) {
    if (ec == boost::asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      acceptFailed(ec);
      return;
    }
    accepted(std::move(socket));
    accept();
  });
}

void ApiSocketServer::acceptFailed(const boost::system::error_code& ec) {
  if (!outOfDescriptors(ec)) {
    accept();
    return;
  }
  ++stats_.accept_backoffs;
  if (!backing_off_) {
    backing_off_ = true;
    notice_(LOG_WARNING, "agent API socket " + path_ + " cannot accept: " + ec.message() +
                             "; retrying every " + std::to_string(options_.accept_backoff.count()) +
                             " ms until descriptors free up");
  }
  backoff_.expires_after(options_.accept_backoff);
  backoff_.async_wait([this](const boost::system::error_code& wait_ec) {
    if (!wait_ec && acceptor_.is_open()) accept();
  });
}

void ApiSocketServer::accepted(Socket socket) {
  if (backing_off_) {
    backing_off_ = false;
    notice_(LOG_NOTICE, "agent API socket " + path_ + " accepts connections again");
  }
  const int fd = socket.native_handle();
  auto peer = peerCredentials(fd);
  if (!peer) {
    ++stats_.refused;
    notice_(LOG_WARNING, "agent API socket " + path_ + ": " + peer.error().message);
    return;  // the socket closes
  }
  if (auto admitted = admitPeer(*peer, policy_); !admitted) {
    ++stats_.refused;
    if (auto line =
            refusals_.refused(*peer, admitted.error().message, std::chrono::steady_clock::now())) {
      notice_(LOG_WARNING, *line);
    }
    return;
  }
  const auto inode = inodeOf(fd);
  {
    std::scoped_lock lock(mutex_);
    if (pruneLocked() >= options_.max_connections || !inode) {
      ++stats_.refused_at_bound;
      if (!at_bound_) {
        at_bound_ = true;
        notice_(LOG_WARNING, "agent API socket " + path_ + ": " +
                                 std::to_string(options_.max_connections) +
                                 " connections are open; closing new ones until some end");
      }
      return;
    }
    at_bound_ = false;
    connections_[fd] = {peer->uid, *inode};
  }
  // gRPC's endpoint expects a non-blocking fd; no child may inherit it.
  const int flags = ::fcntl(fd, F_GETFL);
  (void)::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  (void)::fcntl(fd, F_SETFD, FD_CLOEXEC);
  ++stats_.admitted;
  grpc::AddInsecureChannelFromFd(server_.get(), socket.release());
}

std::size_t ApiSocketServer::pruneLocked() const {
  for (auto it = connections_.begin(); it != connections_.end();) {
    auto inode = inodeOf(it->first);
    it = inode && *inode == it->second.inode ? std::next(it) : connections_.erase(it);
  }
  return connections_.size();
}

std::optional<uid_t> ApiSocketServer::callerUid(std::string_view peer) const {
  auto fd = parseFdPeer(peer);
  if (!fd) return std::nullopt;
  std::scoped_lock lock(mutex_);
  auto it = connections_.find(*fd);
  if (it == connections_.end()) return std::nullopt;
  auto inode = inodeOf(*fd);
  if (!inode || *inode != it->second.inode) return std::nullopt;
  return it->second.uid;
}

ApiSocketStats ApiSocketServer::stats() const {
  ApiSocketStats s = stats_;
  std::scoped_lock lock(mutex_);
  s.open = pruneLocked();
  return s;
}

}  // namespace etcdagent::agent
