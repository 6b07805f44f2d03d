#include "fleet/ca_rotate.hpp"

#include "common/duration.hpp"
#include "fleet/fleet_trust.hpp"
#include "fleet/restore_journal.hpp"
#include "fleet/rotate.hpp"
#include "fleet/waits.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;

// How soon a call the agent refused while rebuilding its API is asked again.
constexpr Duration kApiRebuildRetry = 100ms;

std::string fingerprints(const std::vector<tls::Certificate>& cas) {
  std::string out;
  for (const auto& ca : cas) out += (out.empty() ? "" : ", ") + tls::spkiFingerprint(ca);
  return out;
}

class CaRotation {
 public:
  CaRotation(const Env& env, const RotateCaRequest& request)
      : env_(env),
        request_(request),
        journal_path_(rotationJournalPath(tls::fleetPkiPaths(request.fleet_path).dir)) {}

  Result<RotateCaReport> run() {
    if (auto r = checkNoRestoreInProgress(request_.inventory, "ca rotate"); !r) {
      return fail(r.error());
    }
    // One member-by-member flow at a time: a rolling restart or defrag finishes first.
    if (auto r = refuseWhileInProgress(rollingJournalPath(request_.fleet_path), {}, "ca rotate");
        !r) {
      return fail(r.error());
    }
    auto loaded = loadRotationJournal(journal_path_);
    if (!loaded) return fail(loaded.error());
    if (*loaded && (*loaded)->kind == RotationKind::kCerts) {
      return fail(Errc::kFailedPrecondition,
                  describeRotation(**loaded) + " is unfinished (" + journal_path_ +
                      "): finish it with `etcd-fleet certs rotate` first");
    }
    if (*loaded) {
      journal_ = **loaded;
      report_.resumed = true;
      env_.progress.step("resuming " + describeRotation(journal_));
    } else if (auto begun = begin(); !begun) {
      return fail(begun.error());
    }
    report_.new_ca = journal_.new_ca;
    for (int guard = 0; guard < 4; ++guard) {
      switch (journal_.step) {
        case RotationStep::kTrustBoth:
          if (auto r = trustBoth(); !r) return fail(r.error());
          break;
        case RotationStep::kReissue:
          if (request_.trust_only) return pausedBefore(RotationStep::kReissue);
          if (auto r = reissue(); !r) return fail(r.error());
          break;
        case RotationStep::kTrustNew:
          if (request_.trust_only || request_.keep_old) {
            return pausedBefore(RotationStep::kTrustNew);
          }
          if (auto r = trustNew(); !r) return fail(r.error());
          report_.finished = true;
          return report_;
        case RotationStep::kRestart:
        case RotationStep::kDefrag:
        case RotationStep::kUpgrade:
          // parseRotationJournal gives a CA rotation none of these.
          return fail(Errc::kInternal, journal_path_ + ": a CA rotation at step " +
                                           std::string(rotationStepName(journal_.step)));
      }
    }
    return fail(Errc::kInternal, "the CA rotation did not end");  // unreachable
  }

 private:
  Result<tls::FleetPki> pki() const { return tls::loadFleetPki(request_.fleet_path); }

  RotateCaReport pausedBefore(RotationStep next) {
    report_.next = next;
    return report_;
  }

  Result<void> begin() {
    auto current = pki();
    if (!current) return fail(current.error());
    auto next = tls::beginCaRotation(*current);
    if (!next) return fail(next.error());
    journal_ = {.kind = RotationKind::kCa,
                .step = RotationStep::kTrustBoth,
                .started_at = formatRfc3339(std::chrono::system_clock::now()),
                .done = {},
                .new_ca = tls::spkiFingerprint(*next)};
    if (auto saved = saveRotationJournal(journal_path_, journal_); !saved) return saved;
    env_.progress.step("new CA " + journal_.new_ca + " (staged; " + current->paths.ca_cert +
                       " now holds the current CA " + tls::spkiFingerprint(current->ca.cert) +
                       " and the new one)");
    return {};
  }

  // Every member's agent and etcd trust `cas`: InstallTrust, then an etcd restart.
  Result<void> distribute(const tls::FleetPki& pki, const std::vector<tls::Certificate>& cas,
                          const std::string& title) {
    auto dialer = request_.dialer(agentTls(pki));
    const Env env{*dialer, env_.etcd, env_.clock, env_.progress, env_.stop, env_.enroll};
    std::string bundle;
    for (const auto& ca : cas) bundle += ca.pem();
    const std::string what = fingerprints(cas);
    auto members = rollThroughMembers(
        env, rolling(), journal_, title,
        [&](const InventoryMember& member, const AgentApi& agent) -> Result<std::string> {
          auto installed = agent.installTrust(bundle);
          if (!installed) return fail(installed.error());
          // etcd reads its trusted CA file only when it starts.
          if (auto restarted = restartEtcd(*dialer, member); !restarted) {
            return fail(restarted.error());
          }
          return "trusts " + what + "; etcd restarted to read it";
        });
    if (!members) return fail(members.error());
    report_.steps.push_back({journal_.step, std::move(*members)});
    return {};
  }

  // Stops and starts the member's etcd through a fresh connection to its agent. The agent rebuilds
  // its API for new trust after it has answered InstallTrust: its old listener may still answer a
  // status and close before the new one listens, and a call refused in that gap (Unavailable) was
  // never delivered; stopping a stopped member and starting a running one change nothing. So a
  // refused round is asked again on a new connection, within the health timeout.
  Result<void> restartEtcd(const AgentDialer& dialer, const InventoryMember& member) {
    const auto deadline = env_.clock.now() + request_.health_timeout;
    for (;;) {
      auto done = [&]() -> Result<void> {
        if (auto up = reachAgent(dialer, member.agent, env_.clock, request_.health_timeout); !up) {
          return fail(up.error());
        }
        auto fresh = dialer.dial(member.agent, request_.call_timeout);
        if (!fresh) return fail(fresh.error());
        if (auto stopped = (*fresh)->stopMember(); !stopped) return fail(stopped.error());
        if (auto started = (*fresh)->startMember(); !started) return fail(started.error());
        return {};
      }();
      if (done || done.error().code != Errc::kUnavailable || env_.clock.now() >= deadline ||
          env_.stop.stop_requested()) {
        return done;
      }
      env_.clock.sleepFor(kApiRebuildRetry);
    }
  }

  Result<void> trustBoth() {
    auto current = pki();
    if (!current) return fail(current.error());
    bool has_new = false;
    for (const auto& ca : current->trust)
      has_new = has_new || tls::spkiFingerprint(ca) == journal_.new_ca;
    if (!has_new) {
      return fail(Errc::kFailedPrecondition,
                  current->paths.ca_cert + " does not hold the new CA " + journal_.new_ca +
                      " of the rotation in " + journal_path_ +
                      ": restore the pki directory from its backup, or remove the journal and "
                      "start the rotation again");
    }
    if (auto r = distribute(*current, current->trust, "trust old and new CA"); !r) return r;
    // The new CA signs from now on (unless a run before this one switched already).
    if (tls::spkiFingerprint(current->ca.cert) != journal_.new_ca) {
      if (auto r = tls::switchToNextCa(current->paths); !r) return r;
      env_.progress.step("the new CA " + journal_.new_ca +
                         " signs from now on; enrollment tokens made before pin the old CA and "
                         "cannot enroll hosts any more: make new ones (etcd-fleet token create)");
    }
    journal_.advance(RotationStep::kReissue);
    return saveRotationJournal(journal_path_, journal_);
  }

  Result<void> reissue() {
    auto current = pki();
    if (!current) return fail(current.error());
    if (tls::spkiFingerprint(current->ca.cert) != journal_.new_ca) {
      return fail(Errc::kFailedPrecondition,
                  "the signing CA is " + tls::spkiFingerprint(current->ca.cert) + ", not the new " +
                      journal_.new_ca + " of the rotation in " + journal_path_ +
                      ": restore the pki directory from its backup");
    }
    if (auto reason = tls::fleetCertRenewalReason(*current); !reason.empty()) {
      auto renewed = tls::renewFleetClientCertificate(*current);
      if (!renewed) return fail(renewed.error());
      report_.fleet_cert_renewed = true;
      env_.progress.step("etcd-fleet's " + current->paths.fleet_cert +
                         " re-issued under the new CA with a new key");
      current = std::move(renewed);
    }
    auto dialer = request_.dialer(agentTls(*current));
    const Env env{*dialer, env_.etcd, env_.clock, env_.progress, env_.stop, env_.enroll};
    const tls::Ca& ca = current->ca;
    auto members = rollThroughMembers(env, rolling(), journal_, "new certificates of the new CA",
                                      [&ca](const InventoryMember& member, const AgentApi& agent) {
                                        return reissueMember(ca, member, agent);
                                      });
    if (!members) return fail(members.error());
    report_.steps.push_back({journal_.step, std::move(*members)});
    journal_.advance(RotationStep::kTrustNew);
    return saveRotationJournal(journal_path_, journal_);
  }

  Result<void> trustNew() {
    auto current = pki();
    if (!current) return fail(current.error());
    if (auto r = distribute(*current, {current->ca.cert}, "trust the new CA alone"); !r) return r;
    if (auto r = tls::dropOtherCas(*current); !r) return r;
    env_.progress.step(current->paths.ca_cert + " holds the new CA " + journal_.new_ca +
                       " alone; the old CA is trusted nowhere");
    return removeRotationJournal(journal_path_);
  }

  [[nodiscard]] RollingRequest rolling() const {
    return {.inventory = &request_.inventory,
            .journal_path = journal_path_,
            .resume_command = "etcd-fleet ca rotate",
            .call_timeout = request_.call_timeout,
            .health_timeout = request_.health_timeout};
  }

  const Env& env_;
  const RotateCaRequest& request_;
  std::string journal_path_;
  RotationJournal journal_;
  RotateCaReport report_;
};

}  // namespace

Result<RotateCaReport> rotateCa(const Env& env, const RotateCaRequest& request) {
  if (!request.dialer) return fail(Errc::kInternal, "rotateCa: no dialer");
  return CaRotation(env, request).run();
}

}  // namespace etcdagent::fleet
