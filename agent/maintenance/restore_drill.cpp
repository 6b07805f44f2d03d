#include "agent/maintenance/restore_drill.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <deque>
#include <filesystem>

#include "agent/restore/restore.hpp"
#include "common/file_util.hpp"
#include "common/zstd_stream.hpp"
#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

constexpr auto kPollEvery = 200ms;
constexpr std::int64_t kSampleKeys = 10;
constexpr std::size_t kKeptLines = 20;  // of the running child's output, for the failure

// A port the kernel says is free on 127.0.0.1 now (etcd binds it a moment later).
Result<int> freeLoopbackPort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fail(Errc::kIo, "socket: " + errnoText(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return fail(Errc::kIo, "cannot find a free port on 127.0.0.1: " + errnoText(errno));
  }
  return static_cast<int>(ntohs(addr.sin_port));
}

Result<DrillSite> prepareSite(const DrillSettings& s) {
  if (auto r = createPrivateDirectories(s.work_root); !r) return fail(r.error());
  std::string tmpl = s.work_root + "/" + s.member + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return fail(Errc::kIo, "cannot create a directory in " + s.work_root + ": " + errnoText(errno));
  }
  DrillSite site{.dir = tmpl};
  auto client = freeLoopbackPort();
  auto peer = freeLoopbackPort();
  if (!client) return fail(client.error());
  if (!peer) return fail(peer.error());
  site.client_port = *client;
  site.peer_port = *peer;
  if (site.peer_port == site.client_port) return fail(Errc::kIo, "no two free ports on 127.0.0.1");
  return site;
}

std::int64_t nowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct RestoreDrill::Active {
  DrillSite site;
  v1::SnapshotRecord record;
  v1::DrillResult result;
  std::function<void(v1::DrillResult)> done;
  std::chrono::steady_clock::time_point started;
  std::unique_ptr<Process> process;  // etcdctl, then etcd
  bool reading = false;              // a read is in flight on the worker
  std::deque<std::string> output;    // the last lines of the running child
  std::optional<std::string> error;  // set once the drill is decided; then etcd is stopped
  bool decided = false;
};

std::vector<std::string> drillRestoreCommand(const DrillSettings& s, const DrillSite& site,
                                             const std::string& snapshot) {
  return {s.etcdctl,
          "snapshot",
          "restore",
          snapshot,
          "--name",
          "drill",
          "--initial-cluster",
          "drill=" + site.peerUrl(),
          "--initial-cluster-token",
          "etcd-agent-drill-" + std::to_string(site.peer_port),
          "--initial-advertise-peer-urls",
          site.peerUrl(),
          "--data-dir",
          site.dataDir()};
}

std::vector<std::string> drillEtcdCommand(const DrillSettings& s, const DrillSite& site) {
  return {s.etcd,
          "--name=drill",
          "--data-dir=" + site.dataDir(),
          "--listen-client-urls=" + site.clientUrl(),
          "--advertise-client-urls=" + site.clientUrl(),
          "--listen-peer-urls=" + site.peerUrl(),
          "--initial-advertise-peer-urls=" + site.peerUrl(),
          "--initial-cluster=drill=" + site.peerUrl(),
          "--logger=zap",
          "--log-outputs=stderr"};
}

Result<void> judgeDrill(const v1::SnapshotRecord& record, const DrillReading& reading) {
  // A snapshot of an empty key space holds no revision (0 in its bbolt file); etcd serves revision
  // 1 from it, as from any new member.
  const std::int64_t expected = std::max<std::int64_t>(record.revision(), 1);
  if (reading.revision != expected) {
    return fail(Errc::kFailedPrecondition,
                "the restored member is at revision " + std::to_string(reading.revision) +
                    ", the snapshot holds revision " + std::to_string(expected));
  }
  return {};
}

Result<DrillReading> readDrillMember(const std::string& client_url) {
  etcd::ClientConfig cfg;
  cfg.endpoints = {client_url};
  cfg.dial_timeout = 1s;
  cfg.command_timeout = 2s;
  auto client = etcd::Client::create(cfg);
  if (!client) return fail(client.error());
  // Linearizable: the restored member must have elected itself and serve reads through raft.
  etcdserverpb::RangeRequest count;
  count.set_key(std::string(1, '\0'));
  count.set_range_end(std::string(1, '\0'));
  count.set_count_only(true);
  auto counted = (*client)->call<&etcdserverpb::KV::Stub::Range>(count);
  if (!counted) return fail(counted.error());
  etcdserverpb::RangeRequest sample;
  sample.set_key(std::string(1, '\0'));
  sample.set_range_end(std::string(1, '\0'));
  sample.set_limit(kSampleKeys);
  auto read = (*client)->call<&etcdserverpb::KV::Stub::Range>(sample);
  if (!read) return fail(read.error());
  if (counted->count() > 0 && read->kvs_size() == 0) {
    return fail(Errc::kFailedPrecondition, "the restored member counts " +
                                               std::to_string(counted->count()) +
                                               " keys but returned none when read");
  }
  return DrillReading{counted->header().revision(), counted->count()};
}

RestoreDrill::RestoreDrill(DrillSettings settings, Seams seams)
    : settings_(std::move(settings)),
      seams_(std::move(seams)),
      deadline_(seams_.clock.timer()),
      poll_timer_(seams_.clock.timer()),
      worker_(seams_.io) {}

RestoreDrill::~RestoreDrill() {
  if (active_ && active_->process) active_->process->signal(SIGKILL);
  if (active_) cleanUp();
}

void RestoreDrill::drill(const std::string& snapshot, const v1::SnapshotRecord& record,
                         std::function<void(v1::DrillResult)> done) {
  if (active_) return;
  ++generation_;
  active_ = std::make_unique<Active>();
  active_->record = record;
  active_->done = std::move(done);
  active_->started = seams_.clock.now();
  active_->result.set_snapshot(record.name());
  active_->result.set_snapshot_taken_at(record.taken_at());
  active_->result.set_at(nowSeconds());
  auto site = prepareSite(settings_);
  if (!site) {
    finish(site.error().message);
    return;
  }
  active_->site = *site;
  deadline_->arm(kDrillTimeout, [this] {
    finish("the drill did not finish within " + std::to_string(kDrillTimeout.count() / 1000) +
           " s");
  });
  if (!zstdName(snapshot)) {
    restore(snapshot);
    return;
  }
  // A compressed snapshot is restored as a disaster recovery would: decompressed first (zstd -d),
  // here into the drill's directory, off the loop.
  const std::string plain = active_->site.dir + "/snapshot.db";
  worker_.run([snapshot, plain](
                  const std::stop_token& stop) { return decompressFileTo(snapshot, plain, stop); },
              [this, plain, generation = generation_](Result<void> decompressed) {
                if (!active_ || generation != generation_) return;  // a drill that ended
                if (!decompressed) {
                  finish(decompressed.error().message);
                  return;
                }
                restore(plain);
              });
}

void RestoreDrill::restore(const std::string& snapshot) {
  auto child = seams_.launcher.spawn(
      {.argv = drillRestoreCommand(settings_, active_->site, snapshot)},
      [this](const std::string& line) { keepLine(line); },
      [this](ExitStatus status) { restored(status); });
  if (!child) {
    finish("cannot run " + settings_.etcdctl + ": " + child.error().message);
    return;
  }
  active_->process = std::move(*child);
}

void RestoreDrill::restored(ExitStatus status) {
  active_->process.reset();
  if (active_->decided) {
    finish(active_->error);
    return;
  }
  if (status.code != 0) {
    const std::string why = restoreFailureLine("", active_->output);
    finish("etcdctl snapshot restore " + status.describe() + (why.empty() ? "" : ": " + why));
    return;
  }
  active_->output.clear();
  auto child = seams_.launcher.spawn(
      {.argv = drillEtcdCommand(settings_, active_->site)},
      [this](const std::string& line) { keepLine(line); },
      [this](ExitStatus exit) {
        active_->process.reset();
        if (!active_->decided) {
          active_->decided = true;
          active_->error = "the restored etcd exited before it answered (" + exit.describe() +
                           (active_->output.empty() ? ")" : "): " + active_->output.back());
        }
        finish(active_->error);
      });
  if (!child) {
    finish("cannot run " + settings_.etcd + ": " + child.error().message);
    return;
  }
  active_->process = std::move(*child);
  poll();
}

void RestoreDrill::keepLine(const std::string& line) {
  active_->output.push_back(line);
  if (active_->output.size() > kKeptLines) active_->output.pop_front();
}

void RestoreDrill::poll() {
  if (!active_ || active_->decided || active_->reading) return;
  active_->reading = true;
  worker_.run([reader = seams_.reader,
               url = active_->site.clientUrl()](const std::stop_token&) { return reader(url); },
              [this, generation = generation_](Result<DrillReading> reading) {
                if (!active_ || generation != generation_) return;  // a drill that ended
                active_->reading = false;
                if (active_->decided) return;
                if (!reading) {
                  // Not answering yet: again shortly, until the deadline.
                  poll_timer_->arm(kPollEvery, [this] { poll(); });
                  return;
                }
                active_->result.set_revision(reading->revision);
                active_->result.set_keys(reading->keys);
                auto verdict = judgeDrill(active_->record, *reading);
                active_->decided = true;
                if (!verdict) active_->error = verdict.error().message;
                // Stop the throwaway etcd; its exit finishes the drill.
                if (active_->process) active_->process->signal(SIGTERM);
              });
}

void RestoreDrill::finish(std::optional<std::string> error) {
  if (!active_) return;
  if (active_->process) {
    // Decided while a child still runs (the deadline): stop it; its exit comes back here.
    if (!active_->decided) {
      active_->decided = true;
      active_->error = error;
    }
    active_->process->signal(SIGKILL);
    return;
  }
  deadline_->cancel();
  poll_timer_->cancel();
  cleanUp();
  auto active = std::move(active_);
  active->result.set_ok(!error.has_value());
  active->result.set_error(error.value_or(""));
  active->result.set_duration_ms(static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(seams_.clock.now() - active->started)
          .count()));
  active->done(std::move(active->result));
}

void RestoreDrill::cleanUp() {
  if (active_->site.dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(active_->site.dir, ec);
}

}  // namespace etcdagent::agent
