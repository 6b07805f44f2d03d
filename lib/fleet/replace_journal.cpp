#include "fleet/replace_journal.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <limits>
#include <type_traits>
#include <utility>

#include "common/encoding.hpp"
#include "fleet/bootstrap_plan.hpp"

namespace etcdagent::fleet {
namespace {

constexpr std::array<std::pair<ReplaceStep, std::string_view>, 6> kStepNames{{
    {ReplaceStep::kChecked, "checked"},
    {ReplaceStep::kLearnerAdded, "learner-added"},
    {ReplaceStep::kLearnerStarted, "learner-started"},
    {ReplaceStep::kPromoted, "promoted"},
    {ReplaceStep::kOldRemoved, "old-removed"},
    {ReplaceStep::kOldWiped, "old-wiped"},
}};

std::optional<std::uint64_t> parseUnsigned(std::string_view text, int base) {
  std::uint64_t v = 0;
  if (text.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

std::string hostOfAgent(std::string_view agent) {
  auto colon = agent.rfind(':');
  return std::string(colon == std::string_view::npos ? agent : agent.substr(0, colon));
}

}  // namespace

std::string_view stepName(ReplaceStep step) {
  for (const auto& [s, name] : kStepNames)
    if (s == step) return name;
  return "unknown";
}

std::string_view stepAction(ReplaceStep step) {
  switch (step) {
    case ReplaceStep::kChecked: return "check health and quorum";
    case ReplaceStep::kLearnerAdded: return "add the new member as learner";
    case ReplaceStep::kLearnerStarted: return "start the learner";
    case ReplaceStep::kPromoted: return "wait until in sync and promote";
    case ReplaceStep::kOldRemoved: return "remove the old member";
    case ReplaceStep::kOldWiped: return "stop and wipe the old member's data";
  }
  return "unknown";
}

std::string_view orderName(ReplaceOrder order) {
  return order == ReplaceOrder::kRemoveFirst ? "remove-first" : "learner-first";
}

std::vector<ReplaceStep> replaceSteps(ReplaceOrder order) {
  if (order == ReplaceOrder::kRemoveFirst) {
    return {ReplaceStep::kOldRemoved, ReplaceStep::kOldWiped, ReplaceStep::kLearnerAdded,
            ReplaceStep::kLearnerStarted, ReplaceStep::kPromoted};
  }
  return {ReplaceStep::kLearnerAdded, ReplaceStep::kLearnerStarted, ReplaceStep::kPromoted,
          ReplaceStep::kOldRemoved, ReplaceStep::kOldWiped};
}

std::optional<ReplaceStep> nextStep(const ReplaceJournal& journal) {
  const auto steps = replaceSteps(journal.order);
  if (journal.step == ReplaceStep::kChecked) return steps.front();
  auto it = std::find(steps.begin(), steps.end(), journal.step);
  if (it == steps.end() || ++it == steps.end()) return std::nullopt;
  return *it;
}

int stepNumber(ReplaceOrder order, ReplaceStep step) {
  if (step == ReplaceStep::kChecked) return 1;
  const auto steps = replaceSteps(order);
  return static_cast<int>(std::find(steps.begin(), steps.end(), step) - steps.begin()) + 2;
}

int stepCount(ReplaceOrder order) {
  return static_cast<int>(replaceSteps(order).size()) + 1;
}

Result<void> advance(ReplaceJournal& journal, ReplaceStep completed) {
  auto next = nextStep(journal);
  if (!next || *next != completed) {
    return fail(Errc::kInternal, "replace journal: step \"" + std::string(stepName(completed)) +
                                     "\" cannot follow \"" + std::string(stepName(journal.step)) +
                                     "\"");
  }
  if (completed == ReplaceStep::kLearnerAdded &&
      (journal.new_id == 0 || journal.initial_cluster.empty())) {
    return fail(Errc::kInternal,
                "replace journal: learner-added needs the new member's ID and initial cluster");
  }
  journal.step = completed;
  return {};
}

ReplaceOrder chooseOrder(bool remove_first_required, bool old_healthy) {
  return !remove_first_required && old_healthy ? ReplaceOrder::kLearnerFirst
                                               : ReplaceOrder::kRemoveFirst;
}

bool removeFirstRequired(const ReplaceJournal& journal) {
  return sameHost(journal) || journal.new_name == journal.old_name;
}

bool reconsiderOrder(ReplaceJournal& journal, bool old_healthy) {
  if (journal.step != ReplaceStep::kChecked) return false;
  const ReplaceOrder order = chooseOrder(removeFirstRequired(journal), old_healthy);
  if (order == journal.order) return false;
  journal.order = order;
  return true;
}

bool sameHost(const ReplaceJournal& journal) {
  return journal.old_agent == journal.new_agent;
}

bool oldMemberRemoved(const ReplaceJournal& journal) {
  if (journal.step == ReplaceStep::kChecked) return false;
  const auto steps = replaceSteps(journal.order);
  auto done = std::find(steps.begin(), steps.end(), journal.step);
  auto removed = std::find(steps.begin(), steps.end(), ReplaceStep::kOldRemoved);
  return done >= removed;
}

std::map<std::string, std::string> journalToMap(const ReplaceJournal& j) {
  std::map<std::string, std::string> m{
      {"order", std::string(orderName(j.order))},
      {"step", std::string(stepName(j.step))},
      {"started_at", j.started_at},
      {"old_name", j.old_name},
      {"old_id", j.old_id ? hexId(j.old_id) : ""},
      {"old_host", j.old_host},
      {"old_agent", j.old_agent},
      {"old_client_url", j.old_client_url},
      {"old_peer_url", j.old_peer_url},
      {"new_name", j.new_name},
      {"new_host", j.new_host},
      {"new_agent", j.new_agent},
      {"new_client_url", j.new_client_url},
      {"new_peer_url", j.new_peer_url},
      {"new_client_port", std::to_string(j.new_client_port)},
      {"new_peer_port", std::to_string(j.new_peer_port)},
      {"new_id", j.new_id ? hexId(j.new_id) : ""},
      {"initial_cluster", j.initial_cluster},
      {"old_stale", j.old_stale ? "true" : "false"},
  };
  return m;
}

Result<ReplaceJournal> journalFromMap(const std::map<std::string, std::string>& table,
                                      std::string_view inventory_path) {
  const std::string where = std::string(inventory_path) + " [replace]";
  const std::string help =
      "; re-run `etcd-fleet member replace` after fixing it, or delete the [replace] table if "
      "the cluster was repaired by hand";
  auto bad = [&](const std::string& key, const std::string& why) {
    return fail(Errc::kInvalidArgument, where + ": " + key + " " + why + help);
  };
  auto get = [&](const char* key) -> const std::string* {
    auto it = table.find(key);
    return it == table.end() ? nullptr : &it->second;
  };
  static const std::vector<std::string> kKnown = {
      "order",         "step",      "started_at",      "old_name",     "old_id",
      "old_host",      "old_agent", "old_client_url",  "old_peer_url", "new_name",
      "new_host",      "new_agent", "new_client_url",  "new_peer_url", "new_client_port",
      "new_peer_port", "new_id",    "initial_cluster", "old_stale"};
  for (const auto& [key, value] : table) {
    if (std::find(kKnown.begin(), kKnown.end(), key) == kKnown.end())
      return bad(key, "is not a key of the replace journal (written by a newer etcd-fleet?)");
  }

  ReplaceJournal j;
  const std::string* order = get("order");
  if (!order) return bad("order", "is missing");
  if (*order == "remove-first") {
    j.order = ReplaceOrder::kRemoveFirst;
  } else if (*order == "learner-first") {
    j.order = ReplaceOrder::kLearnerFirst;
  } else {
    return bad("order", "is \"" + *order + "\", expected remove-first or learner-first");
  }
  const std::string* step = get("step");
  if (!step) return bad("step", "is missing");
  bool found = false;
  for (const auto& [s, name] : kStepNames) {
    if (name == *step) {
      j.step = s;
      found = true;
    }
  }
  if (!found) return bad("step", "is \"" + *step + "\", not a step of member replace");

  auto text = [&](const char* key, std::string& out, bool required) -> Result<void> {
    const std::string* v = get(key);
    if (v) out = *v;
    if (required && out.empty()) return bad(key, "is missing");
    return {};
  };
  auto number = [&](const char* key, auto& out, int base, bool required) -> Result<void> {
    const std::string* v = get(key);
    if (!v || v->empty()) {
      if (required) return bad(key, "is missing");
      return {};
    }
    auto n = parseUnsigned(*v, base);
    using Out = std::remove_reference_t<decltype(out)>;
    if (!n || *n > std::numeric_limits<Out>::max())
      return bad(key, "is \"" + *v + "\", not a " + (base == 16 ? "hex ID" : "number"));
    out = static_cast<Out>(*n);
    return {};
  };
  for (auto r :
       {text("started_at", j.started_at, false), text("old_name", j.old_name, true),
        number("old_id", j.old_id, 16, true), text("old_host", j.old_host, false),
        text("old_agent", j.old_agent, false), text("old_client_url", j.old_client_url, false),
        text("old_peer_url", j.old_peer_url, false), text("new_name", j.new_name, true),
        text("new_host", j.new_host, false), text("new_agent", j.new_agent, true),
        text("new_client_url", j.new_client_url, true), text("new_peer_url", j.new_peer_url, true),
        number("new_client_port", j.new_client_port, 10, true),
        number("new_peer_port", j.new_peer_port, 10, true), number("new_id", j.new_id, 16, false),
        text("initial_cluster", j.initial_cluster, false)}) {
    if (!r) return std::unexpected(r.error());
  }
  if (const std::string* stale = get("old_stale")) {
    if (*stale != "true" && *stale != "false" && !stale->empty())
      return bad("old_stale", "is \"" + *stale + "\", expected true or false");
    j.old_stale = *stale == "true";
  }
  // A journal past learner-added without the learner's ID could not resume safely.
  const auto steps = replaceSteps(j.order);
  auto done = std::find(steps.begin(), steps.end(), j.step);
  auto added = std::find(steps.begin(), steps.end(), ReplaceStep::kLearnerAdded);
  if (j.step != ReplaceStep::kChecked && done >= added && j.new_id == 0)
    return bad("new_id", "is missing although the learner was added");
  return j;
}

std::string describeJournal(const ReplaceJournal& j) {
  std::string out = j.old_name + " (" + hexId(j.old_id) + ") on " + j.old_host + " -> " +
                    j.new_name + " on " + j.new_host + ", " + std::string(orderName(j.order)) +
                    ", stopped after step " + std::to_string(stepNumber(j.order, j.step)) + "/" +
                    std::to_string(stepCount(j.order)) + " (" + std::string(stepName(j.step)) + ")";
  if (!j.started_at.empty()) out += ", started " + j.started_at;
  return out;
}

bool sameHost(const Inventory& inventory, const ReplaceRequest& request) {
  if (!request.with) return true;
  const InventoryMember* old = inventory.find(request.name);
  return old != nullptr && !old->agent.empty() && old->agent == request.with_agent;
}

Result<std::optional<ReplaceJournal>> resumeOrStart(const Inventory& inventory,
                                                    const ReplaceRequest& request) {
  if (inventory.replace.empty()) return std::optional<ReplaceJournal>();
  auto journal = journalFromMap(inventory.replace, inventory.path);
  if (!journal) return std::unexpected(journal.error());
  const std::string resume = "etcd-fleet member replace " + journal->old_name +
                             (sameHost(*journal) ? std::string() : " --with " + journal->new_host);
  if (journal->old_name != request.name) {
    return fail(Errc::kFailedPrecondition,
                "another member replace is in progress: " + describeJournal(*journal) +
                    ". Finish it first by running `" + resume + "` (it resumes where it stopped)");
  }
  if (request.with) {
    const bool same =
        request.with_agent == journal->new_agent || *request.with == journal->new_host;
    if (!same) {
      return fail(Errc::kFailedPrecondition,
                  "member replace of " + journal->old_name +
                      " is in progress with another target: " + describeJournal(*journal) +
                      ". Resume it with `" + resume + "`");
    }
  }
  return std::optional<ReplaceJournal>(std::move(*journal));
}

Result<ReplaceJournal> planReplace(const Inventory& inventory, const ReplaceRequest& request,
                                   const ReplaceTarget& target, bool old_healthy,
                                   std::string started_at) {
  const InventoryMember* old = inventory.find(request.name);
  if (old == nullptr) {
    std::string names;
    for (const auto& m : inventory.members) names += (names.empty() ? "" : ", ") + m.name;
    return fail(Errc::kNotFound, "no member named \"" + request.name + "\" in " + inventory.path +
                                     (names.empty() ? "" : " (members: " + names + ")") +
                                     "; `etcd-fleet member list` shows the cluster's names");
  }
  if (old->id == 0) {
    return fail(Errc::kFailedPrecondition,
                "the inventory " + inventory.path + " does not know member " + old->name +
                    "'s ID; run `etcd-fleet member list` and add id = \"HEX\" to its entry");
  }
  const bool same = sameHost(inventory, request);
  if (target.member_name.empty() || target.advertise_host.empty() || target.client_port == 0 ||
      target.peer_port == 0) {
    return fail(Errc::kInvalidArgument, "agent " + target.agent +
                                            " did not report its member name, host and ports; "
                                            "check its config ([member] section)");
  }
  if (!target.existing_cluster_token.empty() && !same &&
      target.existing_cluster_token != inventory.cluster_token) {
    return fail(Errc::kFailedPrecondition,
                "agent " + target.agent + " already holds a member of cluster \"" +
                    target.existing_cluster_token + "\", not \"" + inventory.cluster_token +
                    "\"; pick another host, or remove that member on it first");
  }
  for (const auto& m : inventory.members) {
    if (m.name == old->name) continue;
    if (!same && !m.agent.empty() && m.agent == target.agent) {
      return fail(Errc::kFailedPrecondition,
                  "agent " + target.agent + " already runs member " + m.name +
                      " of this cluster (an agent runs one member); pick another host");
    }
    if (m.name == target.member_name) {
      return fail(Errc::kFailedPrecondition,
                  "agent " + target.agent + " is configured for member name \"" +
                      target.member_name + "\", which member " + m.name + " on " + m.host +
                      " already has; give the new agent another name ([member] name)");
    }
  }
  if (!same && !target.existing_cluster_token.empty()) {
    return fail(Errc::kFailedPrecondition,
                "agent " + target.agent + " already holds a member (cluster \"" +
                    target.existing_cluster_token +
                    "\") that is not in the inventory; remove it there first (its data would be "
                    "overwritten)");
  }
  if (same && old_healthy && !request.force) {
    return fail(Errc::kFailedPrecondition,
                "member " + old->name + " (" + hexId(old->id) + ") on " +
                    (old->host.empty() ? old->agent : old->host) +
                    " is healthy: replacing it on its own host removes it and wipes its data "
                    "before the new member exists, so the cluster runs one voter short until that "
                    "one has caught up. Pass --force to replace it anyway, or --with HOST to add "
                    "the new member on another host first; nothing was changed");
  }

  ReplaceJournal j;
  j.order = chooseOrder(same || target.member_name == old->name, old_healthy);
  j.step = ReplaceStep::kChecked;
  j.started_at = std::move(started_at);
  j.old_name = old->name;
  j.old_id = old->id;
  j.old_host = old->host.empty() ? hostOfAgent(old->agent) : old->host;
  j.old_agent = old->agent;
  j.old_client_url = old->client_url;
  j.old_peer_url = old->peer_url;
  j.new_name = target.member_name;
  j.new_host = same ? j.old_host : (request.with ? *request.with : target.host);
  j.new_agent = target.agent;
  j.new_client_port = target.client_port;
  j.new_peer_port = target.peer_port;
  // The new member serves what the old one did: a TLS cluster stays one.
  const bool tls = old->peer_url.starts_with("https://");
  j.new_client_url = bootstrap::url(target.advertise_host, target.client_port, tls);
  j.new_peer_url = bootstrap::url(target.advertise_host, target.peer_port, tls);
  return j;
}

Result<void> finishInventory(Inventory& inventory, const ReplaceJournal& journal) {
  InventoryMember* entry = inventory.find(journal.old_name);
  if (entry == nullptr) {
    return fail(Errc::kNotFound, "member " + journal.old_name + " is no longer in " +
                                     inventory.path + "; add the new member " + journal.new_name +
                                     " (" + journal.new_client_url + ") to it by hand");
  }
  entry->name = journal.new_name;
  entry->host = journal.new_host;
  entry->agent = journal.new_agent;
  entry->client_url = journal.new_client_url;
  entry->peer_url = journal.new_peer_url;
  entry->id = journal.new_id;
  inventory.replace.clear();
  return {};
}

}  // namespace etcdagent::fleet
