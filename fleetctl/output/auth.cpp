#include "fleetctl/output/auth.hpp"

#include <ostream>

#include "common/encoding.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/json.hpp"
#include "fleetctl/output/kv.hpp"

namespace etcdagent::fleet {
namespace {

bool grantsRead(const authpb::Permission& p) {
  return p.permtype() == authpb::Permission::READ || p.permtype() == authpb::Permission::READWRITE;
}

bool grantsWrite(const authpb::Permission& p) {
  return p.permtype() == authpb::Permission::WRITE || p.permtype() == authpb::Permission::READWRITE;
}

std::string_view permTypeName(authpb::Permission::Type t) {
  switch (t) {
    case authpb::Permission::READ: return "READ";
    case authpb::Permission::WRITE: return "WRITE";
    case authpb::Permission::READWRITE: return "READWRITE";
    default: break;
  }
  return "UNKNOWN";
}

}  // namespace

std::string permissionText(const authpb::Permission& perm) {
  const std::string& key = perm.key();
  const std::string& end = perm.range_end();
  if (end.empty()) return key;
  // etcd stores an open end as "\0"; a range that is exactly a prefix is labelled as such.
  std::string text = end != std::string_view("\0", 1) ? "[" + key + ", " + end + ")"
                                                      : "[" + key + ", <open ended>";
  if (prefixRangeEnd(key) == end) text += " (prefix " + key + ")";
  return text;
}

std::string revokedPermissionText(std::string_view role, std::string_view key,
                                  std::string_view end) {
  std::string r(role);
  std::string k(key);
  if (end.empty()) return "Permission of key " + k + " is revoked from role " + r;
  if (end != std::string_view("\0", 1)) {
    return "Permission of range [" + k + ", " + std::string(end) + ") is revoked from role " + r;
  }
  return "Permission of range [" + k + ", <open ended> is revoked from role " + r;
}

void printAuthChange(const Output& o, const google::protobuf::Message& response,
                     const etcdserverpb::ResponseHeader& header, std::string_view line) {
  switch (o.format) {
    case OutputFormat::kSimple: o.out << line << "\n"; return;
    case OutputFormat::kJson: o.out << toGoJson(response) << "\n"; return;
    case OutputFormat::kFields: printHeaderFields(o.out, header); return;
    case OutputFormat::kTable: break;
  }
}

void printRoleGet(const Output& o, std::string_view role,
                  const etcdserverpb::AuthRoleGetResponse& r) {
  switch (o.format) {
    case OutputFormat::kSimple:
      o.out << "Role " << role << "\nKV Read:\n";
      for (const auto& p : r.perm()) {
        if (grantsRead(p)) o.out << "\t" << permissionText(p) << "\n";
      }
      o.out << "KV Write:\n";
      for (const auto& p : r.perm()) {
        if (grantsWrite(p)) o.out << "\t" << permissionText(p) << "\n";
      }
      return;
    case OutputFormat::kJson: o.out << toGoJson(r) << "\n"; return;
    case OutputFormat::kFields:
      printHeaderFields(o.out, r.header());
      for (const auto& p : r.perm()) {
        // Go's fmt.Println(`"PermType" : `, name): the literal's space plus Println's separator.
        o.out << "\"PermType\" :  " << permTypeName(p.permtype()) << "\n";
        o.out << "\"Key\" : " << goQuote(p.key()) << "\n";
        o.out << "\"RangeEnd\" : " << goQuote(p.range_end()) << "\n";
      }
      return;
    case OutputFormat::kTable: break;
  }
}

void printRoleList(const Output& o, const etcdserverpb::AuthRoleListResponse& r) {
  switch (o.format) {
    case OutputFormat::kSimple:
      for (const auto& role : r.roles()) o.out << role << "\n";
      return;
    case OutputFormat::kJson: o.out << toGoJson(r) << "\n"; return;
    case OutputFormat::kFields:
      printHeaderFields(o.out, r.header());
      o.out << "\"Roles\" :";
      for (const auto& role : r.roles()) o.out << " " << goQuote(role);
      o.out << "\n";
      return;
    case OutputFormat::kTable: break;
  }
}

void printUserGet(const Output& o, std::string_view user,
                  const etcdserverpb::AuthUserGetResponse& r) {
  switch (o.format) {
    case OutputFormat::kSimple:
      o.out << "User: " << user << "\nRoles:";
      for (const auto& role : r.roles()) o.out << " " << role;
      o.out << "\n";
      return;
    case OutputFormat::kJson: o.out << toGoJson(r) << "\n"; return;
    case OutputFormat::kFields:
    case OutputFormat::kTable: break;
  }
}

void printUserList(const Output& o, const etcdserverpb::AuthUserListResponse& r) {
  switch (o.format) {
    case OutputFormat::kSimple:
      for (const auto& user : r.users()) o.out << user << "\n";
      return;
    case OutputFormat::kJson: o.out << toGoJson(r) << "\n"; return;
    case OutputFormat::kFields:
    case OutputFormat::kTable: break;
  }
}

void printAuthStatus(const Output& o, bool enabled, std::optional<std::uint64_t> revision,
                     const etcdserverpb::ResponseHeader* header) {
  switch (o.format) {
    case OutputFormat::kSimple:
      o.out << "Authentication Status: " << (enabled ? "true" : "false") << "\n";
      if (revision) o.out << "AuthRevision: " << *revision << "\n";
      return;
    case OutputFormat::kJson: {
      etcdserverpb::AuthStatusResponse r;
      if (header != nullptr) *r.mutable_header() = *header;
      r.set_enabled(enabled);
      if (revision) r.set_authrevision(*revision);
      o.out << toGoJson(r) << "\n";
      return;
    }
    case OutputFormat::kFields:
    case OutputFormat::kTable: break;
  }
}

}  // namespace etcdagent::fleet
