// The auth/user/role printers and the pure parts of those commands, against outputs taken from
// etcdctl 3.4.23.

#include <gtest/gtest.h>

#include <sstream>

#include "fleetctl/commands/auth.hpp"
#include "fleetctl/output/auth.hpp"

namespace etcdagent::fleet {
namespace {

const std::string kNul(1, '\0');

authpb::Permission perm(authpb::Permission::Type type, std::string key, std::string end = "") {
  authpb::Permission p;
  p.set_permtype(type);
  p.set_key(std::move(key));
  p.set_range_end(std::move(end));
  return p;
}

etcdserverpb::ResponseHeader header() {
  etcdserverpb::ResponseHeader h;
  h.set_cluster_id(15118495548433857066ULL);
  h.set_member_id(13668033151171901709ULL);
  h.set_revision(1);
  h.set_raft_term(2);
  return h;
}

const char kHeaderFields[] =
    "\"ClusterID\" : 15118495548433857066\n"
    "\"MemberID\" : 13668033151171901709\n"
    "\"Revision\" : 1\n"
    "\"RaftTerm\" : 2\n";

const char kHeaderJson[] =
    "{\"cluster_id\":15118495548433857066,\"member_id\":13668033151171901709,\"revision\":1,"
    "\"raft_term\":2}";

struct Printed {
  std::ostringstream out;
  std::ostringstream err;
  Output output(OutputFormat f) { return Output{out, err, f, false}; }
};

// The role etcdctl printed in the exploration: every kind of permission.
etcdserverpb::AuthRoleGetResponse sampleRole() {
  etcdserverpb::AuthRoleGetResponse r;
  *r.mutable_header() = header();
  *r.add_perm() = perm(authpb::Permission::READ, kNul, kNul);
  *r.add_perm() = perm(authpb::Permission::READWRITE, "a", "b");
  *r.add_perm() = perm(authpb::Permission::READ, "fk", kNul);
  *r.add_perm() = perm(authpb::Permission::READWRITE, "foo");
  *r.add_perm() = perm(authpb::Permission::READ, "foo1", "foo5");
  *r.add_perm() = perm(authpb::Permission::WRITE, "pre", "prf");
  return r;
}

TEST(AuthPrinter, PermissionTextNamesKeysRangesPrefixesAndOpenEnds) {
  EXPECT_EQ(permissionText(perm(authpb::Permission::READ, "foo")), "foo");
  EXPECT_EQ(permissionText(perm(authpb::Permission::READ, "foo1", "foo5")), "[foo1, foo5)");
  EXPECT_EQ(permissionText(perm(authpb::Permission::READ, "pre", "prf")),
            "[pre, prf) (prefix pre)");
  EXPECT_EQ(permissionText(perm(authpb::Permission::READ, "fk", kNul)), "[fk, <open ended>");
  EXPECT_EQ(permissionText(perm(authpb::Permission::READ, kNul, kNul)),
            "[" + kNul + ", <open ended>");
  // A prefix of all-0xff bytes has no end: etcd stores "\0", and it is still that prefix.
  EXPECT_EQ(permissionText(perm(authpb::Permission::READ, "\xff", kNul)),
            "[\xff, <open ended> (prefix \xff)");
}

TEST(AuthPrinter, RoleGetSimpleListsReadThenWrite) {
  Printed p;
  printRoleGet(p.output(OutputFormat::kSimple), "foo", sampleRole());
  EXPECT_EQ(p.out.str(), "Role foo\nKV Read:\n\t[" + kNul +
                             ", <open ended>\n\t[a, b) (prefix a)\n\t[fk, <open ended>\n\tfoo\n"
                             "\t[foo1, foo5)\nKV Write:\n\t[a, b) (prefix a)\n\tfoo\n"
                             "\t[pre, prf) (prefix pre)\n");
}

TEST(AuthPrinter, RoleGetWithoutPermissionsPrintsBothHeadings) {
  Printed p;
  printRoleGet(p.output(OutputFormat::kSimple), "empty", {});
  EXPECT_EQ(p.out.str(), "Role empty\nKV Read:\nKV Write:\n");
}

TEST(AuthPrinter, RoleGetJsonIsGoEncodingOfTheResponse) {
  Printed p;
  printRoleGet(p.output(OutputFormat::kJson), "foo", sampleRole());
  EXPECT_EQ(p.out.str(), std::string("{\"header\":") + kHeaderJson +
                             ",\"perm\":[{\"key\":\"AA==\",\"range_end\":\"AA==\"},"
                             "{\"permType\":2,\"key\":\"YQ==\",\"range_end\":\"Yg==\"},"
                             "{\"key\":\"Zms=\",\"range_end\":\"AA==\"},"
                             "{\"permType\":2,\"key\":\"Zm9v\"},"
                             "{\"key\":\"Zm9vMQ==\",\"range_end\":\"Zm9vNQ==\"},"
                             "{\"permType\":1,\"key\":\"cHJl\",\"range_end\":\"cHJm\"}]}\n");
}

TEST(AuthPrinter, RoleGetFieldsQuotesKeysAndNamesTypes) {
  Printed p;
  etcdserverpb::AuthRoleGetResponse r;
  *r.mutable_header() = header();
  *r.add_perm() = perm(authpb::Permission::READ, kNul, kNul);
  *r.add_perm() = perm(authpb::Permission::READWRITE, "foo");
  printRoleGet(p.output(OutputFormat::kFields), "foo", r);
  EXPECT_EQ(p.out.str(), std::string(kHeaderFields) +
                             "\"PermType\" :  READ\n\"Key\" : \"\\x00\"\n"
                             "\"RangeEnd\" : \"\\x00\"\n"
                             "\"PermType\" :  READWRITE\n\"Key\" : \"foo\"\n"
                             "\"RangeEnd\" : \"\"\n");
}

TEST(AuthPrinter, RoleListInEachFormat) {
  etcdserverpb::AuthRoleListResponse r;
  *r.mutable_header() = header();
  r.add_roles("foo");
  r.add_roles("root");
  Printed simple;
  printRoleList(simple.output(OutputFormat::kSimple), r);
  EXPECT_EQ(simple.out.str(), "foo\nroot\n");
  Printed json;
  printRoleList(json.output(OutputFormat::kJson), r);
  EXPECT_EQ(json.out.str(),
            std::string("{\"header\":") + kHeaderJson + ",\"roles\":[\"foo\",\"root\"]}\n");
  Printed fields;
  printRoleList(fields.output(OutputFormat::kFields), r);
  EXPECT_EQ(fields.out.str(), std::string(kHeaderFields) + "\"Roles\" : \"foo\" \"root\"\n");
  Printed none;
  printRoleList(none.output(OutputFormat::kFields), {});
  EXPECT_EQ(none.out.str(),
            "\"ClusterID\" : 0\n\"MemberID\" : 0\n\"Revision\" : 0\n\"RaftTerm\" : 0\n"
            "\"Roles\" :\n");
}

TEST(AuthPrinter, UserGetListsRolesOnOneLine) {
  etcdserverpb::AuthUserGetResponse r;
  *r.mutable_header() = header();
  Printed none;
  printUserGet(none.output(OutputFormat::kSimple), "u2", r);
  EXPECT_EQ(none.out.str(), "User: u2\nRoles:\n");
  r.add_roles("foo");
  r.add_roles("root");
  Printed some;
  printUserGet(some.output(OutputFormat::kSimple), "foo", r);
  EXPECT_EQ(some.out.str(), "User: foo\nRoles: foo root\n");
  Printed json;
  printUserGet(json.output(OutputFormat::kJson), "foo", r);
  EXPECT_EQ(json.out.str(),
            std::string("{\"header\":") + kHeaderJson + ",\"roles\":[\"foo\",\"root\"]}\n");
}

TEST(AuthPrinter, UserListInSimpleAndJson) {
  etcdserverpb::AuthUserListResponse r;
  *r.mutable_header() = header();
  r.add_users("foo");
  r.add_users("root");
  Printed simple;
  printUserList(simple.output(OutputFormat::kSimple), r);
  EXPECT_EQ(simple.out.str(), "foo\nroot\n");
  Printed json;
  printUserList(json.output(OutputFormat::kJson), r);
  EXPECT_EQ(json.out.str(),
            std::string("{\"header\":") + kHeaderJson + ",\"users\":[\"foo\",\"root\"]}\n");
}

TEST(AuthPrinter, ChangesPrintALineTheResponseOrTheHeader) {
  etcdserverpb::AuthUserAddResponse r;
  *r.mutable_header() = header();
  Printed simple;
  printAuthChange(simple.output(OutputFormat::kSimple), r, r.header(), "User foo created");
  EXPECT_EQ(simple.out.str(), "User foo created\n");
  Printed json;
  printAuthChange(json.output(OutputFormat::kJson), r, r.header(), "User foo created");
  EXPECT_EQ(json.out.str(), std::string("{\"header\":") + kHeaderJson + "}\n");
  Printed fields;
  printAuthChange(fields.output(OutputFormat::kFields), r, r.header(), "User foo created");
  EXPECT_EQ(fields.out.str(), kHeaderFields);
}

TEST(AuthPrinter, RevokedPermissionTextAsEtcdctlWordsIt) {
  EXPECT_EQ(revokedPermissionText("foo", "foo", ""),
            "Permission of key foo is revoked from role foo");
  EXPECT_EQ(revokedPermissionText("foo", "foo1", "foo5"),
            "Permission of range [foo1, foo5) is revoked from role foo");
  EXPECT_EQ(revokedPermissionText("foo", "fk", kNul),
            "Permission of range [fk, <open ended> is revoked from role foo");
  EXPECT_EQ(revokedPermissionText("foo", "", kNul),
            "Permission of range [, <open ended> is revoked from role foo");
}

TEST(AuthPrinter, AuthStatusLikeEtcdctl35) {
  Printed with;
  printAuthStatus(with.output(OutputFormat::kSimple), true, 7, nullptr);
  EXPECT_EQ(with.out.str(), "Authentication Status: true\nAuthRevision: 7\n");
  Printed without;
  printAuthStatus(without.output(OutputFormat::kSimple), false, std::nullopt, nullptr);
  EXPECT_EQ(without.out.str(), "Authentication Status: false\n");
  Printed json;
  auto h = header();
  printAuthStatus(json.output(OutputFormat::kJson), true, 7, &h);
  EXPECT_EQ(json.out.str(),
            std::string("{\"header\":") + kHeaderJson + ",\"enabled\":true,\"authRevision\":7}\n");
  Printed probed;
  printAuthStatus(probed.output(OutputFormat::kJson), true, std::nullopt, nullptr);
  EXPECT_EQ(probed.out.str(), "{\"enabled\":true}\n");
}

TEST(AuthCommands, PermissionTypesInAnyCase) {
  EXPECT_EQ(parsePermissionType("read"), authpb::Permission::READ);
  EXPECT_EQ(parsePermissionType("Write"), authpb::Permission::WRITE);
  EXPECT_EQ(parsePermissionType("READWRITE"), authpb::Permission::READWRITE);
  auto bad = parsePermissionType("bogus");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "invalid permission type: bogus");
}

TEST(AuthCommands, PermissionRangeFromKeyEndkeyAndFlags) {
  auto range = [](std::vector<std::string> args, bool prefix, bool fromKey) {
    auto r = permissionRange(args, prefix, fromKey);
    return r ? r->key + "|" + r->range_end : "error: " + r.error().message;
  };
  EXPECT_EQ(range({"foo"}, false, false), "foo|");
  EXPECT_EQ(range({"foo1", "foo5"}, false, false), "foo1|foo5");
  EXPECT_EQ(range({"a", "b", "c"}, false, false), "a|b");
  EXPECT_EQ(range({"pre"}, true, false), "pre|prf");
  EXPECT_EQ(range({"fk"}, false, true), "fk|" + kNul);
  EXPECT_EQ(range({""}, true, false), kNul + "|" + kNul);
  EXPECT_EQ(range({""}, false, true), kNul + "|" + kNul);
  EXPECT_EQ(range({""}, false, false), kNul + "|");
  EXPECT_EQ(range({"", "z"}, false, false), kNul + "|");
  EXPECT_EQ(range({"k"}, true, true),
            "error: --from-key and --prefix flags are mutually exclusive");
  EXPECT_EQ(range({""}, true, true), "error: --from-key and --prefix flags are mutually exclusive");
  EXPECT_EQ(range({"k", "e"}, true, false), "error: unexpected endkey argument with --prefix flag");
  EXPECT_EQ(range({"k", "e"}, true, true), "error: unexpected endkey argument with --prefix flag");
  EXPECT_EQ(range({"k", "e"}, false, true),
            "error: unexpected endkey argument with --from-key flag");
}

TEST(AuthCommands, UserAddTakesThePasswordFromTheRightPlace) {
  auto plan = [](std::string_view arg, std::string_view flag, bool none, bool interactive) {
    auto p = planUserAdd(arg, flag, none, interactive);
    if (!p) return "error: " + p.error().message;
    const char* source[] = {"given", "stdin", "prompt", "none"};
    return p->name + "|" + p->password + "|" + source[static_cast<int>(p->source)];
  };
  EXPECT_EQ(plan("foo", "", false, true), "foo||prompt");
  EXPECT_EQ(plan("foo", "", false, false), "foo||stdin");
  EXPECT_EQ(plan("root:123", "", false, true), "root|123|given");
  EXPECT_EQ(plan("root:a:b", "", false, false), "root|a:b|given");
  EXPECT_EQ(plan("a:b", "np", false, true), "a:b|np|given");
  EXPECT_EQ(plan("a:b", "np", true, true), "a:b||none");
  EXPECT_EQ(plan(":secret", "", false, true), "error: empty user name is not allowed");
}

TEST(AuthCommands, ScanWordReadsTheFirstWordOfTheFirstLine) {
  auto scan = [](const std::string& text) {
    std::istringstream in(text);
    std::string word = scanWord(in);
    std::string rest(std::istreambuf_iterator<char>(in), {});
    return word + "|" + rest;
  };
  EXPECT_EQ(scan("pass1\n"), "pass1|");
  EXPECT_EQ(scan("  two words\n"), "two|words\n");
  EXPECT_EQ(scan("tab\tsep"), "tab|sep");
  EXPECT_EQ(scan("crlf\r\nnext"), "crlf|\nnext");
  EXPECT_EQ(scan("\nlater\n"), "|later\n");
  EXPECT_EQ(scan("  \r\nlater"), "|later");
  EXPECT_EQ(scan(""), "|");
  EXPECT_EQ(scan("no-newline"), "no-newline|");
}

}  // namespace
}  // namespace etcdagent::fleet
