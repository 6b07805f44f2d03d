// The cluster printers and argument checks, against outputs and messages of etcdctl 3.4.23.

#include <gtest/gtest.h>

#include <sstream>

#include "fleetctl/commands/cluster.hpp"
#include "fleetctl/output/cluster.hpp"

namespace etcdagent::fleet {
namespace {

struct Captured {
  std::ostringstream out;
  std::ostringstream err;
  Output output(OutputFormat f) { return Output{out, err, f, false}; }
};

etcdserverpb::MemberListResponse sampleMembers() {
  etcdserverpb::MemberListResponse r;
  r.mutable_header()->set_cluster_id(14224498534114068054ULL);
  r.mutable_header()->set_member_id(2286099238061035126ULL);
  r.mutable_header()->set_raft_term(2);
  auto* a = r.add_members();
  a->set_id(2286099238061035126ULL);
  a->set_name("n1");
  a->add_peerurls("http://127.0.0.1:33431");
  a->add_clienturls("http://127.0.0.1:46315");
  auto* b = r.add_members();  // added as learner, not started
  b->set_id(3597961130138679126ULL);
  b->add_peerurls("http://127.0.0.1:34331");
  b->set_islearner(true);
  return r;
}

etcdserverpb::StatusResponse sampleStatus() {
  etcdserverpb::StatusResponse s;
  s.mutable_header()->set_cluster_id(14224498534114068054ULL);
  s.mutable_header()->set_member_id(2286099238061035126ULL);
  s.mutable_header()->set_revision(1);
  s.mutable_header()->set_raft_term(2);
  s.set_version("3.4.23");
  s.set_dbsize(20480);
  s.set_leader(2286099238061035126ULL);
  s.set_raftindex(8);
  s.set_raftterm(2);
  s.set_raftappliedindex(8);
  s.set_dbsizeinuse(16384);
  return s;
}

TEST(HexId, UnpaddedAndSpacePadded) {
  EXPECT_EQ(hexId(0x9e737febb6b99eeeULL), "9e737febb6b99eee");
  EXPECT_EQ(hexId(0xabcULL), "abc");
  EXPECT_EQ(paddedHexId(0xabcULL), "             abc");  // Go's %16x pads with spaces
}

TEST(MemberListPrinter, SimpleMarksUnstartedMembers) {
  Captured c;
  printMemberList(c.output(OutputFormat::kSimple), sampleMembers());
  EXPECT_EQ(c.out.str(),
            "1fb9db250deb4e76, started, n1, http://127.0.0.1:33431, http://127.0.0.1:46315, "
            "false\n"
            "31ee8695c5943756, unstarted, , http://127.0.0.1:34331, , true\n");
}

TEST(MemberListPrinter, Table) {
  Captured c;
  printMemberList(c.output(OutputFormat::kTable), sampleMembers());
  EXPECT_EQ(
      c.out.str(),
      "+------------------+-----------+------+------------------------+------------------------+"
      "------------+\n"
      "|        ID        |  STATUS   | NAME |       PEER ADDRS       |      CLIENT ADDRS      |"
      " IS LEARNER |\n"
      "+------------------+-----------+------+------------------------+------------------------+"
      "------------+\n"
      "| 1fb9db250deb4e76 |   started |   n1 | http://127.0.0.1:33431 | http://127.0.0.1:46315 |"
      "      false |\n"
      "| 31ee8695c5943756 | unstarted |      | http://127.0.0.1:34331 |                        |"
      "       true |\n"
      "+------------------+-----------+------+------------------------+------------------------+"
      "------------+\n");
}

TEST(MemberListPrinter, JsonAndFields) {
  Captured c;
  printMemberList(c.output(OutputFormat::kJson), sampleMembers());
  EXPECT_EQ(
      c.out.str(),
      "{\"header\":{\"cluster_id\":14224498534114068054,\"member_id\":2286099238061035126,"
      "\"raft_term\":2},\"members\":[{\"ID\":2286099238061035126,\"name\":\"n1\","
      "\"peerURLs\":[\"http://127.0.0.1:33431\"],\"clientURLs\":[\"http://127.0.0.1:46315\"]},"
      "{\"ID\":3597961130138679126,\"peerURLs\":[\"http://127.0.0.1:34331\"],"
      "\"isLearner\":true}]}\n");
  Captured f;
  printMemberList(f.output(OutputFormat::kFields), sampleMembers());
  EXPECT_EQ(f.out.str(),
            "\"ClusterID\" : 14224498534114068054\n\"MemberID\" : 2286099238061035126\n"
            "\"Revision\" : 0\n\"RaftTerm\" : 2\n"
            "\"ID\" : 2286099238061035126\n\"Name\" : \"n1\"\n"
            "\"PeerURL\" : \"http://127.0.0.1:33431\"\n\"ClientURL\" : \"http://127.0.0.1:46315\"\n"
            "\"IsLearner\" : false\n\n"
            "\"ID\" : 3597961130138679126\n\"Name\" : \"\"\n"
            "\"PeerURL\" : \"http://127.0.0.1:34331\"\n\"IsLearner\" : true\n\n");
}

TEST(MemberAddPrinter, PrintsTheEnvironmentForTheNewMember) {
  etcdserverpb::MemberAddResponse r;
  r.mutable_header()->set_cluster_id(0xc567920d59ef0656ULL);
  r.mutable_member()->set_id(0x31ee8695c5943756ULL);
  r.mutable_member()->add_peerurls("http://127.0.0.1:34331");
  // The response lists members by ID; the new one (no name yet) and an older unstarted one.
  auto* a = r.add_members();
  a->set_id(0x1fb9db250deb4e76ULL);
  a->set_name("n1");
  a->add_peerurls("http://127.0.0.1:33431");
  *r.add_members() = r.member();
  auto* old = r.add_members();
  old->set_id(0x486f3d9d47ff9474ULL);
  old->add_peerurls("http://127.0.0.1:57493");
  Captured c;
  printMemberAdd(c.output(OutputFormat::kSimple), r, "newm", "http://127.0.0.1:34331");
  EXPECT_EQ(c.out.str(),
            "Member 31ee8695c5943756 added to cluster c567920d59ef0656\n\n"
            "ETCD_NAME=\"newm\"\n"
            "ETCD_INITIAL_CLUSTER=\"n1=http://127.0.0.1:33431,newm=http://127.0.0.1:34331,"
            "=http://127.0.0.1:57493\"\n"
            "ETCD_INITIAL_ADVERTISE_PEER_URLS=\"http://127.0.0.1:34331\"\n"
            "ETCD_INITIAL_CLUSTER_STATE=\"existing\"\n");
}

TEST(MemberChangePrinters, SimpleLines) {
  Captured c;
  etcdserverpb::MemberRemoveResponse rm;
  rm.mutable_header()->set_cluster_id(0xc567920d59ef0656ULL);
  printMemberRemove(c.output(OutputFormat::kSimple), 0x98e62db74a5d237dULL, rm);
  etcdserverpb::MemberUpdateResponse up;
  up.mutable_header()->set_cluster_id(0xc567920d59ef0656ULL);
  printMemberUpdate(c.output(OutputFormat::kSimple), 0x31ee8695c5943756ULL, up);
  etcdserverpb::MemberPromoteResponse pr;
  pr.mutable_header()->set_cluster_id(0xc567920d59ef0656ULL);
  printMemberPromote(c.output(OutputFormat::kSimple), 0xabcULL, pr);
  EXPECT_EQ(c.out.str(),
            "Member 98e62db74a5d237d removed from cluster c567920d59ef0656\n"
            "Member 31ee8695c5943756 updated in cluster c567920d59ef0656\n"
            "Member              abc promoted in cluster c567920d59ef0656\n");
}

TEST(EndpointHealthPrinter, SimpleWritesEveryLineToStderr) {
  std::vector<EndpointHealth> list{{"127.0.0.1:2379", true, "2.1ms", ""},
                                   {"127.0.0.1:1", false, "2s", "cannot connect"}};
  Captured c;
  printEndpointHealth(c.output(OutputFormat::kSimple), list);
  EXPECT_EQ(c.out.str(), "");
  EXPECT_EQ(c.err.str(),
            "127.0.0.1:2379 is healthy: successfully committed proposal: took = 2.1ms\n"
            "127.0.0.1:1 is unhealthy: failed to commit proposal: cannot connect\n");
}

TEST(EndpointHealthPrinter, JsonTableFields) {
  std::vector<EndpointHealth> list{{"127.0.0.1:2379", true, "2.1ms", ""},
                                   {"127.0.0.1:1", false, "2s", "cannot connect"}};
  Captured j;
  printEndpointHealth(j.output(OutputFormat::kJson), list);
  EXPECT_EQ(j.out.str(),
            "[{\"endpoint\":\"127.0.0.1:2379\",\"health\":true,\"took\":\"2.1ms\"},"
            "{\"endpoint\":\"127.0.0.1:1\",\"health\":false,\"took\":\"2s\",\"error\":\"cannot "
            "connect\"}]\n");
  Captured t;
  printEndpointHealth(t.output(OutputFormat::kTable), list);
  EXPECT_EQ(t.out.str(),
            "+----------------+--------+-------+----------------+\n"
            "|    ENDPOINT    | HEALTH | TOOK  |     ERROR      |\n"
            "+----------------+--------+-------+----------------+\n"
            "| 127.0.0.1:2379 |   true | 2.1ms |                |\n"
            "|    127.0.0.1:1 |  false |    2s | cannot connect |\n"
            "+----------------+--------+-------+----------------+\n");
  Captured f;
  printEndpointHealth(f.output(OutputFormat::kFields), {list[0]});
  EXPECT_EQ(f.out.str(),
            "\"Endpoint\" : \"127.0.0.1:2379\"\n\"Health\" : true\n\"Took\" : 2.1ms\n"
            "\"Error\" : \n\n");
}

TEST(EndpointStatusPrinter, AllFormats) {
  std::vector<EndpointStatus> list{{"127.0.0.1:46315", sampleStatus()}};
  Captured s;
  printEndpointStatus(s.output(OutputFormat::kSimple), list);
  EXPECT_EQ(s.out.str(),
            "127.0.0.1:46315, 1fb9db250deb4e76, 3.4.23, 20 kB, true, false, 2, 8, 8, \n");
  Captured j;
  printEndpointStatus(j.output(OutputFormat::kJson), list);
  EXPECT_EQ(j.out.str(),
            "[{\"Endpoint\":\"127.0.0.1:46315\",\"Status\":{\"header\":{\"cluster_id\":"
            "14224498534114068054,\"member_id\":2286099238061035126,\"revision\":1,\"raft_term\":"
            "2},\"version\":\"3.4.23\",\"dbSize\":20480,\"leader\":2286099238061035126,"
            "\"raftIndex\":8,\"raftTerm\":2,\"raftAppliedIndex\":8,\"dbSizeInUse\":16384}}]\n");
  Captured t;
  printEndpointStatus(t.output(OutputFormat::kTable), list);
  EXPECT_NE(
      t.out.str().find("| 127.0.0.1:46315 | 1fb9db250deb4e76 |  3.4.23 |   20 kB |      true "
                       "|      false |         2 |          8 |                  8 |        |"),
      std::string::npos)
      << t.out.str();
  auto withErrors = sampleStatus();
  withErrors.add_errors("memberID:1 alarm:NOSPACE");
  withErrors.add_errors("other");
  Captured f;
  printEndpointStatus(f.output(OutputFormat::kFields), {{"127.0.0.1:46315", withErrors}});
  EXPECT_NE(f.out.str().find("\"Errors\" : [memberID:1 alarm:NOSPACE other]\n\"Endpoint\" : "
                             "\"127.0.0.1:46315\"\n\n"),
            std::string::npos)
      << f.out.str();
  Captured s2;
  printEndpointStatus(s2.output(OutputFormat::kSimple), {{"e", withErrors}});
  EXPECT_NE(s2.out.str().find(", 8, memberID:1 alarm:NOSPACE, other\n"), std::string::npos);
}

// DB SIZE is Go's humanize.Bytes.
TEST(EndpointStatusPrinter, DbSizeRoundsLikeGoHumanize) {
  auto dbSize = [](std::int64_t bytes) {
    auto s = sampleStatus();
    s.set_dbsize(bytes);
    Captured c;
    printEndpointStatus(c.output(OutputFormat::kSimple), {{"e", s}});
    // "e, <id>, 3.4.23, <size>, ..."
    auto line = c.out.str();
    auto start = line.find("3.4.23, ") + 8;
    return line.substr(start, line.find(',', start) - start);
  };
  EXPECT_EQ(dbSize(0), "0 B");
  EXPECT_EQ(dbSize(9), "9 B");
  EXPECT_EQ(dbSize(10), "10 B");
  EXPECT_EQ(dbSize(999), "999 B");
  EXPECT_EQ(dbSize(1000), "1.0 kB");
  EXPECT_EQ(dbSize(1024), "1.0 kB");
  EXPECT_EQ(dbSize(9999), "10 kB");
  EXPECT_EQ(dbSize(20480), "20 kB");  // 20.5 rounds half to even, as Go's %.0f
  EXPECT_EQ(dbSize(24576), "25 kB");
  EXPECT_EQ(dbSize(1234567), "1.2 MB");
  EXPECT_EQ(dbSize(2147483648LL), "2.1 GB");
}

TEST(EndpointHashKvPrinter, SimpleJsonAndEmptyTable) {
  etcdserverpb::HashKVResponse h;
  h.mutable_header()->set_revision(2);
  h.set_hash(1084519789);
  h.set_compact_revision(-1);
  Captured s;
  printEndpointHashKv(s.output(OutputFormat::kSimple), {{"127.0.0.1:2379", h}});
  EXPECT_EQ(s.out.str(), "127.0.0.1:2379, 1084519789\n");
  Captured j;
  printEndpointHashKv(j.output(OutputFormat::kJson), {{"127.0.0.1:2379", h}});
  EXPECT_EQ(j.out.str(),
            "[{\"Endpoint\":\"127.0.0.1:2379\",\"HashKV\":{\"header\":{\"revision\":2},"
            "\"hash\":1084519789,\"compact_revision\":-1}}]\n");
  Captured e;
  printEndpointHashKv(e.output(OutputFormat::kJson), {});
  EXPECT_EQ(e.out.str(), "[]\n");
  Captured t;
  printEndpointHashKv(t.output(OutputFormat::kTable), {});
  EXPECT_EQ(t.out.str(),
            "+----------+------+\n"
            "| ENDPOINT | HASH |\n"
            "+----------+------+\n"
            "+----------+------+\n");
}

TEST(MoveLeaderPrinter, SimpleAndJson) {
  Captured c;
  printMoveLeader(c.output(OutputFormat::kSimple), 0x1fb9db250deb4e76ULL, 0xabcULL, {});
  EXPECT_EQ(c.out.str(), "Leadership transferred from 1fb9db250deb4e76 to abc\n");
  Captured j;
  printMoveLeader(j.output(OutputFormat::kJson), 1, 2, {});
  EXPECT_EQ(j.out.str(), "{}\n");
}

TEST(ParseHexUint, WordsErrorsLikeStrconv) {
  EXPECT_EQ(parseHexUint("9e737febb6b99eee").value(), 0x9e737febb6b99eeeULL);
  EXPECT_EQ(parseHexUint("ABC").value(), 0xabcULL);
  EXPECT_EQ(parseHexUint("zz").error().message,
            "strconv.ParseUint: parsing \"zz\": invalid syntax");
  EXPECT_EQ(parseHexUint("").error().message, "strconv.ParseUint: parsing \"\": invalid syntax");
  EXPECT_EQ(parseHexUint("0x1").error().message,
            "strconv.ParseUint: parsing \"0x1\": invalid syntax");
  EXPECT_EQ(parseHexUint("10000000000000000").error().message,
            "strconv.ParseUint: parsing \"10000000000000000\": value out of range");
  EXPECT_EQ(parseHexUint("ffffffffffffffff").value(), ~0ULL);
}

// Each message below is what etcdctl 3.4.23 prints for `member add x --peer-urls=<url>`.
TEST(ValidatePeerUrls, MatchesTypesNewUrls) {
  auto msg = [](const std::string& url) {
    auto r = validatePeerUrls({url});
    return r ? std::string("ok") : r.error().message;
  };
  EXPECT_EQ(msg("http://127.0.0.1:2380"), "ok");
  EXPECT_EQ(msg(" http://127.0.0.1:2380"), "ok");
  EXPECT_EQ(msg("HTTP://127.0.0.1:1"), "ok");
  EXPECT_EQ(msg("http://:1"), "ok");
  EXPECT_EQ(msg("http://127.0.0.1:1#frag"), "ok");
  EXPECT_EQ(msg("http://127.0.0.1:1?q=1"), "ok");
  EXPECT_EQ(msg("http://[::1]:"), "ok");
  EXPECT_EQ(msg("foo"), "URL scheme must be http, https, unix, or unixs: foo");
  EXPECT_EQ(msg(""), "URL scheme must be http, https, unix, or unixs: ");
  EXPECT_EQ(msg("ftp://127.0.0.1:1"),
            "URL scheme must be http, https, unix, or unixs: "
            "ftp://127.0.0.1:1");
  EXPECT_EQ(msg("localhost:2380"),
            "URL scheme must be http, https, unix, or unixs: localhost:2380");
  EXPECT_EQ(msg("http://127.0.0.1"),
            "URL address does not have the form \"host:port\": http://127.0.0.1");
  EXPECT_EQ(msg("http://u@127.0.0.1"),
            "URL address does not have the form \"host:port\": http://u@127.0.0.1");
  EXPECT_EQ(msg("unix://x"), "URL address does not have the form \"host:port\": unix://x");
  EXPECT_EQ(msg("http://1.2.3.4:5:6"),
            "URL address does not have the form \"host:port\": http://1.2.3.4:5:6");
  EXPECT_EQ(msg("http://127.0.0.1:1/p"), "URL must not contain a path: http://127.0.0.1:1/p");
  EXPECT_EQ(msg("http://127.0.0.1:1/"), "URL must not contain a path: http://127.0.0.1:1/");
  EXPECT_EQ(msg("127.0.0.1:2380"),
            "parse \"127.0.0.1:2380\": first path segment in URL cannot contain colon");
  EXPECT_EQ(msg(":2380"), "parse \":2380\": missing protocol scheme");
  EXPECT_EQ(msg("%zz"), "parse \"%zz\": invalid URL escape \"%zz\"");
  EXPECT_EQ(msg("http://127.0.0.1:abc"),
            "parse \"http://127.0.0.1:abc\": invalid port \":abc\" after host");
  EXPECT_EQ(msg("http://127.0.0.1:1%41"),
            "parse \"http://127.0.0.1:1%41\": invalid port \":1%41\" after host");
  EXPECT_EQ(msg("http://[::1"), "parse \"http://[::1\": missing ']' in host");
  EXPECT_EQ(msg("http://a b:1"), "parse \"http://a b:1\": invalid character \" \" in host name");
  // The first bad URL of a list is reported.
  EXPECT_EQ(validatePeerUrls({"http://127.0.0.1:1", "foo"}).error().message,
            "URL scheme must be http, https, unix, or unixs: foo");
}

}  // namespace
}  // namespace etcdagent::fleet
