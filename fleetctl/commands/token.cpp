// token create / list / revoke: the adapters of lib/fleet/token_store.hpp. Enrollment tokens let
// a new host join the fleet (docs/security.md); they live in <inventory dir>/pki/tokens.json.

#include "fleetctl/output/token.hpp"

#include <chrono>

#include "fleet/token_store.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/util.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {
namespace {

// Where the agent looks for a token (agent.toml's [enroll] token_file by default).
constexpr std::string_view kAgentTokenFile = "/etc/etcd-agent/enroll.token";

TokenStore storeFor(Context& ctx) {
  return TokenStore(tokenStorePathFor(ctx.global().fleet_path));
}

WallTime now() {
  return std::chrono::system_clock::now();
}

CommandResult runTokenCreate(Context& ctx) {
  if (!ctx.args().empty()) {
    return badArgs("token create takes no arguments (use --ttl DURATION, --description TEXT)");
  }
  auto ttl = checkTokenTtl(ctx.flags().getDuration("ttl"));
  if (!ttl) return badArgs(ttl.error().message);
  const std::string description = ctx.flags().getString("description");
  if (auto r = checkTokenDescription(description); !r) return badArgs(r.error().message);
  auto ca_hash = tls::fleetCaHash(ctx.global().fleet_path);
  if (!ca_hash) return commandError(ca_hash.error());
  auto store = storeFor(ctx);
  auto created = store.create(*ca_hash, *ttl, description, now());
  if (!created) return commandError(created.error());
  // The token alone on stdout, so that `etcd-fleet token create > enroll.token` is the file.
  ctx.out() << formatEnrollToken(created->token) << "\n";
  ctx.err() << "Token " << created->record.id << " enrolls hosts until "
            << formatRfc3339(created->record.expires) << " (" << formatDuration(*ttl)
            << "); it is shown only this once.\nOn each new host, put it in " << kAgentTokenFile
            << " (mode 0600). Revoke it with: etcd-fleet token revoke " << created->record.id
            << "\n";
  return {};
}

CommandResult runTokenList(Context& ctx) {
  if (auto r = requireFormat(ctx, printTokenList); !r) return r;
  if (!ctx.args().empty()) return badArgs("token list takes no arguments");
  auto tokens = storeFor(ctx).list();
  if (!tokens) return commandError(tokens.error());
  printTokenList(ctx.output(), *tokens, now());
  return {};
}

CommandResult runTokenRevoke(Context& ctx) {
  if (ctx.args().size() != 1) return badArgs("token revoke takes one argument: the token's ID");
  const std::string& id = ctx.args().front();
  if (id.starts_with(std::string(kEnrollTokenPrefix) + ".")) {
    // Not echoed: it holds the secret.
    return badArgs("give the token's ID (the 6 characters after " +
                   std::string(kEnrollTokenPrefix) +
                   "., as etcd-fleet token list shows them), not the whole token");
  }
  auto record = storeFor(ctx).revoke(id, now());
  if (!record) return commandError(record.error());
  switch (record->state(now())) {
    case TokenState::kExpired:
      ctx.out() << "Token " << record->id << " had expired already, at "
                << formatRfc3339(record->expires) << "\n";
      break;
    case TokenState::kRevoked:
      ctx.out() << "Token " << record->id << " revoked at " << formatRfc3339(record->revoked_at)
                << "\n";
      break;
    case TokenState::kActive: break;  // revoke() leaves no active token
  }
  return {};
}

}  // namespace

std::vector<Command> tokenCommands() {
  Command token{.name = "token", .summary = "Creates, lists and revokes enrollment tokens"};
  token.children.push_back(
      {.name = "create",
       .usage = "token create [--ttl DURATION] [--description TEXT]",
       .summary = "Creates an enrollment token and prints it",
       .description =
           "\tPrints etf1.<id>.<secret>.<ca-hash> on stdout, once: the fleet keeps only the\n"
           "\tsecret's hash. The token pins the fleet CA (pki/ca.crt beside the inventory) and\n"
           "\tenrolls any number of hosts until it expires (--ttl, default 24h, at most 168h).",
       .flags =
           [](FlagSet& f) {
             f.duration("ttl", 0, "24h", "how long the token enrolls hosts (at most 168h)")
                 .string("description", 0, "", "what the token is for, shown by token list");
           },
       .run = runTokenCreate});
  token.children.push_back({.name = "list",
                            .usage = "token list [-w simple|table|json]",
                            .summary = "Lists the enrollment tokens (never their secrets)",
                            .description = "\tID, created, expires, state (active, expired, "
                                           "revoked) and the hosts each enrolled.",
                            .run = runTokenList});
  token.children.push_back({.name = "revoke",
                            .usage = "token revoke ID",
                            .summary = "Revokes an enrollment token: it enrolls no more hosts",
                            .description = "\tHosts it enrolled keep their certificates.",
                            .run = runTokenRevoke});
  return {std::move(token)};
}

}  // namespace etcdagent::fleet
