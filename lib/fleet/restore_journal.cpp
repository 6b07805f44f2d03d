#include "fleet/restore_journal.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include "common/strings.hpp"

namespace etcdagent::fleet {
namespace {

bool isSha256Hex(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::string_view restorePhaseName(RestorePhase phase) {
  switch (phase) {
    case RestorePhase::kOpening: return "opening";
    case RestorePhase::kAborting: return "aborting";
    case RestorePhase::kRestoring: break;
  }
  return "restoring";
}

std::map<std::string, std::string> restoreJournalToMap(const RestoreJournal& journal) {
  std::map<std::string, std::string> out{
      {"phase", std::string(restorePhaseName(journal.phase))},
      {"snapshot", journal.snapshot},
      {"sha256", journal.sha256},
      {"revision", std::to_string(journal.revision)},
      {"opened", join(journal.opened, ",")},
      {"started_at", journal.started_at},
  };
  if (journal.migrate_v2) {
    out["migrate_v2"] = "true";
    out["no_ttl"] = journal.no_ttl ? "true" : "false";
  }
  return out;
}

Result<RestoreJournal> restoreJournalFromMap(const std::map<std::string, std::string>& table,
                                             std::string_view inventory_path) {
  const std::string where = std::string(inventory_path) + " [restore]";
  const std::string help =
      "; fix it and re-run `etcd-fleet restore` (every step is safe to repeat), or `etcd-fleet "
      "restore --abort` before any member was opened";
  auto bad = [&](const std::string& key, const std::string& why) {
    return fail(Errc::kInvalidArgument, where + ": " + key + " " + why + help);
  };
  for (const auto& [key, value] : table) {
    if (key != "phase" && key != "snapshot" && key != "sha256" && key != "revision" &&
        key != "opened" && key != "started_at" && key != "migrate_v2" && key != "no_ttl") {
      return bad(key, "is not a key of the restore journal (written by a newer etcd-fleet?)");
    }
  }
  auto get = [&](const char* key) -> std::string {
    auto it = table.find(key);
    return it == table.end() ? std::string() : it->second;
  };
  RestoreJournal j;
  const std::string phase = get("phase");
  if (phase == "restoring") {
    j.phase = RestorePhase::kRestoring;
  } else if (phase == "opening") {
    j.phase = RestorePhase::kOpening;
  } else if (phase == "aborting") {
    j.phase = RestorePhase::kAborting;
  } else {
    return bad("phase", "is \"" + phase + "\", expected restoring, opening or aborting");
  }
  for (const char* flag : {"migrate_v2", "no_ttl"}) {
    const std::string v = get(flag);
    if (!v.empty() && v != "true" && v != "false") {
      return bad(flag, "is \"" + v + "\", expected true or false");
    }
  }
  j.migrate_v2 = get("migrate_v2") == "true";
  j.no_ttl = get("no_ttl") == "true";
  j.snapshot = get("snapshot");
  j.sha256 = get("sha256");
  if (j.migrate_v2) {
    if (!j.snapshot.empty() || !j.sha256.empty()) {
      return bad("snapshot", "is set in the journal of a migration, which restores none");
    }
  } else {
    if (j.snapshot.empty()) return bad("snapshot", "is missing");
    if (!isSha256Hex(j.sha256)) {
      return bad("sha256", "is \"" + j.sha256 + "\", expected 64 lower-case hex digits");
    }
  }
  const std::string revision = get("revision");
  const auto* end = revision.data() + revision.size();
  auto [ptr, ec] = std::from_chars(revision.data(), end, j.revision);
  if (revision.empty() || ec != std::errc() || ptr != end || j.revision < 0) {
    return bad("revision", "is \"" + revision + "\", expected a revision (0 or more)");
  }
  const std::string opened = get("opened");
  if (!opened.empty()) j.opened = splitComma(opened);
  std::set<std::string> seen;
  for (const auto& n : j.opened) {
    if (n.empty() || !seen.insert(n).second) {
      return bad("opened", "is \"" + opened + "\", expected distinct member names");
    }
  }
  if (!j.opened.empty() && j.phase != RestorePhase::kOpening) {
    return bad("opened", "names members while the phase is " + phase);
  }
  j.started_at = get("started_at");
  return j;
}

Result<void> checkNoRestoreInProgress(const Inventory& inventory, std::string_view what) {
  if (inventory.restore.empty()) return {};
  const auto m = inventory.restore.find("migrate_v2");
  const bool migration = m != inventory.restore.end() && m->second == "true";
  const std::string flow = migration ? "a v2 -> v3 migration" : "an in-place restore";
  const std::string command = migration ? "migrate" : "restore";
  return fail(Errc::kFailedPrecondition,
              std::string(what) + " waits: " + flow + " is in progress (" + inventory.path +
                  " [restore]). Finish it first by running `etcd-fleet " + command +
                  "` again (it resumes where it stopped), or undo it with `etcd-fleet " + command +
                  " --abort`");
}

std::vector<std::string> membersToOpen(const RestoreJournal& journal,
                                       const std::vector<std::string>& members) {
  std::vector<std::string> out;
  for (const auto& m : members) {
    if (std::find(journal.opened.begin(), journal.opened.end(), m) == journal.opened.end())
      out.push_back(m);
  }
  return out;
}

std::string describeRestoreJournal(const RestoreJournal& journal) {
  std::string out = "phase " + std::string(restorePhaseName(journal.phase)) +
                    (journal.migrate_v2 ? std::string(", v2 -> v3 migration") +
                                              (journal.no_ttl ? " (--no-ttl)" : "")
                                        : ", snapshot " + journal.snapshot + " (sha256 " +
                                              journal.sha256.substr(0, 12) + "...)");
  if (!journal.started_at.empty()) out += ", started " + journal.started_at;
  if (!journal.opened.empty()) out += "; opened: " + join(journal.opened, ",");
  return out;
}

}  // namespace etcdagent::fleet
