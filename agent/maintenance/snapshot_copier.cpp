#include "agent/maintenance/snapshot_copier.hpp"

#include <grpcpp/client_context.h>
#include <syslog.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "agent/enroll/agent_channel.hpp"
#include "common/clock.hpp"
#include "common/file_util.hpp"
#include "etcdagent/v1/agent.grpc.pb.h"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

constexpr auto kFirstRetry = 10s;
constexpr auto kLongestRetry = 15min;
// A backstop for one copy: a peer that stops reading is noticed by gRPC's keepalive sooner.
constexpr auto kPushDeadline = 30min;
constexpr std::size_t kChunk = 1U << 20;  // the receiver takes at most 1 MiB per message

}  // namespace

// ---- the blocking side -------------------------------------------------------------------------

Result<void> GrpcCopyTransport::announce(const SnapshotTarget& member) {
  auto client = clientFor(member);
  if (!client) return fail(client.error());
  return registerAgent(**client, member_, address_);
}

Result<std::vector<PeerAgent>> GrpcCopyTransport::peers(const SnapshotTarget& member) {
  auto client = clientFor(member);
  if (!client) return fail(client.error());
  if (auto r = registerAgent(**client, member_, address_); !r) return fail(r.error());
  return peerAgents(**client, member_);
}

Result<v1::SnapshotRecord> GrpcCopyTransport::push(const PeerAgent& peer, const std::string& path,
                                                   const v1::SnapshotRecord& record,
                                                   const std::stop_token& stop) {
  auto channel = agentChannel(pki_dir_, peer.address, Plaintext::kAllow);
  if (!channel) return fail(channel.error());
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rbe"), &std::fclose);
  if (!file) return fail(Errc::kIo, "cannot open " + path + ": " + errnoText(errno));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kPushDeadline);
  std::stop_callback cancel(stop, [&ctx] { ctx.TryCancel(); });
  v1::Agent::Stub stub(*channel);
  v1::StoreSnapshotCopyResponse response;
  auto writer = stub.StoreSnapshotCopy(&ctx, &response);
  v1::StoreSnapshotCopyRequest msg;
  *msg.mutable_record() = record;
  msg.mutable_record()->clear_uploaded_at();
  std::string buffer(kChunk, '\0');
  bool sent_all = true;
  while (true) {
    const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), file.get());
    if (n == 0 && !msg.has_record()) break;
    msg.set_chunk(buffer.data(), n);
    if (!writer->Write(msg)) {
      sent_all = false;  // the receiver ended the call: Finish() says why
      break;
    }
    msg.clear_record();
    if (n < buffer.size()) break;
  }
  if (std::ferror(file.get()) != 0) {
    ctx.TryCancel();
    return fail(Errc::kIo, "cannot read " + path);
  }
  if (sent_all) writer->WritesDone();
  const grpc::Status status = writer->Finish();
  // The peer keeps this copy already (a push after a restart): nothing more was sent.
  if (status.error_code() == grpc::StatusCode::ALREADY_EXISTS) return record;
  if (!status.ok()) {
    return fail(status.error_code() == grpc::StatusCode::UNAVAILABLE ? Errc::kUnavailable
                                                                     : Errc::kFailedPrecondition,
                status.error_message());
  }
  return response.record();
}

// ---- on the loop ---------------------------------------------------------------------------

SnapshotCopier::SnapshotCopier(Seams seams)
    : seams_(std::move(seams)), retry_timer_(seams_.clock.timer()), worker_(seams_.io) {}

void SnapshotCopier::announce() {
  if (announced_ || running_) return;
  auto member = seams_.member();
  if (!member) return;
  announced_ = true;
  running_ = true;
  worker_.run(
      [this, target = *member](const std::stop_token&) {
        return seams_.transport.announce(target);
      },
      [this](const Result<void>& r) {
        running_ = false;
        if (!r) {
          // Said once per start: each delivery registers the agent again anyway.
          note(LOG_WARNING, "cannot register this agent's address in etcd (" + r.error().message +
                                "): the other agents send it no snapshot copies yet");
        }
        if (waiting_ && report_.next_attempt_at() == 0) {
          Item next = std::move(*waiting_);
          waiting_.reset();
          start(std::move(next));
        }
      });
}

void SnapshotCopier::offer(const std::string& dir, const v1::SnapshotRecord& record) {
  if (!record.verified()) return;
  retry_timer_->cancel();
  report_.set_next_attempt_at(0);
  failures_in_row_ = running_ ? failures_in_row_ : 0;
  Item item{dir, record, {}};
  report_.set_pending(record.name());
  if (running_) {
    waiting_ = std::move(item);  // after the round that runs
    changed();
    return;
  }
  waiting_.reset();
  start(std::move(item));
}

void SnapshotCopier::start(Item item) {
  auto member = seams_.member();
  if (!member) {
    finished(std::move(item), Round{{}, "no copies sent: " + member.error()});
    return;
  }
  running_ = true;
  report_.set_pending(item.record.name());
  changed();
  worker_.run(
      [this, target = *member, item](const std::stop_token& stop) {
        Round round;
        auto peers = seams_.transport.peers(target);
        if (!peers) {
          round.error = "cannot find the other agents through etcd: " + peers.error().message;
          return round;
        }
        const std::string path = item.dir + "/" + item.record.name();
        for (const auto& peer : *peers) {
          if (!item.only.empty() && !item.only.contains(peer.member)) continue;
          if (stop.stop_requested()) break;
          auto pushed = seams_.transport.push(peer, path, item.record, stop);
          round.deliveries.push_back({peer, pushed ? "" : pushed.error().message});
        }
        return round;
      },
      [this, item](const Round& round) { finished(item, round); });
}

void SnapshotCopier::finished(Item item, const Round& round) {
  running_ = false;
  const std::string& name = item.record.name();
  std::set<std::string> failed;
  std::string errors = round.error;
  std::vector<std::string> delivered;
  for (const auto& d : round.deliveries) {
    const std::string who = d.peer.member + " (" + d.peer.address + ")";
    if (d.error.empty()) {
      report_.set_successes(report_.successes() + 1);
      delivered.push_back(d.peer.member + " " + d.peer.address);
      note(LOG_INFO, "snapshot " + name + " copied to the agent of member " + who);
    } else {
      report_.set_failures(report_.failures() + 1);
      failed.insert(d.peer.member);
      errors += (errors.empty() ? "" : "; ") + who + ": " + d.error;
    }
  }
  const auto now = seams_.wall();
  if (round.error.empty() && round.deliveries.empty() && item.only.empty()) {
    if (!told_alone_) {
      note(LOG_NOTICE, "no other agent of the cluster has registered in etcd: snapshot " + name +
                           " has no copy on another host");
      told_alone_ = true;
    }
  } else if (!round.deliveries.empty()) {
    told_alone_ = false;
  }
  if (errors.empty()) {
    failures_in_row_ = 0;
    if (!round.deliveries.empty()) {
      report_.set_last_copied(name);
      report_.set_last_success_at(unixSeconds(now));
      report_.clear_peers();
      for (const auto& p : delivered) report_.add_peers(p);
    }
    report_.set_last_error("");
  } else {
    ++failures_in_row_;
    report_.set_last_error(errors);
    if (!round.error.empty()) report_.set_failures(report_.failures() + 1);
  }
  if (waiting_) {  // a newer snapshot came meanwhile: it goes to every peer now
    Item next = std::move(*waiting_);
    waiting_.reset();
    start(std::move(next));
    return;
  }
  if (errors.empty()) {
    report_.set_pending("");
    changed();
    return;
  }
  // Again later, to the peers that failed (all of them when there was no round).
  item.only = round.error.empty() ? failed : item.only;
  auto delay = std::chrono::duration_cast<std::chrono::seconds>(kFirstRetry);
  for (unsigned i = 1; i < failures_in_row_ && delay < kLongestRetry; ++i) delay *= 2;
  delay = std::min<std::chrono::seconds>(delay, kLongestRetry);
  report_.set_next_attempt_at(unixSeconds(now + delay));
  note(LOG_WARNING, "copies of snapshot " + name + " failed (" + std::to_string(failures_in_row_) +
                        (failures_in_row_ == 1 ? " failure" : " failures in a row") + "): " +
                        errors + "; next attempt in " + std::to_string(delay.count()) + " s");
  waiting_ = std::move(item);
  retry_timer_->arm(std::chrono::duration_cast<std::chrono::milliseconds>(delay), [this] {
    report_.set_next_attempt_at(0);
    if (running_ || !waiting_) return;  // a round runs: it starts what waits when it ends
    Item next = std::move(*waiting_);
    waiting_.reset();
    start(std::move(next));
  });
  changed();
}

void SnapshotCopier::note(int priority, const std::string& text) const {
  if (on_note_) on_note_(priority, text);
}

void SnapshotCopier::changed() const {
  if (on_change_) on_change_();
}

}  // namespace etcdagent::agent
