#include "fleet/auth_setup.hpp"

#include <algorithm>
#include <filesystem>

#include "common/strings.hpp"
#include "etcd/probe_keys.hpp"
#include "fleet/enroll.hpp"
#include "fleet/root_password.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {
namespace {

using Permission = authpb::Permission;

Permission readKey(std::string_view key) {
  Permission p;
  p.set_permtype(Permission::READ);
  p.set_key(std::string(key));
  return p;
}

// Whether `have` grants everything `need` asks for, on the same keys.
bool covers(const Permission& have, const Permission& need) {
  if (have.key() != need.key() || have.range_end() != need.range_end()) return false;
  return have.permtype() == need.permtype() || have.permtype() == Permission::READWRITE;
}

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

}  // namespace

std::string agentUserName(std::string_view member) {
  return std::string(kAgentCommonNamePrefix) + std::string(member);
}

// ---- the plan ----------------------------------------------------------------------------------

AuthModel agentAuthModel(const std::string& member, bool agents_root) {
  AuthModel model{
      .roles = {{.name = std::string(kAgentRole),
                 .permissions = {readKey(etcd::kHealthKey), readKey(etcd::kRemovalCheckKey)}}},
      .users = {{.name = agentUserName(member), .roles = {std::string(kAgentRole)}}},
      .enabled = false};
  if (agents_root) model.users.front().roles.emplace_back(kRootRole);
  return model;
}

AuthModel fleetAuthModel(const std::vector<std::string>& member_names, bool agents_root) {
  AuthModel model;
  model.roles.push_back({.name = std::string(kRootRole)});
  model.users.push_back(
      {.name = std::string(kRootUser), .roles = {std::string(kRootRole)}, .password = true});
  model.users.push_back(
      {.name = std::string(tls::kFleetClientCommonName), .roles = {std::string(kRootRole)}});
  for (std::size_t i = 0; i < member_names.size(); ++i) {
    AuthModel agent = agentAuthModel(member_names[i], agents_root);
    if (i == 0) model.roles.push_back(agent.roles.front());
    model.users.push_back(agent.users.front());
  }
  model.enabled = true;
  return model;
}

std::vector<AuthChange> planAuthChanges(const AuthModel& model, const AuthView& view) {
  using Kind = AuthChange::Kind;
  std::vector<AuthChange> changes;
  for (const auto& role : model.roles) {
    const auto found = view.roles.find(role.name);
    if (found == view.roles.end()) changes.push_back({.kind = Kind::kAddRole, .name = role.name});
    for (const auto& need : role.permissions) {
      const bool there = found != view.roles.end() &&
                         std::any_of(found->second.begin(), found->second.end(),
                                     [&](const Permission& have) { return covers(have, need); });
      if (!there) {
        changes.push_back({.kind = Kind::kGrantPermission, .name = role.name, .permission = need});
      }
    }
  }
  for (const auto& user : model.users) {
    const auto found = view.users.find(user.name);
    if (found == view.users.end()) {
      changes.push_back({.kind = Kind::kAddUser, .name = user.name, .password = user.password});
    }
    for (const auto& role : user.roles) {
      if (found == view.users.end() || !contains(found->second, role)) {
        changes.push_back({.kind = Kind::kGrantRole, .name = user.name, .role = role});
      }
    }
  }
  if (model.enabled && !view.enabled) changes.push_back({.kind = Kind::kEnable});
  return changes;
}

std::string describePermission(const Permission& p) {
  std::string type = p.permtype() == Permission::READ    ? "read"
                     : p.permtype() == Permission::WRITE ? "write"
                                                         : "readwrite";
  if (p.range_end().empty()) return type + " on key " + quoteForMessage(p.key());
  return type + " on keys from " + quoteForMessage(p.key()) + " to " +
         quoteForMessage(p.range_end());
}

// ---- the flows ---------------------------------------------------------------------------------

namespace {

// One run against one cluster: what etcd holds, the changes, each applied and reported.
class AuthStore {
 public:
  explicit AuthStore(std::unique_ptr<AuthApi> api) : api_(std::move(api)) {}

  AuthApi& api() { return *api_; }

  // What etcd holds of the model's names. With auth on, etcd lets only the root role read users
  // and roles: the refusal says how to get in.
  Result<AuthView> read(const AuthModel& model, const std::string& password_file) {
    AuthView view;
    auto enabled = api_->enabled();
    if (!enabled) return fail(enabled.error());
    view.enabled = *enabled;
    auto readFailed = [&](const Error& e) {
      if (!view.enabled || e.code != Errc::kPermissionDenied) return e;
      return Error{Errc::kFailedPrecondition,
                   e.message +
                       ". Authentication is on, and etcd lets only a user with the root "
                       "role read users and roles: etcd-fleet's certificate (CN " +
                       std::string(tls::kFleetClientCommonName) +
                       ") is not one here. Pass --user root (its password is in " + password_file +
                       " if etcd-fleet made it), or grant the root role to user " +
                       std::string(tls::kFleetClientCommonName)};
    };
    for (const auto& role : model.roles) {
      auto perms = api_->rolePermissions(role.name);
      if (!perms) return fail(readFailed(perms.error()));
      if (*perms) view.roles.emplace(role.name, std::move(**perms));
    }
    for (const auto& user : model.users) {
      auto roles = api_->userRoles(user.name);
      if (!roles) return fail(readFailed(roles.error()));
      if (*roles) view.users.emplace(user.name, std::move(**roles));
    }
    return view;
  }

  // Applies one change; `password` is root's for its kAddUser. Returns the line that reports it.
  Result<std::string> apply(const AuthChange& c, const std::optional<std::string>& password) {
    using Kind = AuthChange::Kind;
    switch (c.kind) {
      case Kind::kAddRole:
        if (auto r = api_->addRole(c.name); !r) return fail(r.error());
        return "role " + c.name + ": added";
      case Kind::kGrantPermission:
        if (auto r = api_->grantPermission(c.name, c.permission); !r) return fail(r.error());
        return "role " + c.name + ": granted " + describePermission(c.permission);
      case Kind::kAddUser:
        if (auto r = api_->addUser(c.name, c.password ? password : std::nullopt); !r)
          return fail(r.error());
        return "user " + c.name + ": added" +
               (c.password ? std::string(", with the password in the file above")
                           : std::string(" without a password (its certificate names it)"));
      case Kind::kGrantRole:
        if (auto r = api_->grantRole(c.name, c.role); !r) return fail(r.error());
        return "user " + c.name + ": granted role " + c.role;
      case Kind::kEnable:
        if (auto r = api_->enable(); !r) return fail(r.error());
        return "authentication enabled";
    }
    return fail(Errc::kInternal, "unknown auth change");
  }

 private:
  std::unique_ptr<AuthApi> api_;
};

bool addsPasswordUser(const std::vector<AuthChange>& changes) {
  return std::any_of(changes.begin(), changes.end(), [](const AuthChange& c) {
    return c.kind == AuthChange::Kind::kAddUser && c.password;
  });
}

Error refused(std::string message) {
  return {Errc::kFailedPrecondition, std::move(message) + "; nothing was changed"};
}

}  // namespace

Result<void> checkFleetCanUseAuth(const std::string& inventory_path) {
  const tls::FleetPkiPaths pki = tls::fleetPkiPaths(inventory_path);
  std::error_code ec;
  if (std::filesystem::exists(pki.ca_cert, ec)) return {};
  return fail(
      refused("this fleet has no CA (" + pki.ca_cert +
              "), so its members serve plaintext, where no certificate names an etcd user and the "
              "agents, which carry no password, would lose their health checks. Create the CA with "
              "`etcd-fleet ca init` before the bootstrap (a fleet with a CA forms TLS members), or "
              "convert a plaintext cluster with `etcd-fleet tls enable` first"));
}

namespace {

// What an agent does that etcd 3.4 lets only root do, from its status: "scheduled snapshots",
// "[defrag] auto", "NOSPACE recovery"; empty when nothing.
std::vector<std::string> rootOnlyWork(const v1::AgentStatus& s) {
  std::vector<std::string> work;
  const std::string& schedule = s.snapshots().schedule();
  if (!schedule.empty() && schedule != "off")
    work.push_back("scheduled snapshots (" + schedule + ")");
  if (s.defrag().automatic()) work.push_back("[defrag] auto");
  if (s.space().recover()) work.push_back("NOSPACE recovery");
  return work;
}

// With auth on and the agents' users without root: says which agents' work will be refused.
void warnAgentsShortOfRoot(const Env& env, const Inventory& inv, AuthStore& store,
                           AuthSetupReport& report) {
  std::string lines;
  for (const auto& m : inv.members) {
    auto roles = store.api().userRoles(agentUserName(m.name));
    if (!roles || !*roles || contains(**roles, std::string(kRootRole))) continue;
    auto agent = env.agents.dial(m.agent, std::chrono::seconds(2));
    if (!agent) continue;
    auto status = (*agent)->status();
    if (!status) continue;
    const auto work = rootOnlyWork(*status);
    if (work.empty()) continue;
    report.agents_short_of_root.push_back(m.name);
    std::string what;
    for (const auto& w : work) what += (what.empty() ? "" : ", ") + w;
    lines += (lines.empty() ? "" : "; ") + m.name + ": " + what;
  }
  if (lines.empty()) return;
  env.progress.warning(
      "the agents' users have the role etcd-agent, not root, and etcd 3.4 lets only root take "
      "snapshots and defragment: this work of the agents will fail with permission denied (" +
      lines +
      "). Re-run with --agents-root to grant them root (docs: etcd-fleet.md, auth setup), or "
      "turn that work off in their agent.toml");
}

}  // namespace

Result<AuthSetupReport> setupAuth(const Env& env, const AuthSetupRequest& request) {
  const Inventory& inv = request.inventory;
  if (auto r = checkFleetCanUseAuth(inv.path); !r) return fail(r.error());
  const std::vector<std::string> endpoints =
      request.endpoints.empty() ? inv.clientEndpoints() : request.endpoints;
  if (endpoints.empty()) {
    return fail(Errc::kInvalidArgument,
                "no member of " + inv.path + " has a client URL: pass --endpoints of the cluster");
  }
  const std::string cluster = "cluster \"" + inv.cluster_token + "\"";
  if (!clusterServesTls(inv, {})) {
    return fail(refused(
        cluster + " serves plaintext (its members' URLs in " + inv.path +
        " are http://): no certificate names an etcd user there, and the agents, which carry no "
        "password, would lose their health checks. Convert it with `etcd-fleet tls enable` "
        "first"));
  }
  auto api = env.etcd.auth(endpoints);
  if (!api) return fail(api.error());
  AuthStore store(std::move(*api));
  auto strict = store.api().requiresClientCertificates();
  if (!strict) return fail(strict.error());
  if (!*strict) {
    return fail(refused(
        cluster + " answers clients that present no certificate at " + endpoints.front() +
        " (plaintext, or TLS without --client-cert-auth), and only under client certificate "
        "auth does etcd take a certificate's common name as the user: convert it with "
        "`etcd-fleet tls enable`, or give the https endpoints of its members"));
  }

  std::vector<std::string> names;
  for (const auto& m : inv.members) names.push_back(m.name);
  const AuthModel model = fleetAuthModel(names, request.agents_root);
  AuthSetupReport report{.password_file = tls::fleetPkiPaths(inv.path).root_password};
  env.progress.step(cluster + ": " + std::to_string(inv.members.size()) +
                    (inv.members.size() == 1 ? " member" : " members") +
                    ", TLS with client certificates required" +
                    (request.agents_root ? "; the agents' users get the root role too "
                                           "(--agents-root: scheduled snapshots, defragmentation "
                                           "and NOSPACE recovery)"
                                         : ""));
  auto view = store.read(model, report.password_file);
  if (!view) return fail(view.error());
  const auto changes = planAuthChanges(model, *view);
  if (changes.empty()) {
    auto known = loadRootPassword(report.password_file);
    report.root_password_unknown = !known || !*known;
    env.progress.step(
        "authentication is enabled and every user and role of the fleet is in "
        "place; nothing changed");
    if (!request.agents_root) warnAgentsShortOfRoot(env, inv, store, report);
    return report;
  }

  // Root's password is on disk (0600, durable) before etcd has it: a run stopped in between
  // leaves a file a re-run uses again, never a root user nobody knows the password of.
  std::optional<std::string> password;
  auto existing = loadRootPassword(report.password_file);
  if (!existing) return fail(existing.error());
  if (addsPasswordUser(changes)) {
    if (*existing) {
      password = **existing;
      env.progress.step("user root's password: " + report.password_file +
                        " (kept from an earlier run)");
    } else {
      auto made = createRootPassword(report.password_file);
      if (!made) return fail(made.error());
      password = std::move(*made);
      report.password_created = true;
      env.progress.step("user root's password: a new random one in " + report.password_file +
                        " (mode 0600)");
    }
  } else if (!*existing) {
    report.root_password_unknown = true;
    env.progress.warning("user root exists already and its password is not in " +
                         report.password_file +
                         ": etcd-fleet does not know it. Keep it where it is kept, or set a new "
                         "one (etcd-fleet user passwd root) and put it in that file (mode 0600)");
  }
  for (const auto& change : changes) {
    if (env.stop.stop_requested()) {
      return fail(Errc::kCancelled, "interrupted; re-run `etcd-fleet auth setup` to finish");
    }
    auto done = store.apply(change, password);
    if (!done) {
      return fail(
          done.error().code == Errc::kUnavailable ? Errc::kUnavailable : Errc::kFailedPrecondition,
          done.error().message +
              "; what was done so far stays: re-run `etcd-fleet auth setup` to finish");
    }
    env.progress.step("  " + *done);
    report.changed = true;
    report.enabled_now = report.enabled_now || change.kind == AuthChange::Kind::kEnable;
  }
  // The operator's certificate must still be served, now as user etcd-fleet: read it back.
  if (report.enabled_now) {
    auto self = store.api().userRoles(std::string(tls::kFleetClientCommonName));
    if (!self || !*self || !contains(**self, std::string(kRootRole))) {
      return fail(
          Errc::kFailedPrecondition,
          "authentication is on, but etcd does not serve etcd-fleet's certificate as "
          "user " +
              std::string(tls::kFleetClientCommonName) + " with role root (" +
              (self ? std::string("its roles are not what was granted") : self.error().message) +
              "). Turn it off with the root password: etcd-fleet --user root auth "
              "disable (the password is in " +
              report.password_file + ")");
    }
    env.progress.step("etcd-fleet's certificate is served as user " +
                      std::string(tls::kFleetClientCommonName) + " (role root)");
  }
  if (!request.agents_root) warnAgentsShortOfRoot(env, inv, store, report);
  return report;
}

Result<std::optional<std::string>> ensureAgentUser(const Env& env,
                                                   const std::vector<std::string>& endpoints,
                                                   const std::string& member,
                                                   const std::vector<std::string>& peers) {
  auto api = env.etcd.auth(endpoints);
  if (!api) return fail(api.error());
  AuthStore store(std::move(*api));
  auto view = store.read(agentAuthModel(member), "pki/root.password beside the fleet inventory");
  if (!view) return fail(view.error());
  if (!view->enabled) return std::optional<std::string>();
  // The fleet's choice (auth setup --agents-root), as etcd holds it: a peer's agent with root.
  bool agents_root = false;
  for (const auto& peer : peers) {
    if (peer == member) continue;
    auto roles = store.api().userRoles(agentUserName(peer));
    if (!roles) return fail(roles.error());
    if (*roles && contains(**roles, std::string(kRootRole))) {
      agents_root = true;
      break;
    }
  }
  const AuthModel model = agentAuthModel(member, agents_root);
  const auto changes = planAuthChanges(model, *view);
  const std::string user = agentUserName(member);
  const std::string roles =
      agents_root ? "roles " + std::string(kAgentRole) + " and root, as the fleet's other agents"
                  : "role " + std::string(kAgentRole);
  if (changes.empty()) {
    return std::optional("authentication is on: user " + user + " exists already (" + roles + ")");
  }
  for (const auto& change : changes) {
    if (auto done = store.apply(change, std::nullopt); !done) {
      return fail(done.error().context("authentication is on: making user " + user +
                                       " for the new member's agent"));
    }
  }
  return std::optional("authentication is on: user " + user + " added (" + roles + ")");
}

}  // namespace etcdagent::fleet
