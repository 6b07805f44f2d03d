// libFuzzer entry point for the agent API's request validation (agent/service/request_validation,
// and RelayDiscovery's in agent/bootstrap/discovery_relay):
// the same bytes are parsed as every request message and each parsed one is validated. The
// validators must never crash, hang or throw on any input; the fuzz build (-fsanitize=fuzzer)
// links this file with agent_core and the agent's protos.

#include <cstddef>
#include <cstdint>

#include "agent/bootstrap/discovery_relay.hpp"
#include "agent/service/request_validation.hpp"

namespace {

using namespace etcdagent::agent;

template <class Request, class Check>
void fuzzOne(const std::uint8_t* data, std::size_t size, Check check) {
  Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  auto r = check(request);
  (void)r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > (1U << 20)) return 0;  // gRPC's default message limit is 4 MiB; 1 MiB keeps it fast
  static const ValidationContext self{"m1", "127.0.0.1", 2379, 2380};
  namespace v1 = etcdagent::v1;
  fuzzOne<v1::GetStatusRequest>(data, size, [](const auto& r) { return validate(r); });
  fuzzOne<v1::PreflightRequest>(data, size, [](const auto& r) { return validate(r); });
  fuzzOne<v1::ApplyPlanRequest>(data, size, [](const auto& r) { return validate(r, self); });
  fuzzOne<v1::StopMemberRequest>(data, size, [](const auto& r) { return validate(r); });
  fuzzOne<v1::StartMemberRequest>(data, size, [](const auto& r) { return validate(r); });
  fuzzOne<v1::RemoveMemberRequest>(data, size, [](const auto& r) { return validate(r); });
  fuzzOne<v1::SetAutostartRequest>(data, size, [](const auto& r) { return validate(r); });
  fuzzOne<v1::SetMemberTlsRequest>(data, size, [](const auto& r) { return validate(r); });
  fuzzOne<v1::NewDiscoveryTokenRequest>(data, size, [](const auto& r) { return validate(r); });
  fuzzOne<v1::PrepareRotationRequest>(data, size, [](const auto& r) { return validate(r); });
  fuzzOne<v1::InstallCertificatesRequest>(data, size, [](const auto& r) { return validate(r); });
  fuzzOne<v1::InstallTrustRequest>(data, size, [](const auto& r) { return validate(r); });
  fuzzOne<v1::UploadSnapshotRequest>(data, size,
                                     [](const auto& r) { return validateUploadHeader(r); });
  // The coordinator's RelayDiscovery: validated, then read as the registry reads it.
  fuzzOne<v1::RelayDiscoveryRequest>(data, size, [](const auto& r) {
    auto valid = validateRelayRequest(r);
    if (valid) (void)fromRelayRequest(r);
    return valid;
  });
  // An enrolled agent also takes etcd-agent:// discovery URLs.
  static const ValidationContext enrolled{"m1", "127.0.0.1", 2379, 2380, true};
  fuzzOne<v1::ApplyPlanRequest>(data, size, [](const auto& r) { return validate(r, enrolled); });
  return 0;
}
