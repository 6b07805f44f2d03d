#include "agent/service/agent_service.hpp"

#include <boost/asio/post.hpp>
#include <future>
#include <utility>

#include "agent/bootstrap/preflight.hpp"
#include "agent/restore/restore.hpp"
#include "agent/service/member_status.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

// Runs `work(done)` on the event loop; `work` calls done(status, value) when finished, maybe later.
// The value travels through shared state, so a call that timed out never writes into a response
// gRPC has already freed.
template <class T>
grpc::Status onLoop(boost::asio::io_context& io, std::chrono::seconds timeout,
                    std::function<void(std::function<void(grpc::Status, T)>)> work, T* out) {
  using Outcome = std::pair<grpc::Status, T>;
  auto promise = std::make_shared<std::promise<Outcome>>();
  auto future = promise->get_future();
  boost::asio::post(io, [promise, work = std::move(work)] {
    auto once = std::make_shared<bool>(false);
    work([promise, once](grpc::Status s, T value) {
      if (std::exchange(*once, true)) return;
      promise->set_value(Outcome{std::move(s), std::move(value)});
    });
  });
  if (future.wait_for(timeout) != std::future_status::ready) {
    return {grpc::StatusCode::DEADLINE_EXCEEDED, "the agent did not finish within " +
                                                     std::to_string(timeout.count()) +
                                                     "s; see its journal"};
  }
  auto outcome = future.get();
  *out = std::move(outcome.second);
  return outcome.first;
}

using Done = std::function<void(grpc::Status, v1::AgentStatus)>;

}  // namespace

grpc::Status toStatus(const Error& e) {
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  switch (e.code) {
    case Errc::kInvalidArgument: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case Errc::kFailedPrecondition: code = grpc::StatusCode::FAILED_PRECONDITION; break;
    case Errc::kNotFound: code = grpc::StatusCode::NOT_FOUND; break;
    case Errc::kAlreadyExists: code = grpc::StatusCode::ALREADY_EXISTS; break;
    case Errc::kPermissionDenied: code = grpc::StatusCode::PERMISSION_DENIED; break;
    case Errc::kUnavailable: code = grpc::StatusCode::UNAVAILABLE; break;
    case Errc::kDeadlineExceeded: code = grpc::StatusCode::DEADLINE_EXCEEDED; break;
    default: code = grpc::StatusCode::INTERNAL;
  }
  return {code, e.message};
}

std::string AgentService::autostart() const {
  if (units_.unit().empty()) return "unknown";
  auto state = units_.unitFileState();
  return state ? *state : "unknown";
}

grpc::Status AgentService::GetStatus(grpc::ServerContext*, const v1::GetStatusRequest*,
                                     v1::AgentStatus* out) {
  auto s = onLoop<v1::AgentStatus>(
      io_, 10s, [this](Done done) { done(grpc::Status::OK, agentStatus(supervisor_.view())); },
      out);
  if (s.ok()) {
    out->set_unit(units_.unit());
    out->set_autostart(autostart());
  }
  return s;
}

grpc::Status AgentService::Preflight(grpc::ServerContext*, const v1::PreflightRequest* req,
                                     v1::PreflightResponse* out) {
  // What the checks need is read on the loop; the (blocking) checks then run on this thread.
  v1::AgentStatus status;
  auto s = onLoop<v1::AgentStatus>(
      io_, 10s, [this](Done done) { done(grpc::Status::OK, agentStatus(supervisor_.view())); },
      &status);
  if (!s.ok()) return s;
  std::optional<v1::MemberState> state;
  using StateDone = std::function<void(grpc::Status, std::optional<v1::MemberState>)>;
  s = onLoop<std::optional<v1::MemberState>>(
      io_, 10s, [this](StateDone done) { done(grpc::Status::OK, supervisor_.state()); }, &state);
  if (!s.ok()) return s;
  const auto& config = supervisor_.config();
  const std::string token =
      req->cluster_token().empty() ? config.cluster.token : req->cluster_token();
  std::vector<int> avoid(req->avoid_ports().begin(), req->avoid_ports().end());
  *out = preflight(
      {config, state ? &*state : nullptr, status.etcd_pid() != 0, token, std::move(avoid)});
  return grpc::Status::OK;
}

grpc::Status AgentService::ApplyPlan(grpc::ServerContext*, const v1::ApplyPlanRequest* req,
                                     v1::ApplyPlanResponse* out) {
  return onLoop<v1::AgentStatus>(
      io_, 30s,
      [this, plan = req->plan()](Done done) {
        auto r = supervisor_.applyPlan(plan);
        done(r ? grpc::Status::OK : toStatus(r.error()), agentStatus(supervisor_.view()));
      },
      out->mutable_status());
}

grpc::Status AgentService::StopMember(grpc::ServerContext*, const v1::StopMemberRequest*,
                                      v1::StopMemberResponse* out) {
  return onLoop<v1::AgentStatus>(
      io_, 60s,
      [this](Done done) {
        supervisor_.stop([this, done] { done(grpc::Status::OK, agentStatus(supervisor_.view())); });
      },
      out->mutable_status());
}

grpc::Status AgentService::StartMember(grpc::ServerContext*, const v1::StartMemberRequest*,
                                       v1::StartMemberResponse* out) {
  return onLoop<v1::AgentStatus>(
      io_, 30s,
      [this](Done done) {
        auto r = supervisor_.start();
        done(r ? grpc::Status::OK : toStatus(r.error()), agentStatus(supervisor_.view()));
      },
      out->mutable_status());
}

grpc::Status AgentService::RemoveMember(grpc::ServerContext*, const v1::RemoveMemberRequest* req,
                                        v1::RemoveMemberResponse* out) {
  if (!req->confirm_removed_from_cluster()) {
    return {
        grpc::StatusCode::FAILED_PRECONDITION,
        "RemoveMember wipes the member's data: remove it from the cluster first (etcd-fleet member "
        "remove does both) and confirm"};
  }
  return onLoop<v1::AgentStatus>(
      io_, 60s,
      [this](Done done) {
        supervisor_.remove([this, done](Result<void> r) {
          done(r ? grpc::Status::OK : toStatus(r.error()), agentStatus(supervisor_.view()));
        });
      },
      out->mutable_status());
}

grpc::Status AgentService::SetAutostart(grpc::ServerContext*, const v1::SetAutostartRequest* req,
                                        v1::SetAutostartResponse* out) {
  if (auto r = units_.setEnabled(req->enabled()); !r) return toStatus(r.error());
  out->set_autostart(autostart());
  return grpc::Status::OK;
}

grpc::Status AgentService::NewDiscoveryToken(grpc::ServerContext*,
                                             const v1::NewDiscoveryTokenRequest* req,
                                             v1::NewDiscoveryTokenResponse* out) {
  if (!new_discovery_token_) {
    return {grpc::StatusCode::UNAVAILABLE,
            "this agent does not coordinate: its HTTP endpoint (agent.http_listen) is not "
            "listening; see its journal"};
  }
  using TokenDone = std::function<void(grpc::Status, v1::NewDiscoveryTokenResponse)>;
  return onLoop<v1::NewDiscoveryTokenResponse>(
      io_, 10s,
      [this, size = req->size()](TokenDone done) {
        auto r = new_discovery_token_(size);
        if (!r) {
          done(toStatus(r.error()), {});
          return;
        }
        done(grpc::Status::OK, std::move(*r));
      },
      out);
}

grpc::Status AgentService::UploadSnapshot(grpc::ServerContext*,
                                          grpc::ServerReader<v1::UploadSnapshotRequest>* reader,
                                          v1::UploadSnapshotResponse* out) {
  std::unique_lock lock(upload_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "another snapshot upload to this agent is in progress; try again once it finished"};
  }
  v1::UploadSnapshotRequest first;
  if (!reader->Read(&first))
    return {grpc::StatusCode::INVALID_ARGUMENT, "the upload sent no message"};
  // Data never changes under a member: an agent with a plan takes no snapshot.
  std::optional<v1::MemberState> state;
  using StateDone = std::function<void(grpc::Status, std::optional<v1::MemberState>)>;
  auto s = onLoop<std::optional<v1::MemberState>>(
      io_, 10s, [this](StateDone done) { done(grpc::Status::OK, supervisor_.state()); }, &state);
  if (!s.ok()) return s;
  if (state) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "member \"" + supervisor_.config().member.name + "\" already has a plan (cluster \"" +
                state->plan().cluster_token() + "\", accepted " + state->accepted_at() +
                "): a snapshot is only taken by an agent without one. Wipe the member first "
                "(etcd-fleet member remove, or etcd-fleet agent wipe)"};
  }
  auto receiver = SnapshotReceiver::create(supervisor_.config(), first.cluster_token(),
                                           first.size(), first.sha256());
  if (!receiver) return toStatus(receiver.error());
  auto take = [&](const std::string& chunk) -> Result<void> {
    if (chunk.size() > kMaxUploadChunk) {
      return fail(Errc::kInvalidArgument, "an upload chunk of " + std::to_string(chunk.size()) +
                                              " bytes: at most " + std::to_string(kMaxUploadChunk) +
                                              " per message");
    }
    return (*receiver)->write(chunk);
  };
  if (auto r = take(first.chunk()); !r) return toStatus(r.error());
  v1::UploadSnapshotRequest msg;
  while (reader->Read(&msg)) {
    if (auto r = take(msg.chunk()); !r) return toStatus(r.error());
  }
  auto done = (*receiver)->commit();
  if (!done) return toStatus(done.error());
  *out = std::move(*done);
  return grpc::Status::OK;
}

}  // namespace etcdagent::agent
