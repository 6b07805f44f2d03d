#pragma once

// `member replace NAME [--with HOST[:PORT]]`: replaces a (lost) member by a fresh one, one
// journaled step at a time (replace_journal.hpp holds the steps, their order and the journal's
// form). This flow runs each step against the cluster and the agents and saves the journal in the
// fleet inventory after every step, before starting the next one, so a run interrupted anywhere
// resumes where it stopped.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"
#include "fleet/replace_journal.hpp"

namespace etcdagent::fleet {

struct ReplaceMemberRequest {
  Inventory inventory;
  ReplaceRequest what;
  // The operator's --endpoints; empty: the inventory's members. Either way the member being
  // replaced is left out (it may be dead, or be removed in the middle of a call).
  std::vector<std::string> endpoints;
  Duration promote_timeout = std::chrono::minutes(10);
};

struct ReplaceMemberReport {
  ReplaceJournal journal;  // as completed: old and new member, order, old_stale
  // Voters of the cluster afterwards; nullopt when the member list could not be read.
  std::optional<std::size_t> voters;
};

// Steps that fail end the flow with "step N/M (ACTION) failed: ...; re-run ... to resume"
// (kCancelled when interrupted, kFailedPrecondition otherwise); refusals before the first step
// change nothing.
Result<ReplaceMemberReport> replaceMember(const Env& env, const ReplaceMemberRequest& request);

}  // namespace etcdagent::fleet
