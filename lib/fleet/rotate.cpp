#include "fleet/rotate.hpp"

#include "common/duration.hpp"
#include "fleet/agent_certs.hpp"
#include "fleet/restore_journal.hpp"
#include "fleet/rotation_journal.hpp"

namespace etcdagent::fleet {

Result<std::string> reissueMember(const tls::Ca& ca, const InventoryMember& member,
                                  const AgentApi& agent) {
  auto prepared = agent.prepareRotation();
  if (!prepared) return fail(prepared.error());
  if (prepared->member_name() != member.name) {
    return fail(Errc::kPermissionDenied,
                "agent " + agent.address() + " runs member \"" + prepared->member_name() +
                    "\", not \"" + member.name +
                    "\" as the inventory says: nothing was signed; check the inventory (" +
                    member.agent + ") and the agent's member.name");
  }
  auto checked = checkAgentCsrs({.address = agent.address(),
                                 .csrs = &prepared->csrs(),
                                 .member_name = prepared->member_name(),
                                 .hostname = prepared->hostname(),
                                 .advertise_host = prepared->advertise_host()},
                                "certificate rotation");
  if (!checked) return fail(checked.error());
  auto signed_ = signAgentCsrs(ca, *checked, std::chrono::system_clock::now());
  if (!signed_) return fail(signed_.error());
  if (auto installed = agent.installCertificates(signed_->pem); !installed) {
    return fail(installed.error());
  }
  return "new keys and certificates, valid until " +
         formatRfc3339(signed_->firstExpiry()).substr(0, 10);
}

Result<RotateCertsReport> rotateCertificates(const Env& env, const RotateCertsRequest& request) {
  if (request.pki == nullptr) {
    return fail(Errc::kFailedPrecondition,
                "this fleet has no CA: its members have no certificates to rotate");
  }
  if (auto r = checkNoRestoreInProgress(request.inventory, "certs rotate"); !r) {
    return fail(r.error());
  }
  // One member-by-member flow at a time: a rolling restart or defrag finishes first.
  if (auto r =
          refuseWhileInProgress(rollingJournalPath(request.inventory.path), {}, "certs rotate");
      !r) {
    return fail(r.error());
  }
  const std::string path = rotationJournalPath(request.pki->paths.dir);
  auto loaded = loadRotationJournal(path);
  if (!loaded) return fail(loaded.error());
  RotateCertsReport report;
  RotationJournal journal;
  if (*loaded) {
    if ((*loaded)->kind == RotationKind::kCa) {
      return fail(Errc::kFailedPrecondition,
                  describeRotation(**loaded) + " is in progress (" + path +
                      "): it re-issues every certificate itself; finish it with `etcd-fleet ca "
                      "rotate`");
    }
    journal = **loaded;
    report.resumed = true;
    env.progress.step("resuming " + describeRotation(journal));
  } else {
    journal = {.kind = RotationKind::kCerts,
               .step = RotationStep::kReissue,
               .started_at = formatRfc3339(std::chrono::system_clock::now()),
               .done = {}};
    if (auto saved = saveRotationJournal(path, journal); !saved) return fail(saved.error());
  }
  const RollingRequest rolling{.inventory = &request.inventory,
                               .journal_path = path,
                               .resume_command = "etcd-fleet certs rotate",
                               .call_timeout = request.call_timeout,
                               .health_timeout = request.health_timeout};
  const tls::Ca& ca = request.pki->ca;
  auto members = rollThroughMembers(env, rolling, journal, "new certificates",
                                    [&ca](const InventoryMember& member, const AgentApi& agent) {
                                      return reissueMember(ca, member, agent);
                                    });
  if (!members) return fail(members.error());
  report.members = std::move(*members);
  if (auto removed = removeRotationJournal(path); !removed) return fail(removed.error());
  return report;
}

}  // namespace etcdagent::fleet
