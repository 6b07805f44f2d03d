#pragma once

// The journal of `etcd-fleet tls enable`: a pure record of how far the online conversion of a
// plaintext cluster to TLS has come, and its (de)serialisation to the fleet inventory's `[tls]`
// string table. The flow (tls_enable.hpp) saves it after every member, before the next one, so a
// conversion interrupted anywhere resumes with the member it was at (every member's step is
// idempotent: an agent asked for the step its etcd runs already changes nothing, and a member
// update to the peer URL a member has already is skipped).
//
// Two phases, each one member at a time, followers first and the leader last (who leads is asked
// before each member, as a restart moves leadership):
//
//   peer-ready  each member's etcd restarts with its peer certificate and the fleet CA, still
//               serving http:// on both ports: from then on it can dial an https:// peer;
//   https       each member's peer URL is moved to https:// (MemberUpdate), then its etcd restarts
//               serving https:// on both ports with client and peer certificate auth. Once at
//               least half of the members serve https://, the inventory's client URLs switch to
//               https:// (the "clients" step), so etcd-fleet and everything that reads the
//               inventory moves over while plaintext is still served by the rest; the last
//               member's restart drops http:// for good.
//
// Steps, for N members: 1 check, N peer-ready, N https, 1 clients: 2N + 2 in all.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "fleet/inventory.hpp"

namespace etcdagent::fleet {

enum class TlsPhase { kPeerReady, kHttps };

struct TlsJournal {
  TlsPhase phase = TlsPhase::kPeerReady;  // the phase in progress
  std::vector<std::string> done;          // members that completed it, in the order they did
  bool clients_https = false;             // the inventory's client URLs were switched
  std::string started_at;                 // RFC 3339, for the operator
};

// "peer-ready", "https" (the journal's spelling).
std::string_view tlsPhaseName(TlsPhase phase);

int tlsStepCount(std::size_t members);
// The steps completed so far (1 = checked, nothing changed yet).
int tlsStepsDone(const TlsJournal& journal, std::size_t members);

// Whether the clients step is due now: in the https phase, not done yet, and at least half of the
// members serve https (with every member done it is always due).
bool clientsSwitchDue(const TlsJournal& journal, std::size_t members);

// The member of `members` (inventory order) to convert next in the phase in progress: the first
// one not done that does not lead, or the leader when it is the only one left; nullopt once every
// member is done. `leader` is the name of the member that leads now ("" = unknown).
std::optional<std::string> nextTlsMember(const TlsJournal& journal,
                                         const std::vector<std::string>& members,
                                         const std::string& leader);

// Records that `member` completed the phase in progress; once every one of `members` did, the
// peer-ready phase turns into the https phase. Refuses a member done twice or not in `members`
// (kInternal: a bug).
Result<void> completeTlsMember(TlsJournal& journal, const std::string& member,
                               const std::vector<std::string>& members);

// Whether every member completed the https phase and the clients step is done.
bool tlsFinished(const TlsJournal& journal, std::size_t members);

// The inventory's `[tls]` table and back. Parsing names the offending key and says how to get out.
std::map<std::string, std::string> tlsJournalToMap(const TlsJournal& journal);
Result<TlsJournal> tlsJournalFromMap(const std::map<std::string, std::string>& table,
                                     std::string_view inventory_path);

// Refuses `what` ("member add", ...) while a tls enable is journaled in `inventory`: members added,
// removed or replaced in the middle would not be the ones the conversion counts, and a new member
// could not be planned with one scheme while the cluster runs both.
Result<void> checkNoTlsEnableInProgress(const Inventory& inventory, std::string_view what);

// "stopped after step 5/8 (https: m2 done), started 2026-..." for the operator.
std::string describeTlsJournal(const TlsJournal& journal, std::size_t members);

}  // namespace etcdagent::fleet
