#include "fleetctl/output/token.hpp"

#include "fleetctl/output/json.hpp"
#include "fleetctl/output/table.hpp"

namespace etcdagent::fleet {
namespace {

std::string hostList(const TokenRecord& r) {
  std::string out;
  for (const auto& h : r.hosts) out += (out.empty() ? "" : ",") + h.host;
  return out;
}

}  // namespace

std::string renderTokenLines(const std::vector<TokenRecord>& tokens, WallTime now) {
  // etcdctl's simple lists: one comma-separated line per item, fields in the table's order.
  std::string out;
  for (const auto& r : tokens) {
    out += r.id + ", " + formatRfc3339(r.created) + ", " + formatRfc3339(r.expires) + ", " +
           std::string(tokenStateName(r.state(now))) + ", " + std::to_string(r.hosts.size()) +
           ", " + r.description + "\n";
  }
  return out;
}

std::string renderTokenTable(const std::vector<TokenRecord>& tokens, WallTime now) {
  Table t({"ID", "CREATED", "EXPIRES", "STATE", "HOSTS", "DESCRIPTION"});
  for (const auto& r : tokens) {
    const std::string hosts = hostList(r);
    t.addRow({r.id, formatRfc3339(r.created), formatRfc3339(r.expires),
              std::string(tokenStateName(r.state(now))), hosts.empty() ? "-" : hosts,
              r.description.empty() ? "-" : r.description});
  }
  return t.render();
}

std::string renderTokenJson(const std::vector<TokenRecord>& tokens, WallTime now) {
  std::string items;
  for (const auto& r : tokens) {
    std::string hosts;
    for (const auto& h : r.hosts) {
      JsonObject host;
      host.str("host", h.host).str("at", formatRfc3339(h.at));
      hosts += (hosts.empty() ? "" : ",") + host.str();
    }
    JsonObject o;
    o.str("id", r.id)
        .str("created", formatRfc3339(r.created))
        .str("expires", formatRfc3339(r.expires))
        .str("state", tokenStateName(r.state(now)))
        .str("description", r.description);
    if (r.revoked) o.str("revoked_at", formatRfc3339(r.revoked_at));
    o.raw("hosts", "[" + hosts + "]");
    items += (items.empty() ? "" : ",") + o.str();
  }
  JsonObject top;
  top.raw("tokens", "[" + items + "]");
  return top.str() + "\n";
}

namespace {

void tokenLines(const Output& o, const std::vector<TokenRecord>& tokens, WallTime now) {
  o.out << renderTokenLines(tokens, now);
}
void tokenTable(const Output& o, const std::vector<TokenRecord>& tokens, WallTime now) {
  o.out << renderTokenTable(tokens, now);
}
void tokenJson(const Output& o, const std::vector<TokenRecord>& tokens, WallTime now) {
  o.out << renderTokenJson(tokens, now);
}

}  // namespace

constinit const Printer<const std::vector<TokenRecord>&, WallTime> printTokenList{{
    .simple = tokenLines,
    .json = tokenJson,
    .table = tokenTable,
}};

}  // namespace etcdagent::fleet
