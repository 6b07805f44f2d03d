#include "fleet/upgrade.hpp"

#include <array>
#include <charconv>
#include <optional>

#include "fleet/rotation_journal.hpp"

namespace etcdagent::fleet {
namespace {

struct Version {
  unsigned major = 0;
  unsigned minor = 0;
  unsigned patch = 0;
};

// "3.4.23" (a suffix after the patch, "3.5.0-rc.1", is ignored).
std::optional<Version> parseVersion(std::string_view text) {
  Version v;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  const std::array<unsigned*, 3> parts{&v.major, &v.minor, &v.patch};
  for (std::size_t i = 0; i < 3; ++i) {
    auto [next, ec] = std::from_chars(p, end, *parts[i]);
    if (ec != std::errc() || next == p) return std::nullopt;
    p = next;
    if (i < 2) {
      if (p == end || *p != '.') return std::nullopt;
      ++p;
    }
  }
  return v;
}

std::string minorOf(const Version& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor);
}

class Upgrade {
 public:
  Upgrade(const Env& env, const UpgradeRequest& request) : env_(env), request_(request) {}

  // Every agent checks the binary on its host; their versions, and the members', must allow the
  // upgrade. Members that run the binary already (a resumed run) are not held to the path.
  Result<void> preflight() {
    std::vector<RunningVersion> running;
    std::string first_host;
    for (const auto& m : request_.inventory.members) {
      auto agent = env_.agents.dial(m.agent, request_.call_timeout);
      if (!agent) return fail(agent.error().context(describeMember(m)));
      v1::StartMemberRequest check;
      check.set_etcd_binary(request_.etcd_binary);
      check.set_check_only(true);
      auto checked = (*agent)->startMemberWith(check);
      if (!checked) {
        // The code is kept: an agent that does not answer is not a refusal (exit code 2).
        return fail(checked.error().code,
                    describeMember(m) + ": " + checked.error().message +
                        " (every host needs the binary at the same path; no member was touched)");
      }
      const std::string& version = checked->binary_version();
      if (version_.empty()) {
        version_ = version;
        first_host = m.name;
      } else if (auto a = parseVersion(version_), b = parseVersion(version);
                 !a || !b || a->major != b->major || a->minor != b->minor) {
        return fail(Errc::kFailedPrecondition,
                    request_.etcd_binary + " is etcd " + version_ + " on " + first_host +
                        "'s host but " + version + " on " + m.name +
                        "'s: one minor version on every host (no member was touched)");
      }
      if (checked->status().etcd_binary() != request_.etcd_binary) {
        running.push_back({m.name, checked->status().etcd_version()});
      }
    }
    return checkUpgradePath(version_, running);
  }

  // One member: stopped, started with the binary (rolling.hpp waits until it is healthy).
  Result<std::string> step(const AgentApi& agent) const {
    auto before = agent.status();
    if (!before) return fail(before.error());
    if (before->etcd_binary() == request_.etcd_binary && before->etcd_version() == version_) {
      return "runs " + request_.etcd_binary + " (etcd " + version_ + ") already: not restarted";
    }
    if (auto stopped = stopMemberForStep(agent); !stopped) return fail(stopped.error());
    v1::StartMemberRequest start;
    start.set_etcd_binary(request_.etcd_binary);
    auto started = agent.startMemberWith(start);
    if (!started) {
      return fail(started.error().code,
                  "starting its etcd with " + request_.etcd_binary + ": " +
                      started.error().message +
                      " (its etcd is stopped now; the next run starts it with the binary first)");
    }
    if (started->status().etcd_binary() != request_.etcd_binary) {
      return fail(Errc::kFailedPrecondition,
                  "agent " + agent.address() + " started its etcd with " +
                      started->status().etcd_binary() + ", not " + request_.etcd_binary +
                      " (an agent that predates etcd-fleet upgrade?)");
    }
    const std::string from = before->etcd_version().empty() ? "?" : before->etcd_version();
    std::string pids;
    if (before->etcd_pid() != 0 && started->status().etcd_pid() != 0) {
      pids = ", pid " + std::to_string(before->etcd_pid()) + " -> " +
             std::to_string(started->status().etcd_pid());
    }
    return "etcd " + from + " -> " + version_ + " (" + request_.etcd_binary + pids +
           "), healthy again";
  }

  // Every member reports the binary's version, as it runs it.
  Result<void> verify() const {
    for (const auto& m : request_.inventory.members) {
      auto agent = env_.agents.dial(m.agent, request_.call_timeout);
      if (!agent) return fail(agent.error().context(describeMember(m)));
      auto s = (*agent)->status();
      if (!s) return fail(s.error().context(describeMember(m)));
      if (s->etcd_binary() != request_.etcd_binary || s->etcd_version() != version_) {
        return fail(Errc::kFailedPrecondition,
                    describeMember(m) + " runs " + s->etcd_binary() + " (etcd " +
                        (s->etcd_version().empty() ? "?" : s->etcd_version()) + "), not " +
                        request_.etcd_binary + " (etcd " + version_ + ")");
      }
    }
    return {};
  }

  [[nodiscard]] const std::string& version() const { return version_; }

 private:
  const Env& env_;
  const UpgradeRequest& request_;
  std::string version_;
};

}  // namespace

Result<void> checkUpgradePath(std::string_view target, const std::vector<RunningVersion>& running) {
  const auto to = parseVersion(target);
  if (!to) {
    return fail(Errc::kInvalidArgument, "the binary says it is etcd \"" + std::string(target) +
                                            "\", not a MAJOR.MINOR.PATCH version");
  }
  for (const auto& r : running) {
    if (r.version.empty()) continue;
    const auto from = parseVersion(r.version);
    if (!from) {
      return fail(Errc::kInvalidArgument, "member " + r.member + " reports etcd \"" + r.version +
                                              "\", not a MAJOR.MINOR.PATCH version");
    }
    const std::string both =
        "member " + r.member + " runs etcd " + r.version + ", the binary is " + std::string(target);
    if (from->major != to->major) {
      return fail(Errc::kFailedPrecondition,
                  both + ": etcd does not move between major versions member by member");
    }
    if (to->minor < from->minor) {
      return fail(Errc::kFailedPrecondition,
                  both + ": etcd does not downgrade a cluster (its cluster version stays " +
                      minorOf(*from) + " and a " + minorOf(*to) + " member cannot join it)");
    }
    if (to->minor > from->minor + 1) {
      return fail(Errc::kFailedPrecondition,
                  both + ": etcd upgrades one minor version at a time; upgrade every member to " +
                      std::to_string(from->major) + "." + std::to_string(from->minor + 1) +
                      " first");
    }
  }
  return {};
}

Result<UpgradeReport> upgradeEtcd(const Env& env, const UpgradeRequest& request) {
  const std::string& binary = request.etcd_binary;
  if (!binary.starts_with('/')) {
    return fail(Errc::kInvalidArgument,
                "--etcd-binary " + binary + ": an absolute path, the same on every host");
  }
  // An interrupted upgrade is finished with its own binary first.
  const std::string path = rollingJournalPath(request.inventory.path);
  auto loaded = loadRotationJournal(path);
  if (!loaded) return fail(loaded.error());
  if (*loaded && (*loaded)->kind == RotationKind::kUpgrade && (*loaded)->etcd_binary != binary) {
    return fail(Errc::kFailedPrecondition,
                "an upgrade to " + (*loaded)->etcd_binary + " is in progress (" + path +
                    "): finish it first with `etcd-fleet upgrade --etcd-binary " +
                    (*loaded)->etcd_binary + "`");
  }
  Upgrade upgrade(env, request);
  env.progress.step("checking " + binary + " on every member's host");
  if (auto ok = upgrade.preflight(); !ok) return fail(ok.error());
  env.progress.step(binary + " is etcd " + upgrade.version() + " on every host");

  auto opened = openRollingJournal(env, request.inventory, RotationKind::kUpgrade,
                                   RotationStep::kUpgrade, "upgrade", binary);
  if (!opened) return fail(opened.error());
  UpgradeReport report{.version = upgrade.version(), .members = {}, .resumed = opened->resumed};
  const RollingRequest rolling{.inventory = &request.inventory,
                               .journal_path = opened->path,
                               .resume_command = "etcd-fleet upgrade --etcd-binary " + binary,
                               .call_timeout = request.call_timeout,
                               .health_timeout = request.health_timeout,
                               .start_stopped_current = true,
                               .start_binary = binary};
  auto members = rollThroughMembers(
      env, rolling, opened->journal, "upgrade",
      [&upgrade](const InventoryMember&, const AgentApi& agent) { return upgrade.step(agent); });
  if (!members) return fail(members.error());
  report.members = std::move(*members);
  if (auto ok = upgrade.verify(); !ok) return fail(ok.error());
  if (auto removed = removeRotationJournal(path); !removed) return fail(removed.error());
  return report;
}

}  // namespace etcdagent::fleet
