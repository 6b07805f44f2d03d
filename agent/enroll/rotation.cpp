#include "agent/enroll/rotation.hpp"

#include "common/file_switch.hpp"
#include "common/file_util.hpp"
#include "tls/certificate.hpp"
#include "tls/fleet_pki.hpp"
#include "tls/inspect.hpp"

namespace etcdagent::agent {
namespace {

// rotation.pending/ and rotation.switching/ in the agent's pki directory.
FileSwitch rotationSwitch(const AgentPkiPaths& paths) {
  return {paths.dir, "rotation"};
}

std::string fileName(KeyUse use, std::string_view suffix) {
  return std::string(keyUseName(use)) + std::string(suffix);
}

}  // namespace

Result<AgentCredentials> CertRotation::enrolled() const {
  auto current = loadAgentCredentials(paths_);
  if (!current) return fail(current.error());
  if (!*current) {
    return fail(Errc::kFailedPrecondition,
                "this agent is not enrolled (no " + paths_.ca_cert +
                    "): it has no certificates to rotate; enroll it first (etcd-fleet enroll)");
  }
  return std::move(**current);
}

Result<v1::PrepareRotationResponse> CertRotation::prepare() {
  std::scoped_lock lock(mutex_);
  if (auto current = enrolled(); !current) return fail(current.error());
  const FileSwitch files = rotationSwitch(paths_);
  // A switch a crash left committed is completed first: its files are the current ones.
  if (auto done = files.finish(); !done) return fail(done.error());
  if (auto fresh = files.freshStage(); !fresh) return fail(fresh.error());
  AgentKeys pending;
  for (KeyUse use : kKeyUses) {
    auto key = tls::Key::generate();
    if (!key) return fail(key.error());
    if (auto written = tls::writeKeyFile(files.staged(fileName(use, ".key")), *key); !written) {
      return fail(written.error());
    }
    pending.keys.push_back(std::move(*key));
  }
  auto csrs = agentCsrs(pending, identity_);
  if (!csrs) return fail(csrs.error());
  v1::PrepareRotationResponse out;
  *out.mutable_csrs() = std::move(*csrs);
  out.set_hostname(identity_.hostname);
  out.set_member_name(identity_.member_name);
  out.set_advertise_host(identity_.advertise_host);
  return out;
}

Result<AgentCredentials> CertRotation::install(const v1::EnrollKeyUses& certs,
                                               std::chrono::system_clock::time_point now) {
  std::scoped_lock lock(mutex_);
  auto current = enrolled();
  if (!current) return fail(current.error());
  const FileSwitch files = rotationSwitch(paths_);
  if (!files.hasStage()) {
    return fail(Errc::kFailedPrecondition,
                "no certificate rotation is prepared on this agent (its pending keys are made by "
                "PrepareRotation, which etcd-fleet certs rotate calls first); run etcd-fleet "
                "certs rotate again");
  }
  AgentKeys pending;
  for (KeyUse use : kKeyUses) {
    auto key = tls::Key::load(files.staged(fileName(use, ".key")));
    if (!key) {
      return fail(Errc::kFailedPrecondition,
                  "the pending keys of the prepared rotation are incomplete (" +
                      key.error().message + "); run etcd-fleet certs rotate again");
    }
    pending.keys.push_back(std::move(*key));
  }
  auto checked = checkAgentCertificates(certs, pending, current->trust, now);
  if (!checked) return fail(checked.error());
  for (KeyUse use : kKeyUses) {
    if (auto written = tls::writeCertificateFile(files.staged(fileName(use, ".crt")),
                                                 (*checked)[static_cast<std::size_t>(use)],
                                                 tls::kKeyFileMode, tls::Overwrite::kYes);
        !written) {
      return fail(written.error());
    }
  }
  if (auto switched = files.commit(); !switched) return fail(switched.error());
  return AgentCredentials{
      .trust = std::move(current->trust), .certs = std::move(*checked), .keys = std::move(pending)};
}

Result<TrustInstalled> CertRotation::installTrust(std::string_view bundle_pem,
                                                  std::string_view caller_cert_pem,
                                                  std::chrono::system_clock::time_point now) {
  std::scoped_lock lock(mutex_);
  auto current = enrolled();
  if (!current) return fail(current.error());
  auto bundle = tls::certificatesFromPem(bundle_pem);
  if (!bundle) return fail(Errc::kInvalidArgument, "the CA bundle: " + bundle.error().message);
  if (bundle->size() > kMaxTrustBundle) {
    return fail(Errc::kInvalidArgument, "the CA bundle holds " + std::to_string(bundle->size()) +
                                            " certificates: at most " +
                                            std::to_string(kMaxTrustBundle));
  }
  for (const auto& ca : *bundle) {
    auto info = tls::inspectCertificate(ca);
    if (!info) return fail(Errc::kInvalidArgument, "the CA bundle: " + info.error().message);
    if (!info->is_ca) {
      return fail(Errc::kInvalidArgument,
                  "the CA bundle holds " + info->subject + ", which is not a CA certificate");
    }
  }
  // The agent's own certificates must stay good: its etcd's peers and clients check them under
  // the same bundle once every member has it.
  if (auto covered = checkAgentCertificates(certificatesOf(*current), current->keys, *bundle, now);
      !covered) {
    return fail(Errc::kPermissionDenied,
                "the CA bundle does not cover this agent's own certificates (" +
                    covered.error().message +
                    "): re-issue them under one of its CAs first (etcd-fleet certs rotate)");
  }
  if (!caller_cert_pem.empty()) {
    auto caller = tls::Certificate::fromPem(caller_cert_pem);
    if (!caller)
      return fail(Errc::kPermissionDenied, "the client certificate: " + caller.error().message);
    if (auto ok = tls::verifyCertificateUnderAny(*bundle, *caller, tls::Purpose::kClient, now);
        !ok) {
      return fail(Errc::kPermissionDenied,
                  "the CA bundle does not cover the caller's own client certificate (" +
                      ok.error().message +
                      "), which would lock etcd-fleet out of this agent: re-issue pki/fleet.crt "
                      "under one of its CAs first");
    }
  }
  const std::string text = trustPem(*bundle);
  const bool changed = text != trustPem(current->trust);
  if (changed) {
    if (auto written = writeFileAtomic(paths_.ca_cert, text, tls::kKeyFileMode); !written) {
      return fail(written.error());
    }
  }
  return TrustInstalled{.credentials = {.trust = std::move(*bundle),
                                        .certs = std::move(current->certs),
                                        .keys = std::move(current->keys)},
                        .changed = changed};
}

Result<std::string> recoverAgentPki(const AgentPkiPaths& paths) {
  const FileSwitch files = rotationSwitch(paths);
  auto finished = files.finish();
  if (!finished) return fail(finished.error());
  std::string notice;
  if (*finished) {
    notice = "completed the certificate switch in " + paths.dir +
             " that an interruption left committed: the rotated certificates are in place";
  }
  if (files.hasStage()) {
    if (auto dropped = files.dropStage(); !dropped) return fail(dropped.error());
    notice += std::string(notice.empty() ? "" : "; ") +
              "dropped the pending keys of a certificate rotation that was prepared and never "
              "installed (etcd-fleet certs rotate makes new ones)";
  }
  return notice;
}

}  // namespace etcdagent::agent
