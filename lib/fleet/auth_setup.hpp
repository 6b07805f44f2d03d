#pragma once

// etcd's RBAC for a fleet's cluster: `etcd-fleet auth setup` and `bootstrap --auth`.
//
// The users are the certificates the fleet already has. etcd 3.4 started with --client-cert-auth
// takes a client certificate's common name as the user name when a request carries no token
// (EtcdServer::AuthInfoFromCtx falls back to authStore.AuthInfoFromTLS; requests relayed by its
// gRPC gateway are the exception: their common name is ignored). So:
//
//   user              authenticated by                             roles
//   etcd-fleet        pki/fleet.crt (CN etcd-fleet)                 root
//   etcd-agent:<m>    each agent's etcd-client.crt                  etcd-agent
//   root              a random password in pki/root.password        root
//
// etcd refuses `auth enable` without a root user holding the root role, hence root; its password
// is the way in when a certificate is not (fleet.crt expired, a tool that speaks passwords only).
// etcd-fleet is root because everything it does needs it: etcd 3.4 lets only the root role change
// membership (MemberAdd/Remove/Promote/Update), take snapshots, defragment, hash, and read or
// change users and roles. The role etcd-agent grants what an agent asks of etcd beyond the calls
// etcd 3.4 checks no permission for (Status, MemberList): read on the two keys its health probe
// and its removal check read (etcd/probe_keys.hpp). An agent that joins by itself ([bootstrap]
// join) adds its member, which takes the root role: the fleet's own flows (member add --host,
// member replace) add members with etcd-fleet's certificate instead.
//
// With `agents_root` (auth setup --agents-root) every agent user gets the root role too: the
// agents' day-2 work (scheduled snapshots, the [defrag] policy, NOSPACE recovery) calls what
// etcd 3.4 lets only root call (Snapshot, Defragment, HashKV) and cannot be narrowed further. It
// is the operator's choice between that automation and a smaller blast radius for a stolen
// etcd-client.key; a member added later follows the fleet's choice (ensureAgentUser).
//
// What exists is kept and nothing is revoked: a run creates and grants only what is missing and
// turns auth on last, so a re-run after an interruption continues, and a re-run with everything
// in place and auth on changes nothing. A plaintext cluster, or one that serves TLS clients
// without a certificate, is refused: no certificate names anyone there, and the agents carry no
// password.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "etcd/authpb/auth.pb.h"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"

namespace etcdagent::fleet {

inline constexpr std::string_view kRootUser = "root";
inline constexpr std::string_view kRootRole = "root";
inline constexpr std::string_view kAgentRole = "etcd-agent";

// "etcd-agent:m1": the common name of the member's agent's certificates (fleet/enroll.hpp).
std::string agentUserName(std::string_view member);

// ---- the plan (pure) ---------------------------------------------------------------------------

struct RoleSpec {
  std::string name;
  std::vector<authpb::Permission> permissions;
};

struct UserSpec {
  std::string name;
  std::vector<std::string> roles;
  bool password = false;  // root: a password; every other user only a certificate (no password)
};

// What the fleet needs of etcd's auth store.
struct AuthModel {
  std::vector<RoleSpec> roles;
  std::vector<UserSpec> users;
  bool enabled = true;  // auth on (false: only the users and roles, e.g. for one new member)
};

// The whole fleet's: root, etcd-fleet, and an agent user for each member named (with the root
// role too when `agents_root`).
AuthModel fleetAuthModel(const std::vector<std::string>& member_names, bool agents_root = false);
// One member's agent: the role etcd-agent and the user etcd-agent:<member> (and root when
// `agents_root`); not auth itself.
AuthModel agentAuthModel(const std::string& member, bool agents_root = false);

// What etcd holds of the names a model uses.
struct AuthView {
  bool enabled = false;
  std::map<std::string, std::vector<std::string>> users;  // the users that exist -> their roles
  std::map<std::string, std::vector<authpb::Permission>> roles;  // the roles that exist
};

struct AuthChange {
  enum class Kind { kAddRole, kGrantPermission, kAddUser, kGrantRole, kEnable };
  Kind kind = Kind::kEnable;
  std::string name;               // the role (kAddRole, kGrantPermission) or the user
  std::string role;               // kGrantRole: the role granted
  authpb::Permission permission;  // kGrantPermission
  bool password = false;          // kAddUser: with a password (else --no-password)
};

// The changes that take `view` to `model`, in an order etcd accepts: roles, their permissions,
// users, their roles, then auth on. A permission is there when the role has one for the same key
// and range end whose type includes it (etcd would overwrite the type, so a wider one is never
// narrowed). Empty when nothing is missing.
std::vector<AuthChange> planAuthChanges(const AuthModel& model, const AuthView& view);

// "read on key \"health\"", "readwrite on keys with prefix \"/service/\"" (for progress lines).
std::string describePermission(const authpb::Permission& permission);

// ---- the flows ---------------------------------------------------------------------------------

// The refusal of an auth setup for the fleet at `inventory_path` when it has no CA (its members
// serve plaintext): checked before anything changes, also by `bootstrap --auth`.
Result<void> checkFleetCanUseAuth(const std::string& inventory_path);

struct AuthSetupRequest {
  Inventory inventory;                 // the fleet's: its members name the agent users
  std::vector<std::string> endpoints;  // --endpoints; empty: the inventory's client URLs
  bool agents_root = false;            // --agents-root: the agent users get the root role too
};

struct AuthSetupReport {
  bool changed = false;       // something was created or granted, or auth turned on
  bool enabled_now = false;   // auth was off and this run turned it on
  std::string password_file;  // root's password: <inventory dir>/pki/root.password
  bool password_created = false;
  // The root user existed before and its password is not in password_file.
  bool root_password_unknown = false;
  // Members whose agents do work etcd 3.4 lets only root do ([snapshot] schedule, [defrag] auto,
  // [nospace] recover) while their users lack root (no --agents-root): that work fails with
  // permission denied, and a warning said so. Agents that do not answer are not counted.
  std::vector<std::string> agents_short_of_root;
};

// Refuses (kFailedPrecondition, nothing changed) a fleet without a CA, a cluster reached in
// plaintext, or one that does not require client certificates; kUnavailable when the cluster
// cannot be reached. With auth on, reading the users needs the root role: etcd-fleet's
// certificate has it once a setup ran, else pass --user root.
Result<AuthSetupReport> setupAuth(const Env& env, const AuthSetupRequest& request);

// For the flows that add a member (member add --host, member replace): the user of the new
// member's agent, made before the member joins when the cluster has auth on, so that its health
// probes and removal checks are served as its own from its first start. It gets the root role
// too when the agent user of one of `peers` (the fleet's other members) has it (auth setup
// --agents-root). nullopt when auth is off (nothing to do: auth setup makes the users when it
// runs); else what was done, as a line.
Result<std::optional<std::string>> ensureAgentUser(const Env& env,
                                                   const std::vector<std::string>& endpoints,
                                                   const std::string& member,
                                                   const std::vector<std::string>& peers);

}  // namespace etcdagent::fleet
