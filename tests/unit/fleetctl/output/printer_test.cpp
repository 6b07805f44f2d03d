// The shared printers: the format table every printer is (Printer), Go encoding/json of protobuf
// messages, tables, KV output in each format.

#include "fleetctl/output/printer.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/agent.hpp"
#include "fleetctl/output/auth.hpp"
#include "fleetctl/output/cluster.hpp"
#include "fleetctl/output/json.hpp"
#include "fleetctl/output/kv.hpp"
#include "fleetctl/output/lease.hpp"
#include "fleetctl/output/maintenance.hpp"
#include "fleetctl/output/status.hpp"
#include "fleetctl/output/table.hpp"
#include "fleetctl/output/txn.hpp"
#include "fleetctl/output/watch.hpp"

namespace etcdagent::fleet {
namespace {

etcdserverpb::RangeResponse sampleRange() {
  etcdserverpb::RangeResponse r;
  auto* h = r.mutable_header();
  h->set_cluster_id(14443903163313418560ULL);
  h->set_member_id(11417610130673999598ULL);
  h->set_revision(2);
  h->set_raft_term(2);
  auto* kv = r.add_kvs();
  kv->set_key("foo");
  kv->set_value("bar");
  kv->set_create_revision(2);
  kv->set_mod_revision(2);
  kv->set_version(1);
  r.set_count(1);
  return r;
}

void sayA(const Output& o, int n) {
  o.out << "simple " << n;
}
void sayB(const Output& o, int n) {
  o.out << "json " << n;
}

TEST(Printer, PrintsTheFormOfTheFormatAndSupportsNothingElse) {
  constexpr Printer<int> p{{.simple = sayA, .json = sayB}};
  static_assert(p.supports(OutputFormat::kSimple) && p.supports(OutputFormat::kJson));
  static_assert(!p.supports(OutputFormat::kTable) && !p.supports(OutputFormat::kFields));
  std::ostringstream out, err;
  p(Output{out, err, OutputFormat::kJson}, 7);
  EXPECT_EQ(out.str(), "json 7");
  EXPECT_EQ(err.str(), "");
}

TEST(Printer, AFormatWithoutAFormIsRefusedAloudNotPrintedAsNothing) {
  constexpr Printer<int> p{{.simple = sayA}};
  std::ostringstream out, err;
  p(Output{out, err, OutputFormat::kTable}, 7);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(err.str(), "table not supported as output format\n");
}

TEST(Printer, LikeTakesTheFormatsOfAnotherPrinter) {
  constexpr Printer<int> inner{{.simple = sayA, .fields = sayB}};
  constexpr auto outer = Printer<int>::like(inner, sayB);
  static_assert(outer.supports(OutputFormat::kSimple) && outer.supports(OutputFormat::kFields));
  static_assert(!outer.supports(OutputFormat::kJson) && !outer.supports(OutputFormat::kTable));
  std::ostringstream out, err;
  outer(Output{out, err, OutputFormat::kSimple}, 1);
  EXPECT_EQ(out.str(), "json 1");
}

// The formats each printer has, and so each command accepts with -w: etcdctl 3.4's.
struct Formats {
  bool simple, json, table, fields;
};
template <class... A>
Formats formatsOf(const Printer<A...>& p) {
  return {p.supports(OutputFormat::kSimple), p.supports(OutputFormat::kJson),
          p.supports(OutputFormat::kTable), p.supports(OutputFormat::kFields)};
}
bool operator==(const Formats& a, const Formats& b) {
  return a.simple == b.simple && a.json == b.json && a.table == b.table && a.fields == b.fields;
}
void PrintTo(const Formats& f, std::ostream* os) {
  *os << (f.simple ? "simple " : "") << (f.json ? "json " : "") << (f.table ? "table " : "")
      << (f.fields ? "fields" : "");
}

TEST(Printer, EveryCommandsFormatsAreEtcdctls) {
  const Formats noTable{true, true, false, true};
  const Formats all{true, true, true, true};
  const Formats simpleJson{true, true, false, false};
  EXPECT_EQ(formatsOf(printGet), noTable);
  EXPECT_EQ(formatsOf(printPut), noTable);
  EXPECT_EQ(formatsOf(printDel), noTable);
  EXPECT_EQ(formatsOf(printTxn), noTable);
  EXPECT_EQ(formatsOf(printWatchResponse), noTable);
  EXPECT_EQ(formatsOf(printLeaseGrant), noTable);
  EXPECT_EQ(formatsOf(printLeaseRevoke), noTable);
  EXPECT_EQ(formatsOf(printLeaseKeepAlive), noTable);
  EXPECT_EQ(formatsOf(printLeaseTimeToLive), noTable);
  EXPECT_EQ(formatsOf(printLeaseList), noTable);
  EXPECT_EQ(formatsOf(printLeaseExpired), formatsOf(printLeaseKeepAlive));
  EXPECT_EQ(formatsOf(printAlarms), noTable);
  EXPECT_EQ(formatsOf(printSnapshotStatus), all);
  EXPECT_EQ(formatsOf(printMemberList), all);
  EXPECT_EQ(formatsOf(printEndpointHealth), all);
  EXPECT_EQ(formatsOf(printEndpointStatus), all);
  EXPECT_EQ(formatsOf(printEndpointHashKv), all);
  EXPECT_EQ(formatsOf(printMemberAdd), simpleJson);
  EXPECT_EQ(formatsOf(printMemberRemove), simpleJson);
  EXPECT_EQ(formatsOf(printMemberUpdate), simpleJson);
  EXPECT_EQ(formatsOf(printMemberPromote), simpleJson);
  EXPECT_EQ(formatsOf(printMoveLeader), simpleJson);
  EXPECT_EQ(formatsOf(printAuthChange), noTable);
  EXPECT_EQ(formatsOf(printRoleGet), noTable);
  EXPECT_EQ(formatsOf(printRoleList), noTable);
  EXPECT_EQ(formatsOf(printUserGet), simpleJson);
  EXPECT_EQ(formatsOf(printUserList), simpleJson);
  EXPECT_EQ(formatsOf(printUserGetDetail), formatsOf(printRoleGet));
  EXPECT_EQ(formatsOf(printAuthStatus), simpleJson);
}

TEST(Printer, TheFleetCommandsFormats) {
  const Formats noFields{true, true, true, false};
  EXPECT_EQ(formatsOf(printFleetStatus), noFields);
  EXPECT_EQ(formatsOf(printAgentStatus), noFields);
  EXPECT_EQ(formatsOf(printDiscoveryToken), (Formats{true, true, false, false}));
}

TEST(GoJson, MatchesEtcdctlForARangeResponse) {
  // Captured from etcdctl 3.4.23: `etcdctl get foo -w json`.
  EXPECT_EQ(toGoJson(sampleRange()),
            "{\"header\":{\"cluster_id\":14443903163313418560,\"member_id\":11417610130673999598,"
            "\"revision\":2,\"raft_term\":2},\"kvs\":[{\"key\":\"Zm9v\",\"create_revision\":2,"
            "\"mod_revision\":2,\"version\":1,\"value\":\"YmFy\"}],\"count\":1}");
}

TEST(GoJson, OmitsZeroValuesAndRendersOneofsAsGoInterfaces) {
  etcdserverpb::TxnResponse t;
  t.mutable_header()->set_revision(5);
  t.add_responses()->mutable_response_range()->mutable_header()->set_revision(5);
  EXPECT_EQ(toGoJson(t),
            "{\"header\":{\"revision\":5},\"responses\":[{\"Response\":{\"ResponseRange\":"
            "{\"header\":{\"revision\":5}}}}]}");
  EXPECT_EQ(toGoJson(etcdserverpb::DeleteRangeResponse{}), "{}");
}

TEST(GoJson, UsesProtoFieldNamesAsEtcdctlDoes) {
  etcdserverpb::MemberListResponse m;
  auto* member = m.add_members();
  member->set_id(1);
  member->set_name("e1");
  member->add_peerurls("http://127.0.0.1:2380");
  EXPECT_EQ(toGoJson(m),
            "{\"members\":[{\"ID\":1,\"name\":\"e1\",\"peerURLs\":[\"http://127.0.0.1:2380\"]}]}");
}

TEST(GoJson, CamelCasesLikeProtocGenGo) {
  EXPECT_EQ(goCamelCase("response_range"), "ResponseRange");
  EXPECT_EQ(goCamelCase("request"), "Request");
}

TEST(Table, DrawsLikeTablewriter) {
  Table t({"ID", "STATUS", "NAME"});
  t.addRow({"9e737febb6b99eee", "started", "e1"});
  EXPECT_EQ(t.render(),
            "+------------------+---------+------+\n"
            "|        ID        | STATUS  | NAME |\n"
            "+------------------+---------+------+\n"
            "| 9e737febb6b99eee | started |   e1 |\n"
            "+------------------+---------+------+\n");
}

TEST(KvPrinter, SimpleFieldsAndHex) {
  std::ostringstream out, err;
  printGet(Output{out, err, OutputFormat::kSimple, false}, sampleRange(), false);
  EXPECT_EQ(out.str(), "foo\nbar\n");
  std::ostringstream hex;
  printGet(Output{hex, err, OutputFormat::kSimple, true}, sampleRange(), true);
  EXPECT_EQ(hex.str(), "\\x62\\x61\\x72\n");
  std::ostringstream fields;
  printGet(Output{fields, err, OutputFormat::kFields, false}, sampleRange(), false);
  EXPECT_EQ(fields.str(),
            "\"ClusterID\" : 14443903163313418560\n\"MemberID\" : 11417610130673999598\n"
            "\"Revision\" : 2\n\"RaftTerm\" : 2\n\"Key\" : \"foo\"\n\"CreateRevision\" : 2\n"
            "\"ModRevision\" : 2\n\"Version\" : 1\n\"Value\" : \"bar\"\n\"Lease\" : 0\n"
            "\"More\" : false\n\"Count\" : 1\n");
}

TEST(KvPrinter, PutAndDelSimple) {
  std::ostringstream out, err;
  etcdserverpb::PutResponse p;
  printPut(Output{out, err}, p);
  EXPECT_EQ(out.str(), "OK\n");
  etcdserverpb::DeleteRangeResponse d;
  d.set_deleted(2);
  auto* kv = d.add_prev_kvs();
  kv->set_key("a");
  kv->set_value("1");
  std::ostringstream del;
  printDel(Output{del, err}, d);
  EXPECT_EQ(del.str(), "2\na\n1\n");
}

TEST(Ranges, PrefixEndIncrementsTheLastByteBelowFF) {
  EXPECT_EQ(prefixRangeEnd("foo"), "fop");
  EXPECT_EQ(prefixRangeEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefixRangeEnd("\xff"), std::string(1, '\0'));
}

}  // namespace
}  // namespace etcdagent::fleet
