#include "tests/faults/fault_fleet.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"

namespace etcdagent::testing {
namespace {

std::unique_ptr<etcd::Client> clientFor(const std::vector<std::string>& endpoints,
                                        std::chrono::milliseconds timeout) {
  etcd::ClientConfig cfg;
  cfg.endpoints = endpoints;
  cfg.command_timeout = timeout;
  cfg.dial_timeout = 1s;
  cfg.max_reconnect_backoff = 200ms;
  auto c = etcd::Client::create(cfg);
  if (!c) throw std::runtime_error(c.error().message);
  return std::move(*c);
}

// --- A reader of the flat JSON `etcd-fleet status -w json` prints --------------------------------

// The objects of the "members" array as key -> raw value (strings unquoted). The rows hold only
// strings, numbers and booleans.
std::vector<std::map<std::string, std::string>> statusObjects(const std::string& json) {
  std::vector<std::map<std::string, std::string>> out;
  auto at = json.find("\"members\":[");
  if (at == std::string::npos) return out;
  std::size_t i = at + 11;
  auto readString = [&](std::string& s) {
    for (++i; i < json.size() && json[i] != '"'; ++i) {
      if (json[i] == '\\' && i + 1 < json.size()) ++i;
      s += json[i];
    }
    ++i;
  };
  while (i < json.size() && json[i] != ']') {
    if (json[i] != '{') {
      ++i;
      continue;
    }
    ++i;
    std::map<std::string, std::string> row;
    while (i < json.size() && json[i] != '}') {
      if (json[i] != '"') {
        ++i;
        continue;
      }
      std::string key, value;
      readString(key);
      ++i;  // ':'
      if (i < json.size() && json[i] == '"') {
        readString(value);
      } else {
        while (i < json.size() && json[i] != ',' && json[i] != '}') value += json[i++];
      }
      row[key] = value;
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::string describe(const StatusRow& r) {
  return r.name + " state=" + r.state + " role=" + r.role +
         " reachable=" + (r.reachable ? "true" : "false") +
         " restarts=" + std::to_string(r.restarts);
}

}  // namespace

bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
}

// --- Writer ------------------------------------------------------------------------------------

Writer::Writer(std::vector<std::string> endpoints, Options options) : options_(std::move(options)) {
  thread_ = std::thread([this, endpoints = std::move(endpoints)] { run(endpoints); });
}

Writer::~Writer() {
  stop();
}

void Writer::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::string Writer::key(int seq) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "/w%06d", seq);
  return options_.prefix + buf;
}

std::string Writer::value(int seq) const {
  std::string v = "v" + std::to_string(seq) + "-";
  v.resize(std::max(options_.value_size, v.size()), static_cast<char>('a' + seq % 26));
  return v;
}

void Writer::run(const std::vector<std::string>& endpoints) {
  auto client = clientFor(endpoints, 2s);
  const auto deadline = std::chrono::steady_clock::now() + options_.max_duration;
  for (int seq = 0; seq < options_.max_writes && !stop_; ++seq) {
    if (std::chrono::steady_clock::now() >= deadline) break;
    etcdserverpb::PutRequest put;
    put.set_key(key(seq));
    put.set_value(value(seq));
    auto r = client->call<&etcdserverpb::KV::Stub::Put>(put);
    if (r) {
      std::lock_guard lock(mu_);
      acked_.push_back(seq);
    } else {
      ++failed_;
      std::lock_guard lock(mu_);
      last_error_ = r.error().message;
    }
    std::this_thread::sleep_for(options_.pause);
  }
}

std::size_t Writer::acked() const {
  std::lock_guard lock(mu_);
  return acked_.size();
}

std::string Writer::lastError() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

std::vector<int> Writer::ackedSequence() const {
  std::lock_guard lock(mu_);
  return acked_;
}

bool Writer::waitForMoreAcks(std::size_t more, std::chrono::milliseconds timeout) const {
  const std::size_t target = acked() + more;
  return waitUntil([&] { return acked() >= target; }, timeout);
}

// --- FaultFleet --------------------------------------------------------------------------------

FaultFleet::FaultFleet(int first_host, int agents, std::size_t members)
    : fleet_({.size = agents, .first_host = first_host, .token = "faults"}) {
  for (std::size_t i = 0; i < members; ++i) members_.push_back(i);
}

FaultFleet::~FaultFleet() {
  const char* dump = std::getenv("FAULTS_DUMP_LOGS");
  if (!::testing::Test::HasFailure() && (dump == nullptr || std::string(dump) != "1")) return;
  for (std::size_t i = 0; i < fleet_.size(); ++i) {
    std::ifstream log(agent(i).logPath());
    std::vector<std::string> lines;
    for (std::string line; std::getline(log, line);) {
      const bool agent_line = !line.starts_with("etcd[");
      const bool etcd_trouble =
          line.find("\"level\":\"warn\"") == std::string::npos &&
          (line.find("\"level\":\"error\"") != std::string::npos ||
           line.find("panic") != std::string::npos || line.find("fatal") != std::string::npos);
      if (agent_line || etcd_trouble) lines.push_back(line.substr(0, 400));
    }
    std::fprintf(stderr, "--- %s (%zu lines of interest)\n", agent(i).logPath().c_str(),
                 lines.size());
    for (std::size_t k = lines.size() > 40 ? lines.size() - 40 : 0; k < lines.size(); ++k)
      std::fprintf(stderr, "%s\n", lines[k].c_str());
  }
}

bool FaultFleet::bootstrap(const std::function<void()>& before_start) {
  if (before_start) before_start();
  fleet_.startAll();
  std::string hosts;
  for (auto i : members_) hosts += (hosts.empty() ? "" : ",") + agent(i).client().address();
  auto r = fleet_.fleet({"bootstrap", "--hosts", hosts});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  if (r.exit_code != 0) return false;
  auto healthy = waitHealthy(60s);
  EXPECT_TRUE(healthy);
  return static_cast<bool>(healthy);
}

std::vector<std::string> FaultFleet::endpoints() {
  std::vector<std::string> out;
  for (auto i : members_) out.push_back(agent(i).clientEndpoint());
  return out;
}

pid_t FaultFleet::etcdPid(std::size_t i) {
  auto s = agent(i).client().status();
  return s ? s->etcd_pid() : 0;
}

std::optional<std::size_t> FaultFleet::leader() {
  for (auto i : members_) {
    auto s = agent(i).client().status();
    if (s && s->healthy() && s->is_leader()) return i;
  }
  return std::nullopt;
}

std::size_t FaultFleet::follower() {
  auto l = leader();
  return l && *l == members_.back() ? members_.front() : members_.back();
}

std::optional<StatusRow> FaultFleet::statusOf(std::size_t i) {
  auto rows = status();
  if (!rows) return std::nullopt;
  for (auto& r : *rows) {
    if (r.name == agent(i).options().name) return r;
  }
  return std::nullopt;
}

std::optional<std::vector<StatusRow>> FaultFleet::status(std::string* raw) {
  auto r = fleet_.fleet({"status", "-w", "json"}, 30s);
  if (raw != nullptr) *raw = "exit " + std::to_string(r.exit_code) + ": " + r.out + r.err;
  if (r.exit_code != 0) return std::nullopt;
  std::vector<StatusRow> rows;
  for (auto& o : statusObjects(r.out)) {
    StatusRow row{.name = o["name"], .role = o["role"], .state = o["state"]};
    row.reachable = o["reachable"] == "true";
    row.restarts = o["restarts"].empty() ? 0 : static_cast<unsigned>(std::stoul(o["restarts"]));
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return std::nullopt;
  return rows;
}

::testing::AssertionResult FaultFleet::waitForStatusOf(
    std::size_t i, const std::function<bool(const StatusRow&)>& pred, const std::string& what,
    std::chrono::milliseconds timeout) {
  const std::string name = agent(i).options().name;
  std::string last;
  const bool ok = waitUntil(
      [&] {
        auto rows = status(&last);
        if (!rows) return false;
        for (const auto& r : *rows) {
          if (r.name != name) continue;
          last = describe(r);
          return pred(r);
        }
        last = name + " has no row in: " + last;
        return false;
      },
      timeout);
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "etcd-fleet status did not show " << name << " " << what
                                       << " within " << timeout.count() << " ms; last: " << last;
}

::testing::AssertionResult FaultFleet::waitHealthy(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now());
  };
  for (auto i : members_) {
    auto s = agent(i).waitFor(
        [](const v1::AgentStatus& st) {
          return st.phase() == v1::MEMBER_PHASE_RUNNING && st.healthy();
        },
        std::max(left(), std::chrono::milliseconds(1)));
    if (s.phase() != v1::MEMBER_PHASE_RUNNING || !s.healthy()) {
      return ::testing::AssertionFailure()
             << agent(i).options().name << " not healthy within " << timeout.count()
             << " ms: " << s.ShortDebugString() << " (log: " << agent(i).logPath() << ")";
    }
  }
  std::string last;
  const bool shown = waitUntil(
      [&] {
        auto rows = status(&last);
        if (!rows || rows->size() != members_.size()) return false;
        int leaders = 0;
        for (const auto& r : *rows) {
          if (r.state != "running" || !r.reachable) return false;
          leaders += r.role == "leader" ? 1 : 0;
        }
        return leaders == 1;
      },
      std::max(left(), std::chrono::milliseconds(1)));
  if (shown) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "etcd-fleet status did not show every member running with one leader: " << last;
}

// Every key under `prefix` on `endpoint` alone, 500 at a time (a response stays far below gRPC's
// 4 MiB message limit with the 8 KiB values of the disk-full case). A member that just recovered
// may still be connecting to its peers: each page is retried for up to 30 s.
static Result<std::map<std::string, std::string>> readAll(const std::string& endpoint,
                                                          const std::string& prefix) {
  auto client = clientFor({endpoint}, 10s);
  std::string end = prefix;
  end.back() = static_cast<char>(end.back() + 1);
  std::map<std::string, std::string> kvs;
  std::string from = prefix;
  for (int page = 0; page < 10000; ++page) {
    etcdserverpb::RangeRequest req;
    req.set_key(from);
    req.set_range_end(end);
    req.set_limit(500);
    Result<etcdserverpb::RangeResponse> r = fail(Errc::kUnavailable, "not asked yet");
    waitUntil(
        [&] {
          r = client->call<&etcdserverpb::KV::Stub::Range>(req, {etcd::Retry::kRepeatable});
          return r.has_value();
        },
        30s);
    if (!r) return fail(r.error());
    for (const auto& kv : r->kvs()) kvs[kv.key()] = kv.value();
    if (!r->more() || r->kvs().empty()) return kvs;
    from = r->kvs(r->kvs_size() - 1).key() + std::string(1, '\0');
  }
  return fail(Errc::kInternal, endpoint + ": more than 10000 pages under " + prefix);
}

::testing::AssertionResult FaultFleet::expectAcked(const Writer& writer) {
  const auto acked = writer.ackedSequence();
  for (auto m : members_) {
    auto kvs = readAll(agent(m).clientEndpoint(), writer.options().prefix + "/");
    if (!kvs) {
      return ::testing::AssertionFailure()
             << agent(m).options().name << ": " << kvs.error().message;
    }
    for (int seq : acked) {
      auto it = kvs->find(writer.key(seq));
      if (it == kvs->end()) {
        return ::testing::AssertionFailure()
               << agent(m).options().name << " lost the acknowledged write " << writer.key(seq)
               << " (" << acked.size() << " acknowledged, " << kvs->size() << " keys read)";
      }
      if (it->second != writer.value(seq)) {
        return ::testing::AssertionFailure()
               << agent(m).options().name << ": " << it->first << " = " << it->second.substr(0, 40)
               << "..., wrote " << writer.value(seq).substr(0, 40);
      }
    }
  }
  return ::testing::AssertionSuccess() << acked.size() << " acknowledged writes on every member";
}

// --- Processes ---------------------------------------------------------------------------------

bool exited(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] == 'Z' ||
         line[paren + 2] == 'X';
}

int openDescriptors(pid_t pid) {
  std::error_code ec;
  int n = 0;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec), end;
       !ec && it != end; it.increment(ec)) {
    ++n;
  }
  return ec ? -1 : n;
}

bool setNofile(pid_t pid, rlim_t limit, rlim_t* old_soft, rlim_t* old_hard) {
  rlimit old{};
  if (::prlimit(pid, RLIMIT_NOFILE, nullptr, &old) != 0) return false;
  // The soft limit only: raising a hard limit again needs CAP_SYS_RESOURCE, which a container's
  // root may not have.
  rlimit next{limit, old.rlim_max};
  if (::prlimit(pid, RLIMIT_NOFILE, &next, nullptr) != 0) return false;
  *old_soft = old.rlim_cur;
  *old_hard = old.rlim_max;
  return true;
}

bool restoreNofile(pid_t pid, rlim_t soft, rlim_t hard) {
  rlimit lim{soft, hard};
  return ::prlimit(pid, RLIMIT_NOFILE, &lim, nullptr) == 0;
}

// --- SmallFilesystem ---------------------------------------------------------------------------

SmallFilesystem::SmallFilesystem(std::string dir, std::size_t bytes) : dir_(std::move(dir)) {
  // A mount namespace of our own (once per process), private so nothing propagates back.
  static const std::string ns_error = [] {
    if (::unshare(CLONE_NEWNS) != 0) return std::string("unshare(CLONE_NEWNS): ") + strerror(errno);
    if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      return std::string("mount --make-rprivate /: ") + strerror(errno);
    return std::string();
  }();
  if (!ns_error.empty()) {
    error_ = ns_error;
    return;
  }
  std::filesystem::create_directories(dir_);
  const std::string opts = "size=" + std::to_string(bytes) + ",mode=0755";
  if (::mount("faults-tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0)
    error_ = "mount -t tmpfs -o " + opts + " " + dir_ + ": " + strerror(errno);
}

SmallFilesystem::~SmallFilesystem() {
  if (mounted()) ::umount2(dir_.c_str(), MNT_DETACH);
}

bool SmallFilesystem::fill() {
  const std::string path = dir_ + "/filler";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const std::string block(4096, 'x');
  bool full = false;
  // At most the filesystem's size in 4 KiB writes (tmpfs sizes here are ~100 MB).
  for (int i = 0; i < (1 << 20); ++i) {
    if (::write(fd, block.data(), block.size()) < 0) {
      full = errno == ENOSPC;
      break;
    }
  }
  ::close(fd);
  return full;
}

void SmallFilesystem::removeFiller() {
  std::error_code ec;
  std::filesystem::remove(dir_ + "/filler", ec);
}

std::uint64_t SmallFilesystem::freeBytes() const {
  struct statvfs st {};
  if (::statvfs(dir_.c_str(), &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
}

}  // namespace etcdagent::testing
