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

namespace {

void changeSimple(const Output& o, const google::protobuf::Message&,
                  const etcdserverpb::ResponseHeader&, std::string_view line) {
  o.out << line << "\n";
}

void changeJson(const Output& o, const google::protobuf::Message& response,
                const etcdserverpb::ResponseHeader&, std::string_view) {
  o.out << toGoJson(response) << "\n";
}

void changeFields(const Output& o, const google::protobuf::Message&,
                  const etcdserverpb::ResponseHeader& header, std::string_view) {
  printHeaderFields(o.out, header);
}

void roleGetSimple(const Output& o, std::string_view role,
                   const etcdserverpb::AuthRoleGetResponse& r) {
  o.out << "Role " << role << "\nKV Read:\n";
  for (const auto& p : r.perm()) {
    if (grantsRead(p)) o.out << "\t" << permissionText(p) << "\n";
  }
  o.out << "KV Write:\n";
  for (const auto& p : r.perm()) {
    if (grantsWrite(p)) o.out << "\t" << permissionText(p) << "\n";
  }
}

void roleGetJson(const Output& o, std::string_view, const etcdserverpb::AuthRoleGetResponse& r) {
  o.out << toGoJson(r) << "\n";
}

void roleGetFields(const Output& o, std::string_view, const etcdserverpb::AuthRoleGetResponse& r) {
  printHeaderFields(o.out, r.header());
  for (const auto& p : r.perm()) {
    // Go's fmt.Println(`"PermType" : `, name): the literal's space plus Println's separator.
    o.out << "\"PermType\" :  " << permTypeName(p.permtype()) << "\n";
    o.out << "\"Key\" : " << goQuote(p.key()) << "\n";
    o.out << "\"RangeEnd\" : " << goQuote(p.range_end()) << "\n";
  }
}

void roleListSimple(const Output& o, const etcdserverpb::AuthRoleListResponse& r) {
  for (const auto& role : r.roles()) o.out << role << "\n";
}

void roleListFields(const Output& o, const etcdserverpb::AuthRoleListResponse& r) {
  printHeaderFields(o.out, r.header());
  o.out << "\"Roles\" :";
  for (const auto& role : r.roles()) o.out << " " << goQuote(role);
  o.out << "\n";
}

void userGetSimple(const Output& o, std::string_view user,
                   const etcdserverpb::AuthUserGetResponse& r) {
  o.out << "User: " << user << "\nRoles:";
  for (const auto& role : r.roles()) o.out << " " << role;
  o.out << "\n";
}

void userGetJson(const Output& o, std::string_view, const etcdserverpb::AuthUserGetResponse& r) {
  o.out << toGoJson(r) << "\n";
}

void userListSimple(const Output& o, const etcdserverpb::AuthUserListResponse& r) {
  for (const auto& user : r.users()) o.out << user << "\n";
}

void authStatusSimple(const Output& o, bool enabled, std::optional<std::uint64_t> revision,
                      const etcdserverpb::ResponseHeader*) {
  o.out << "Authentication Status: " << (enabled ? "true" : "false") << "\n";
  if (revision) o.out << "AuthRevision: " << *revision << "\n";
}

void authStatusJson(const Output& o, bool enabled, std::optional<std::uint64_t> revision,
                    const etcdserverpb::ResponseHeader* header) {
  etcdserverpb::AuthStatusResponse r;
  if (header != nullptr) *r.mutable_header() = *header;
  r.set_enabled(enabled);
  if (revision) r.set_authrevision(*revision);
  o.out << toGoJson(r) << "\n";
}

// Kept constexpr here: printUserGetDetail takes its formats.
constexpr Printer<std::string_view, const etcdserverpb::AuthRoleGetResponse&> kRoleGet{{
    .simple = roleGetSimple,
    .json = roleGetJson,
    .fields = roleGetFields,
}};

void userGetDetail(const Output& o, std::string_view user,
                   const etcdserverpb::AuthUserGetResponse& r,
                   const std::vector<etcdserverpb::AuthRoleGetResponse>& roles) {
  o.out << "User: " << user << "\n";
  for (int i = 0; i < r.roles_size() && static_cast<std::size_t>(i) < roles.size(); ++i) {
    o.out << "\n";
    kRoleGet(o, r.roles(i), roles[static_cast<std::size_t>(i)]);
  }
}

}  // namespace

constinit const Printer<const google::protobuf::Message&, const etcdserverpb::ResponseHeader&,
                        std::string_view>
    printAuthChange{{
        .simple = changeSimple,
        .json = changeJson,
        .fields = changeFields,
    }};

constinit const Printer<std::string_view, const etcdserverpb::AuthRoleGetResponse&> printRoleGet =
    kRoleGet;

constinit const Printer<const etcdserverpb::AuthRoleListResponse&> printRoleList{{
    .simple = roleListSimple,
    .json = printJson<etcdserverpb::AuthRoleListResponse>,
    .fields = roleListFields,
}};

constinit const Printer<std::string_view, const etcdserverpb::AuthUserGetResponse&> printUserGet{{
    .simple = userGetSimple,
    .json = userGetJson,
}};

constinit const Printer<const etcdserverpb::AuthUserListResponse&> printUserList{{
    .simple = userListSimple,
    .json = printJson<etcdserverpb::AuthUserListResponse>,
}};

using UserGetDetailPrinter = Printer<std::string_view, const etcdserverpb::AuthUserGetResponse&,
                                     const std::vector<etcdserverpb::AuthRoleGetResponse>&>;
constinit const UserGetDetailPrinter printUserGetDetail =
    UserGetDetailPrinter::like(kRoleGet, userGetDetail);

constinit const Printer<bool, std::optional<std::uint64_t>, const etcdserverpb::ResponseHeader*>
    printAuthStatus{{
        .simple = authStatusSimple,
        .json = authStatusJson,
    }};

}  // namespace etcdagent::fleet
