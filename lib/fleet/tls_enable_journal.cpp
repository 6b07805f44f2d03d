#include "fleet/tls_enable_journal.hpp"

#include <algorithm>
#include <set>

#include "common/strings.hpp"

namespace etcdagent::fleet {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

}  // namespace

std::string_view tlsPhaseName(TlsPhase phase) {
  return phase == TlsPhase::kHttps ? "https" : "peer-ready";
}

int tlsStepCount(std::size_t members) {
  return static_cast<int>(2 * members + 2);
}

int tlsStepsDone(const TlsJournal& journal, std::size_t members) {
  const auto done = static_cast<int>(journal.done.size());
  if (journal.phase == TlsPhase::kPeerReady) return 1 + done;
  return 1 + static_cast<int>(members) + done + (journal.clients_https ? 1 : 0);
}

bool clientsSwitchDue(const TlsJournal& journal, std::size_t members) {
  return journal.phase == TlsPhase::kHttps && !journal.clients_https &&
         2 * journal.done.size() >= members;
}

std::optional<std::string> nextTlsMember(const TlsJournal& journal,
                                         const std::vector<std::string>& members,
                                         const std::string& leader) {
  std::vector<std::string> left;
  for (const auto& m : members) {
    if (!contains(journal.done, m)) left.push_back(m);
  }
  if (left.empty()) return std::nullopt;
  for (const auto& m : left) {
    if (m != leader) return m;
  }
  return left.front();
}

Result<void> completeTlsMember(TlsJournal& journal, const std::string& member,
                               const std::vector<std::string>& members) {
  if (!contains(members, member) || contains(journal.done, member)) {
    return fail(Errc::kInternal, "tls journal: member \"" + member + "\" cannot complete phase " +
                                     std::string(tlsPhaseName(journal.phase)) +
                                     " (done: " + join(journal.done, ",") + ")");
  }
  journal.done.push_back(member);
  if (journal.phase == TlsPhase::kPeerReady && journal.done.size() == members.size()) {
    journal.phase = TlsPhase::kHttps;
    journal.done.clear();
  }
  return {};
}

bool tlsFinished(const TlsJournal& journal, std::size_t members) {
  return journal.phase == TlsPhase::kHttps && journal.done.size() == members &&
         journal.clients_https;
}

std::map<std::string, std::string> tlsJournalToMap(const TlsJournal& journal) {
  return {
      {"phase", std::string(tlsPhaseName(journal.phase))},
      {"done", join(journal.done, ",")},
      {"clients", journal.clients_https ? "https" : "http"},
      {"started_at", journal.started_at},
  };
}

Result<TlsJournal> tlsJournalFromMap(const std::map<std::string, std::string>& table,
                                     std::string_view inventory_path) {
  const std::string where = std::string(inventory_path) + " [tls]";
  const std::string help =
      "; re-run `etcd-fleet tls enable` after fixing it (every step is safe to repeat), or delete "
      "the [tls] table if the cluster was converted by hand";
  auto bad = [&](const std::string& key, const std::string& why) {
    return fail(Errc::kInvalidArgument, where + ": " + key + " " + why + help);
  };
  for (const auto& [key, value] : table) {
    if (key != "phase" && key != "done" && key != "clients" && key != "started_at")
      return bad(key, "is not a key of the tls journal (written by a newer etcd-fleet?)");
  }
  auto get = [&](const char* key) -> std::string {
    auto it = table.find(key);
    return it == table.end() ? std::string() : it->second;
  };
  TlsJournal j;
  const std::string phase = get("phase");
  if (phase == "peer-ready") {
    j.phase = TlsPhase::kPeerReady;
  } else if (phase == "https") {
    j.phase = TlsPhase::kHttps;
  } else {
    return bad("phase", "is \"" + phase + "\", expected peer-ready or https");
  }
  const std::string done = get("done");
  if (!done.empty()) j.done = splitComma(done);
  std::set<std::string> seen;
  for (const auto& n : j.done) {
    if (n.empty() || !seen.insert(n).second)
      return bad("done", "is \"" + done + "\", expected distinct member names");
  }
  const std::string clients = get("clients");
  if (clients != "http" && clients != "https")
    return bad("clients", "is \"" + clients + "\", expected http or https");
  j.clients_https = clients == "https";
  if (j.clients_https && j.phase != TlsPhase::kHttps)
    return bad("clients", "is https before the https phase");
  j.started_at = get("started_at");
  return j;
}

Result<void> checkNoTlsEnableInProgress(const Inventory& inventory, std::string_view what) {
  if (inventory.tls.empty()) return {};
  return fail(Errc::kFailedPrecondition,
              std::string(what) + " waits: a tls enable is in progress (" + inventory.path +
                  " [tls]). Finish it first by running `etcd-fleet tls enable` again (it resumes "
                  "where it stopped)");
}

std::string describeTlsJournal(const TlsJournal& journal, std::size_t members) {
  std::string out = "stopped after step " + std::to_string(tlsStepsDone(journal, members)) + "/" +
                    std::to_string(tlsStepCount(members)) + " (" +
                    std::string(tlsPhaseName(journal.phase)) + ": " +
                    (journal.done.empty() ? std::string("no member") : join(journal.done, ",")) +
                    " done; client URLs " + (journal.clients_https ? "https" : "http") + ")";
  if (!journal.started_at.empty()) out += ", started " + journal.started_at;
  return out;
}

}  // namespace etcdagent::fleet
