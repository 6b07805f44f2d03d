#include "agent/service/agent_service.hpp"

#include <grpcpp/security/auth_context.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <future>
#include <utility>

#include "agent/bootstrap/discovery_relay.hpp"
#include "agent/bootstrap/preflight.hpp"
#include "agent/config/etcd_binary.hpp"
#include "agent/enroll/agent_pki.hpp"
#include "agent/maintenance/cluster_ops.hpp"
#include "agent/maintenance/snapshot_source.hpp"
#include "agent/restore/restore.hpp"
#include "agent/service/call_slot.hpp"
#include "agent/service/enroll_service.hpp"
#include "agent/service/member_status.hpp"
#include "agent/service/on_loop.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

using Done = std::function<void(grpc::Status, v1::AgentStatus)>;

// The whole cluster check of RemoveMember, within the caller's 65 s together with the stop.
constexpr std::chrono::milliseconds kRemovalCheckBudget{5000};

grpc::Status asStatus(const Result<void>& r) {
  return r ? grpc::Status::OK : toStatus(r.error());
}

// Over mutual TLS the certificate says who calls (the handshake verified it): its common name.
// nullopt on a plaintext connection (the socket, an insecure agent's loopback port).
std::optional<std::string> verifiedCommonName(const grpc::ServerContext* context) {
  if (context == nullptr) return std::nullopt;
  auto auth = context->auth_context();
  if (!auth || !auth->IsPeerAuthenticated()) return std::nullopt;
  const auto names = auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME);
  return names.empty() ? "" : std::string(names.front().data(), names.front().size());
}

void addFingerprints(const std::vector<tls::Certificate>& trust,
                     google::protobuf::RepeatedPtrField<std::string>* out) {
  for (const auto& ca : trust) out->Add(tls::spkiFingerprint(ca));
}

const grpc::Status kNoRotation{grpc::StatusCode::FAILED_PRECONDITION,
                               "this agent cannot rotate certificates: it is not enrolled in a "
                               "fleet (etcd-fleet enroll)"};

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
    case Errc::kResourceExhausted: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case Errc::kUnauthenticated: code = grpc::StatusCode::UNAUTHENTICATED; break;
    case Errc::kUnimplemented: code = grpc::StatusCode::UNIMPLEMENTED; break;
    case Errc::kCancelled: code = grpc::StatusCode::CANCELLED; break;
    default: code = grpc::StatusCode::INTERNAL;
  }
  return {code, e.message};
}

grpc::Status AgentService::allowMutation(const grpc::ServerContext* context,
                                         std::string_view method) const {
  if (auto cn = verifiedCommonName(context)) {
    return asStatus(authorizeCertificateMutation(*cn, method));
  }
  const std::optional<uid_t> caller = context ? lookup_(context->peer()) : std::nullopt;
  return asStatus(authorizeMutation(caller, method, policy_));
}

grpc::Status AgentService::allowDiscoveryRelay(const grpc::ServerContext* context) const {
  if (auto cn = verifiedCommonName(context)) return asStatus(authorizeDiscoveryRelay(*cn));
  return allowMutation(context, "RelayDiscovery");
}

grpc::Status AgentService::allowSnapshotCopy(const grpc::ServerContext* context) const {
  if (auto cn = verifiedCommonName(context)) return asStatus(authorizeSnapshotCopy(*cn));
  return allowMutation(context, "StoreSnapshotCopy");
}

std::string AgentService::autostart() const {
  if (units_.unit().empty()) return "unknown";
  auto state = units_.unitFileState();
  return state ? *state : "unknown";
}

v1::AgentStatus AgentService::status() const {
  return agentStatus(supervisor_.view(),
                     {certificates_, std::chrono::system_clock::now(),
                      snapshots_ ? &snapshots_->report() : nullptr, space_, defrag_});
}

grpc::Status AgentService::GetStatus(grpc::ServerContext*, const v1::GetStatusRequest*,
                                     v1::AgentStatus* out) {
  auto s = onLoop<v1::AgentStatus>(
      io_, 10s, [this](Done done) { done(grpc::Status::OK, status()); }, out);
  if (s.ok()) {
    out->set_unit(units_.unit());
    out->set_autostart(autostart());
  }
  return s;
}

grpc::Status AgentService::Preflight(grpc::ServerContext* ctx, const v1::PreflightRequest* req,
                                     v1::PreflightResponse* out) {
  // Preflight allocates ports and writes an fsync probe into the data root.
  if (auto s = allowMutation(ctx, "Preflight"); !s.ok()) return s;
  if (auto s = asStatus(validate(*req)); !s.ok()) return s;
  // What the checks need is read on the loop; the (blocking) checks then run on this thread.
  v1::AgentStatus current;
  auto s = onLoop<v1::AgentStatus>(
      io_, 10s, [this](Done done) { done(grpc::Status::OK, status()); }, &current);
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
      {config, state ? &*state : nullptr, current.etcd_pid() != 0, token, std::move(avoid)});
  return grpc::Status::OK;
}

grpc::Status AgentService::ApplyPlan(grpc::ServerContext* ctx, const v1::ApplyPlanRequest* req,
                                     v1::ApplyPlanResponse* out) {
  if (auto s = allowMutation(ctx, "ApplyPlan"); !s.ok()) return s;
  if (auto s = asStatus(validate(*req, ValidationContext::forAgent(supervisor_.config())));
      !s.ok()) {
    return s;
  }
  return onLoop<v1::AgentStatus>(
      io_, 30s,
      [this, plan = req->plan()](Done done) {
        auto r = supervisor_.applyPlan(plan);
        done(r ? grpc::Status::OK : toStatus(r.error()), status());
      },
      out->mutable_status());
}

grpc::Status AgentService::StopMember(grpc::ServerContext* ctx, const v1::StopMemberRequest*,
                                      v1::StopMemberResponse* out) {
  if (auto s = allowMutation(ctx, "StopMember"); !s.ok()) return s;
  return onLoop<v1::AgentStatus>(
      io_, 60s,
      [this](Done done) { supervisor_.stop([this, done] { done(grpc::Status::OK, status()); }); },
      out->mutable_status());
}

grpc::Status AgentService::StartMember(grpc::ServerContext* ctx, const v1::StartMemberRequest* req,
                                       v1::StartMemberResponse* out) {
  if (auto s = allowMutation(ctx, "StartMember"); !s.ok()) return s;
  if (auto s = asStatus(validate(*req)); !s.ok()) return s;
  if (!req->etcd_binary().empty() || req->check_only()) {
    // `BINARY --version` blocks: on this gRPC thread, never on the loop.
    std::string binary = req->etcd_binary();
    if (binary.empty()) {
      auto s = onLoop<v1::AgentStatus>(
          io_, 10s, [this](Done done) { done(grpc::Status::OK, status()); }, out->mutable_status());
      if (!s.ok()) return s;
      binary = out->status().etcd_binary();
    }
    auto version = probeEtcdBinary(binary);
    if (!version) {
      return toStatus(Error{Errc::kFailedPrecondition,
                            binary + " cannot run as member \"" + supervisor_.config().member.name +
                                "\"'s etcd: " + version.error().message});
    }
    out->set_binary_version(*version);
    if (req->check_only()) {
      if (!req->etcd_binary().empty()) {  // else out->status was read above
        return onLoop<v1::AgentStatus>(
            io_, 10s, [this](Done done) { done(grpc::Status::OK, status()); },
            out->mutable_status());
      }
      return grpc::Status::OK;
    }
  }
  return onLoop<v1::AgentStatus>(
      io_, 30s,
      [this, binary = req->etcd_binary()](Done done) {
        auto r = binary.empty() ? supervisor_.start() : supervisor_.startWith(binary);
        done(r ? grpc::Status::OK : toStatus(r.error()), status());
      },
      out->mutable_status());
}

grpc::Status AgentService::confirmRemoved(v1::AgentStatus* checked) {
  std::optional<v1::MemberState> state;
  using StateDone = std::function<void(grpc::Status, std::optional<v1::MemberState>)>;
  auto s = onLoop<std::optional<v1::MemberState>>(
      io_, 10s, [this](StateDone done) { done(grpc::Status::OK, supervisor_.state()); }, &state);
  if (!s.ok()) return s;
  s = onLoop<v1::AgentStatus>(
      io_, 10s, [this](Done done) { done(grpc::Status::OK, status()); }, checked);
  if (!s.ok()) return s;
  WipeFacts facts{
      .member_name = supervisor_.config().member.name,
      .has_plan = state.has_value(),
      .started_once = state && state->started_once(),
      .etcd_running = checked->etcd_pid() != 0,
      .reported_removed = checked->phase() == v1::MEMBER_PHASE_REMOVED,
      .member_id = state && state->member_id() ? state->member_id() : checked->member_id(),
      .peer_urls = {checked->peer_urls().begin(), checked->peer_urls().end()}};
  if (needsClusterCheck(facts)) {
    // Blocking etcd calls: on this gRPC thread, never on the loop.
    facts.views = asker_->ask({checked->client_urls().begin(), checked->client_urls().end()},
                              otherPeerUrls(state->plan().initial_cluster(), facts.member_name),
                              kRemovalCheckBudget);
  }
  return asStatus(decideWipe(facts));
}

grpc::Status AgentService::RemoveMember(grpc::ServerContext* ctx,
                                        const v1::RemoveMemberRequest* req,
                                        v1::RemoveMemberResponse* out) {
  if (auto s = allowMutation(ctx, "RemoveMember"); !s.ok()) return s;
  if (!req->confirm_removed_from_cluster()) {
    return {
        grpc::StatusCode::FAILED_PRECONDITION,
        "RemoveMember wipes the member's data: remove it from the cluster first (etcd-fleet member "
        "remove does both) and confirm"};
  }
  v1::AgentStatus checked;
  if (auto s = confirmRemoved(&checked); !s.ok()) return s;
  return onLoop<v1::AgentStatus>(
      io_, 60s,
      [this, checked](Done done) {
        // The member checked is the member wiped: a plan applied meanwhile is not touched.
        const auto now = status();
        if (now.cluster_token() != checked.cluster_token()) {
          done({grpc::StatusCode::ABORTED,
                "the member changed while its removal was checked; ask again"},
               now);
          return;
        }
        supervisor_.remove([this, done](Result<void> r) {
          done(r ? grpc::Status::OK : toStatus(r.error()), status());
        });
      },
      out->mutable_status());
}

grpc::Status AgentService::SetAutostart(grpc::ServerContext* ctx,
                                        const v1::SetAutostartRequest* req,
                                        v1::SetAutostartResponse* out) {
  if (auto s = allowMutation(ctx, "SetAutostart"); !s.ok()) return s;
  if (auto r = units_.setEnabled(req->enabled()); !r) return toStatus(r.error());
  out->set_autostart(autostart());
  return grpc::Status::OK;
}

grpc::Status AgentService::SetMemberTls(grpc::ServerContext* ctx,
                                        const v1::SetMemberTlsRequest* req,
                                        v1::SetMemberTlsResponse* out) {
  if (auto s = allowMutation(ctx, "SetMemberTls"); !s.ok()) return s;
  if (auto s = asStatus(validate(*req)); !s.ok()) return s;
  const bool enrolled = ValidationContext::forAgent(supervisor_.config()).enrolled;
  // Stopping etcd may take the stop timeout (15 s) before it starts again.
  return onLoop<v1::AgentStatus>(
      io_, 60s,
      [this, request = *req, enrolled](Done done) {
        supervisor_.setMemberTls(request, enrolled, [this, done](Result<void> r) {
          done(r ? grpc::Status::OK : toStatus(r.error()), agentStatus(supervisor_.view()));
        });
      },
      out->mutable_status());
}

grpc::Status AgentService::NewDiscoveryToken(grpc::ServerContext* ctx,
                                             const v1::NewDiscoveryTokenRequest* req,
                                             v1::NewDiscoveryTokenResponse* out) {
  if (auto s = allowMutation(ctx, "NewDiscoveryToken"); !s.ok()) return s;
  if (auto s = asStatus(validate(*req)); !s.ok()) return s;
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

grpc::Status AgentService::UploadSnapshot(grpc::ServerContext* ctx,
                                          grpc::ServerReader<v1::UploadSnapshotRequest>* reader,
                                          v1::UploadSnapshotResponse* out) {
  if (auto s = allowMutation(ctx, "UploadSnapshot"); !s.ok()) return s;
  std::unique_lock lock(upload_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "another snapshot upload to this agent is in progress; try again once it finished"};
  }
  v1::UploadSnapshotRequest first;
  if (!reader->Read(&first))
    return {grpc::StatusCode::INVALID_ARGUMENT, "the upload sent no message"};
  if (auto s = asStatus(validateUploadHeader(first)); !s.ok()) return s;
  // Data never changes under a member: an agent with a plan takes no snapshot, unless for an
  // in-place restore of the cluster it runs (RestoreMember PREPARE checks the rest).
  std::optional<v1::MemberState> state;
  using StateDone = std::function<void(grpc::Status, std::optional<v1::MemberState>)>;
  auto s = onLoop<std::optional<v1::MemberState>>(
      io_, 10s, [this](StateDone done) { done(grpc::Status::OK, supervisor_.state()); }, &state);
  if (!s.ok()) return s;
  if (first.in_place()) {
    if (!state) {
      return {grpc::StatusCode::FAILED_PRECONDITION,
              "member \"" + supervisor_.config().member.name +
                  "\" has no plan: there is no member to restore in place (a bootstrap "
                  "--from-snapshot uploads without in_place)"};
    }
    if (state->plan().cluster_token() != first.cluster_token()) {
      return {grpc::StatusCode::FAILED_PRECONDITION,
              "member \"" + supervisor_.config().member.name + "\" runs cluster \"" +
                  state->plan().cluster_token() + "\", not \"" + first.cluster_token() +
                  "\": an in-place restore keeps the cluster it restores"};
    }
  } else if (state) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "member \"" + supervisor_.config().member.name + "\" already has a plan (cluster \"" +
                state->plan().cluster_token() + "\", accepted " + state->accepted_at() +
                "): a snapshot is only taken by an agent without one. Wipe the member first "
                "(etcd-fleet member remove, or etcd-fleet agent wipe)"};
  }
  // The snapshot a plan restores from stays until its member has been healthy once.
  const std::string keep =
      state && !state->started_once() ? state->plan().restore_snapshot() : std::string();
  auto receiver = SnapshotReceiver::create(supervisor_.config(), first.cluster_token(),
                                           first.size(), first.sha256(), keep);
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

grpc::Status AgentService::RestoreMember(grpc::ServerContext* ctx,
                                         const v1::RestoreMemberRequest* req,
                                         v1::RestoreMemberResponse* out) {
  if (auto s = allowMutation(ctx, "RestoreMember"); !s.ok()) return s;
  if (auto s = asStatus(validate(*req, ValidationContext::forAgent(supervisor_.config())));
      !s.ok()) {
    return s;
  }
  // Stopping etcd may take the stop timeout (15 s); moving a data dir is a rename.
  return onLoop<v1::AgentStatus>(
      io_, 60s,
      [this, request = *req](Done done) {
        supervisor_.restoreMember(request, [this, done](Result<void> r) {
          done(r ? grpc::Status::OK : toStatus(r.error()), status());
        });
      },
      out->mutable_status());
}

grpc::Status AgentService::DefragmentMember(grpc::ServerContext* ctx,
                                            const v1::DefragmentMemberRequest*,
                                            v1::DefragmentMemberResponse* out) {
  if (auto s = allowMutation(ctx, "DefragmentMember"); !s.ok()) return s;
  // Only a healthy member is defragmented: one starting or not answering would hold the call for
  // nothing, and its own health is what the caller waits for next.
  using Target = std::optional<SnapshotTarget>;
  Target target;
  const grpc::Status found = onLoop<Target>(
      io_, 10s,
      [this](const std::function<void(grpc::Status, Target)>& done) {
        auto source = snapshotSource(supervisor_.view(), supervisor_.clientEndpoint(),
                                     etcdClientTls(agentPkiPaths(supervisor_.config().pkiDir())));
        if (!source) {
          done({grpc::StatusCode::FAILED_PRECONDITION,
                "member " + supervisor_.config().member.name +
                    " cannot be defragmented now: " + source.error().why},
               std::nullopt);
          return;
        }
        done(grpc::Status::OK, source->target);
      },
      &target, ctx);
  if (!found.ok()) return found;
  auto ops = etcdClusterOps(*target);
  if (!ops) return toStatus(ops.error());
  auto done = defragmentOwnMember(**ops, target->endpoint, {});
  if (!done) return toStatus(done.error().context("etcd at " + target->endpoint));
  *out = std::move(*done);
  return grpc::Status::OK;
}

grpc::Status AgentService::RelayDiscovery(grpc::ServerContext* ctx,
                                          const v1::RelayDiscoveryRequest* req,
                                          v1::RelayDiscoveryResponse* out) {
  if (auto s = allowDiscoveryRelay(ctx); !s.ok()) return s;
  if (auto s = asStatus(validateRelayRequest(*req)); !s.ok()) return s;
  if (!relay_discovery_) {
    return {grpc::StatusCode::UNAVAILABLE,
            "this agent does not coordinate yet: it is still starting; ask again"};
  }
  CallSlot slot(relayed_calls_, kMaxRelayedCalls);
  if (!slot.taken()) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "this coordinator answers " + std::to_string(kMaxRelayedCalls) +
                " discovery requests at once already; ask again"};
  }
  const auto request = fromRelayRequest(*req);
  // A long poll is parked no longer than the caller waits; the loop answers it by then.
  const auto park =
      relayParkLimit(kRelayLongPollTimeout, ctx->deadline(), std::chrono::system_clock::now());
  using RelayDone = std::function<void(grpc::Status, v1::RelayDiscoveryResponse)>;
  return onLoop<v1::RelayDiscoveryResponse>(
      io_, std::chrono::duration_cast<std::chrono::seconds>(park) + 10s,
      [this, request, park](RelayDone done) {
        relay_discovery_(request, park, [done](DiscoveryResponse r) {
          done(grpc::Status::OK, toRelayResponse(r));
        });
      },
      out, ctx);
}

grpc::Status AgentService::PrepareRotation(grpc::ServerContext* ctx,
                                           const v1::PrepareRotationRequest* req,
                                           v1::PrepareRotationResponse* out) {
  if (auto s = allowMutation(ctx, "PrepareRotation"); !s.ok()) return s;
  if (auto s = asStatus(validate(*req)); !s.ok()) return s;
  if (rotation_ == nullptr) return kNoRotation;
  auto prepared = rotation_->prepare();
  if (!prepared) return toStatus(prepared.error());
  *out = std::move(*prepared);
  return grpc::Status::OK;
}

grpc::Status AgentService::InstallCertificates(grpc::ServerContext* ctx,
                                               const v1::InstallCertificatesRequest* req,
                                               v1::InstallCertificatesResponse* out) {
  if (auto s = allowMutation(ctx, "InstallCertificates"); !s.ok()) return s;
  if (auto s = asStatus(validate(*req)); !s.ok()) return s;
  if (rotation_ == nullptr) return kNoRotation;
  auto installed = rotation_->install(req->certs());
  if (!installed) return toStatus(installed.error());
  addFingerprints(installed->trust, out->mutable_trusted_cas());
  if (rotated_)
    rotated_(*installed, "rotated its certificates: new keys and certificates in place");
  return grpc::Status::OK;
}

grpc::Status AgentService::InstallTrust(grpc::ServerContext* ctx,
                                        const v1::InstallTrustRequest* req,
                                        v1::InstallTrustResponse* out) {
  if (auto s = allowMutation(ctx, "InstallTrust"); !s.ok()) return s;
  if (auto s = asStatus(validate(*req)); !s.ok()) return s;
  if (rotation_ == nullptr) return kNoRotation;
  auto installed = rotation_->installTrust(req->ca_bundle_pem(),
                                           ctx != nullptr ? clientCertificatePem(*ctx) : "");
  if (!installed) return toStatus(installed.error());
  addFingerprints(installed->credentials.trust, out->mutable_trusted_cas());
  out->set_changed(installed->changed);
  if (installed->changed && rotated_) {
    std::string cas;
    for (const auto& fp : out->trusted_cas()) cas += (cas.empty() ? "" : ", ") + fp;
    rotated_(installed->credentials,
             "now trusts the CAs " + cas + " (etcd takes them when it restarts)");
  }
  return grpc::Status::OK;
}

}  // namespace etcdagent::agent
