#include "agentclient/agent_client.hpp"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>
#include <fstream>
#include <optional>

#include "agentclient/call_error.hpp"
#include "etcd/endpoint.hpp"
#include "etcd/event_engine.hpp"

namespace etcdagent {

namespace {

std::string quoted(const std::string& s) {
  return "\"" + s + "\"";
}

}  // namespace

AgentClient::AgentClient(std::string address, std::shared_ptr<grpc::Channel> channel,
                         Duration timeout, bool tls, std::string cert_problem)
    : address_(std::move(address)),
      channel_(std::move(channel)),
      timeout_(timeout),
      tls_(tls),
      cert_problem_(std::move(cert_problem)) {
  etcd::holdEventEngine();
}

Result<AgentClient> AgentClient::connect(const std::string& address, Duration timeout,
                                         const std::optional<fleet::AgentTls>& tls) {
  if (address.starts_with(kUnixPrefix)) {
    const std::string path = address.substr(kUnixPrefix.size());
    if (!path.starts_with('/')) {
      return fail(Errc::kInvalidArgument,
                  "agent socket " + quoted(path) + ": expected an absolute path (unix:/PATH)");
    }
    // gRPC's unix: resolver; the agent reads who we are from the socket (SO_PEERCRED).
    return AgentClient(address, grpc::CreateChannel(address, grpc::InsecureChannelCredentials()),
                       timeout, false);
  }
  auto ep = etcd::parseEndpoint(agentAddress(address));
  if (!ep) return fail(Errc::kInvalidArgument, "agent address " + ep.error().message);
  if (!tls) {
    return AgentClient(ep->original,
                       grpc::CreateChannel(ep->target, grpc::InsecureChannelCredentials()), timeout,
                       false);
  }
  // gRPC checks the certificate's names against the host of the target (an IP address against
  // the IP SANs): the address the fleet dials is one the fleet signed for.
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls->ca_pem;
  options.pem_cert_chain = tls->cert_pem;
  options.pem_private_key = tls->key_pem;
  return AgentClient(ep->original, grpc::CreateChannel(ep->target, grpc::SslCredentials(options)),
                     timeout, true, tls->cert_problem);
}

Error AgentClient::callError(const grpc::Status& s, const std::string& prefix,
                             const std::string& late) const {
  if (tls_) {
    if (auto refused = mutualTlsRefusal(s, address_, cert_problem_)) return *refused;
  } else if (!address_.starts_with(kUnixPrefix)) {
    if (auto refused = plaintextRefusal(s, address_)) return *refused;
  }
  return agentCallError(s, prefix, late);
}

template <class Req, class Resp, class Fn>
Result<Resp> AgentClient::call(const char* what, const Req& req, Fn fn, Duration timeout) const {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  ctx.set_wait_for_ready(false);
  Resp resp;
  v1::Agent::Stub stub(channel_);
  grpc::Status s = (stub.*fn)(&ctx, req, &resp);
  if (s.ok()) return resp;
  return fail(callError(s, "agent " + address_ + ": " + what + ": ",
                        "no answer within " + formatDuration(timeout)));
}

Result<v1::AgentStatus> AgentClient::status() const {
  return call<v1::GetStatusRequest, v1::AgentStatus>("status", {}, &v1::Agent::Stub::GetStatus,
                                                     timeout_);
}

Result<v1::PreflightResponse> AgentClient::preflight(
    const std::string& cluster_token, const std::vector<unsigned>& avoid_ports) const {
  v1::PreflightRequest req;
  req.set_cluster_token(cluster_token);
  for (auto port : avoid_ports) req.add_avoid_ports(port);
  return call<v1::PreflightRequest, v1::PreflightResponse>("preflight", req,
                                                           &v1::Agent::Stub::Preflight, timeout_);
}

Result<v1::AgentStatus> AgentClient::applyPlan(const v1::Plan& plan) const {
  v1::ApplyPlanRequest req;
  *req.mutable_plan() = plan;
  auto r = call<v1::ApplyPlanRequest, v1::ApplyPlanResponse>(
      "apply plan", req, &v1::Agent::Stub::ApplyPlan,
      std::max<Duration>(timeout_, std::chrono::seconds(35)));
  if (!r) return fail(r.error());
  return r->status();
}

Result<v1::AgentStatus> AgentClient::stopMember() const {
  auto r = call<v1::StopMemberRequest, v1::StopMemberResponse>(
      "stop member", {}, &v1::Agent::Stub::StopMember,
      std::max<Duration>(timeout_, std::chrono::seconds(65)));
  if (!r) return fail(r.error());
  return r->status();
}

Result<v1::AgentStatus> AgentClient::startMember() const {
  auto r = call<v1::StartMemberRequest, v1::StartMemberResponse>(
      "start member", {}, &v1::Agent::Stub::StartMember,
      std::max<Duration>(timeout_, std::chrono::seconds(35)));
  if (!r) return fail(r.error());
  return r->status();
}

Result<v1::StartMemberResponse> AgentClient::startMemberWith(
    const v1::StartMemberRequest& request) const {
  // A check runs `BINARY --version` on the agent's host (10 s at most there).
  return call<v1::StartMemberRequest, v1::StartMemberResponse>(
      request.check_only() ? "check the etcd binary" : "start member", request,
      &v1::Agent::Stub::StartMember, std::max<Duration>(timeout_, std::chrono::seconds(35)));
}

Result<v1::AgentStatus> AgentClient::removeMember() const {
  v1::RemoveMemberRequest req;
  req.set_confirm_removed_from_cluster(true);
  auto r = call<v1::RemoveMemberRequest, v1::RemoveMemberResponse>(
      "remove member", req, &v1::Agent::Stub::RemoveMember,
      std::max<Duration>(timeout_, std::chrono::seconds(65)));
  if (!r) return fail(r.error());
  return r->status();
}

Result<v1::AgentStatus> AgentClient::setMemberTls(const v1::SetMemberTlsRequest& request) const {
  // The agent stops etcd (up to its 15 s stop timeout) and starts it again within its 60 s.
  auto r = call<v1::SetMemberTlsRequest, v1::SetMemberTlsResponse>(
      "set member tls", request, &v1::Agent::Stub::SetMemberTls,
      std::max<Duration>(timeout_, std::chrono::seconds(65)));
  if (!r) return fail(r.error());
  return r->status();
}

Result<v1::AgentStatus> AgentClient::restoreMember(const v1::RestoreMemberRequest& request) const {
  // The agent may stop etcd first (up to its 15 s stop timeout), within its 60 s.
  auto r = call<v1::RestoreMemberRequest, v1::RestoreMemberResponse>(
      "restore member", request, &v1::Agent::Stub::RestoreMember,
      std::max<Duration>(timeout_, std::chrono::seconds(65)));
  if (!r) return fail(r.error());
  return r->status();
}

Result<std::string> AgentClient::setAutostart(bool enabled) const {
  v1::SetAutostartRequest req;
  req.set_enabled(enabled);
  // The agent asks systemd over D-Bus to enable its unit file and reload: on the system bus
  // polkit decides first (polkitd may be started on demand), and a daemon reload takes seconds on
  // a busy host.
  auto r = call<v1::SetAutostartRequest, v1::SetAutostartResponse>(
      "set autostart", req, &v1::Agent::Stub::SetAutostart,
      std::max<Duration>(timeout_, std::chrono::seconds(60)));
  if (!r) return fail(r.error());
  return r->autostart();
}

Result<v1::NewDiscoveryTokenResponse> AgentClient::newDiscoveryToken(unsigned size) const {
  v1::NewDiscoveryTokenRequest req;
  req.set_size(size);
  return call<v1::NewDiscoveryTokenRequest, v1::NewDiscoveryTokenResponse>(
      "new discovery token", req, &v1::Agent::Stub::NewDiscoveryToken, timeout_);
}

Result<v1::UploadSnapshotResponse> AgentClient::uploadSnapshot(
    const std::string& file, const std::string& cluster_token, std::uint64_t size,
    const std::string& sha256_hex, const std::function<void(std::uint64_t)>& progress,
    fleet::UploadFor purpose) const {
  constexpr Duration timeout = std::chrono::minutes(30);
  const std::string prefix = "agent " + address_ + ": upload snapshot: ";
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail(Errc::kIo, "cannot open " + file);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::UploadSnapshotResponse resp;
  v1::Agent::Stub stub(channel_);
  auto writer = stub.UploadSnapshot(&ctx, &resp);
  v1::UploadSnapshotRequest first;
  first.set_size(size);
  first.set_sha256(sha256_hex);
  first.set_cluster_token(cluster_token);
  first.set_in_place(purpose == fleet::UploadFor::kInPlaceRestore);
  bool open = writer->Write(first);
  constexpr std::size_t kChunk = 1U << 20;  // the agent takes at most 1 MiB per message
  std::uint64_t sent = 0;
  // One message, read into in place: a fresh 1 MiB buffer per chunk costs a copy and page faults
  // that showed as most of etcd-fleet's CPU time in a profile of a 130 MB upload.
  v1::UploadSnapshotRequest msg;
  std::string& chunk = *msg.mutable_chunk();
  while (open && in) {
    chunk.resize(kChunk);
    in.read(chunk.data(), static_cast<std::streamsize>(kChunk));
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n == 0) break;
    chunk.resize(n);
    open = writer->Write(msg);  // false: the agent ended the call; Finish() says why
    sent += n;
    if (open && progress) progress(sent);
  }
  if (open && in.bad()) {
    ctx.TryCancel();
    writer->Finish();
    return fail(Errc::kIo, "cannot read " + file);
  }
  if (open) writer->WritesDone();
  grpc::Status s = writer->Finish();
  if (s.ok()) return resp;
  if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    return fail(Errc::kFailedPrecondition, prefix +
                                               "this etcd-agent is too old to take a snapshot (" +
                                               s.error_message() + "); upgrade it");
  }
  return fail(callError(s, prefix, "not done within " + formatDuration(timeout)));
}

Result<v1::ListSnapshotsResponse> AgentClient::listSnapshots() const {
  return call<v1::ListSnapshotsRequest, v1::ListSnapshotsResponse>(
      "list snapshots", {}, &v1::Agent::Stub::ListSnapshots, timeout_);
}

Result<v1::SnapshotRecord> AgentClient::fetchSnapshot(const std::string& name,
                                                      const ChunkSink& sink) const {
  constexpr Duration timeout = std::chrono::minutes(30);
  const std::string prefix = "agent " + address_ + ": fetch snapshot " + name + ": ";
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::FetchSnapshotRequest req;
  req.set_name(name);
  v1::Agent::Stub stub(channel_);
  auto reader = stub.FetchSnapshot(&ctx, req);
  v1::FetchSnapshotChunk msg;
  std::optional<v1::SnapshotRecord> record;
  std::optional<Error> sink_error;
  while (reader->Read(&msg)) {
    if (msg.has_record()) record = msg.record();
    if (!record) {
      sink_error = Error(Errc::kInternal, prefix + "the agent sent data before its record");
      ctx.TryCancel();
      break;
    }
    if (auto r = sink(msg.chunk(), *record); !r) {
      sink_error = r.error();
      ctx.TryCancel();
      break;
    }
  }
  grpc::Status s = reader->Finish();
  if (sink_error) return fail(*sink_error);
  if (!s.ok()) {
    if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      return fail(Errc::kFailedPrecondition, prefix +
                                                 "this etcd-agent is too old to serve snapshots (" +
                                                 s.error_message() + "); upgrade it");
    }
    return fail(callError(s, prefix, "not done within " + formatDuration(timeout)));
  }
  if (!record) return fail(Errc::kInternal, prefix + "the agent sent no record");
  return *record;
}

Result<v1::SnapshotRecord> AgentClient::takeSnapshot() const {
  // The agent streams the member's database and reads it back: minutes for a large one.
  auto r = call<v1::TakeSnapshotRequest, v1::TakeSnapshotResponse>(
      "take snapshot", {}, &v1::Agent::Stub::TakeSnapshot,
      std::max<Duration>(timeout_, std::chrono::minutes(10)));
  if (!r) return fail(r.error());
  return r->record();
}

Result<v1::DefragmentMemberResponse> AgentClient::defragmentMember(Duration timeout) const {
  return call<v1::DefragmentMemberRequest, v1::DefragmentMemberResponse>(
      "defragment member", {}, &v1::Agent::Stub::DefragmentMember,
      std::max<Duration>(timeout_, timeout));
}

Result<v1::PrepareRotationResponse> AgentClient::prepareRotation() const {
  // Four EC keys and CSRs, written durably: quick, but on a busy host's disk give it time.
  return call<v1::PrepareRotationRequest, v1::PrepareRotationResponse>(
      "prepare rotation", {}, &v1::Agent::Stub::PrepareRotation,
      std::max<Duration>(timeout_, std::chrono::seconds(30)));
}

Result<v1::InstallCertificatesResponse> AgentClient::installCertificates(
    const v1::EnrollKeyUses& certs) const {
  v1::InstallCertificatesRequest req;
  *req.mutable_certs() = certs;
  return call<v1::InstallCertificatesRequest, v1::InstallCertificatesResponse>(
      "install certificates", req, &v1::Agent::Stub::InstallCertificates,
      std::max<Duration>(timeout_, std::chrono::seconds(30)));
}

Result<v1::InstallTrustResponse> AgentClient::installTrust(const std::string& ca_bundle_pem) const {
  v1::InstallTrustRequest req;
  req.set_ca_bundle_pem(ca_bundle_pem);
  return call<v1::InstallTrustRequest, v1::InstallTrustResponse>(
      "install trust", req, &v1::Agent::Stub::InstallTrust,
      std::max<Duration>(timeout_, std::chrono::seconds(30)));
}

Result<std::unique_ptr<fleet::AgentApi>> GrpcAgentDialer::dial(const std::string& address,
                                                               Duration timeout) const {
  auto client = AgentClient::connect(address, timeout, tls_);
  if (!client) return fail(client.error());
  return std::make_unique<AgentClient>(std::move(*client));
}

}  // namespace etcdagent
