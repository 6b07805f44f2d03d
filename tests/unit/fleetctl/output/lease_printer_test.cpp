// The lease commands' argument parsing and printers, against etcdctl 3.4.23's output.

#include <gtest/gtest.h>

#include <sstream>

#include "fleetctl/output/lease.hpp"

namespace etcdagent::fleet {
namespace {

etcdserverpb::ResponseHeader header() {
  etcdserverpb::ResponseHeader h;
  h.set_cluster_id(15118495548433857066ULL);
  h.set_member_id(13668033151171901709ULL);
  h.set_revision(3);
  h.set_raft_term(2);
  return h;
}

struct Printed {
  std::ostringstream out;
  std::ostringstream err;
  Output output(OutputFormat f) { return Output{out, err, f, false}; }
};

TEST(LeaseArgs, ParsesHexIdsLikeStrconvParseInt) {
  EXPECT_EQ(parseLeaseIdArg("694d7aa1e9d5ab0b").value(), 0x694d7aa1e9d5ab0bLL);
  EXPECT_EQ(parseLeaseIdArg("ABC").value(), 0xabc);
  EXPECT_EQ(parseLeaseIdArg("-1").value(), -1);
  EXPECT_EQ(parseLeaseIdArg("+10").value(), 16);
  EXPECT_EQ(parseLeaseIdArg("7fffffffffffffff").value(), INT64_MAX);
  EXPECT_EQ(parseLeaseIdArg("-8000000000000000").value(), INT64_MIN);
}

TEST(LeaseArgs, RejectsBadIdsWithEtcdctlWording) {
  EXPECT_EQ(parseLeaseIdArg("zz").error().message,
            "bad lease ID arg (strconv.ParseInt: parsing \"zz\": invalid syntax), expecting ID "
            "in Hex");
  EXPECT_EQ(parseLeaseIdArg("8000000000000000").error().message,
            "bad lease ID arg (strconv.ParseInt: parsing \"8000000000000000\": value out of "
            "range), expecting ID in Hex");
  EXPECT_FALSE(parseLeaseIdArg("").has_value());
  EXPECT_FALSE(parseLeaseIdArg("-").has_value());
  EXPECT_FALSE(parseLeaseIdArg("0x10").has_value());
  EXPECT_FALSE(parseLeaseIdArg(" 10").has_value());
  // Go reports the overflow where it happens, before a later bad digit.
  EXPECT_NE(parseLeaseIdArg("fffffffffffffffffz").error().message.find("value out of range"),
            std::string::npos);
}

TEST(LeaseArgs, ParsesDecimalTtl) {
  EXPECT_EQ(parseLeaseTtlArg("10").value(), 10);
  EXPECT_EQ(parseLeaseTtlArg("-5").value(), -5);
  EXPECT_EQ(parseLeaseTtlArg("x").error().message,
            "bad TTL (strconv.ParseInt: parsing \"x\": invalid syntax)");
  EXPECT_EQ(parseLeaseTtlArg("1a").error().message,
            "bad TTL (strconv.ParseInt: parsing \"1a\": invalid syntax)");
  EXPECT_EQ(parseLeaseTtlArg("99999999999999999999").error().message,
            "bad TTL (strconv.ParseInt: parsing \"99999999999999999999\": value out of range)");
}

TEST(LeasePrinter, GrantInEveryFormat) {
  etcdserverpb::LeaseGrantResponse r;
  *r.mutable_header() = header();
  r.set_id(4111120337948161869);
  r.set_ttl(100);
  Printed s;
  printLeaseGrant(s.output(OutputFormat::kSimple), r);
  EXPECT_EQ(s.out.str(), "lease 390da22a6c48b74d granted with TTL(100s)\n");
  Printed j;
  printLeaseGrant(j.output(OutputFormat::kJson), r);
  EXPECT_EQ(j.out.str(),
            "{\"cluster_id\":15118495548433857066,\"member_id\":13668033151171901709,"
            "\"revision\":3,\"raft_term\":2,\"ID\":4111120337948161869,\"TTL\":100,"
            "\"Error\":\"\"}\n");
  Printed f;
  printLeaseGrant(f.output(OutputFormat::kFields), r);
  EXPECT_EQ(f.out.str(),
            "\"ClusterID\" : 15118495548433857066\n\"MemberID\" : 13668033151171901709\n"
            "\"Revision\" : 3\n\"RaftTerm\" : 2\n\"ID\" : 4111120337948161869\n\"TTL\" : 100\n");
}

TEST(LeasePrinter, RevokePrintsTheProtobufResponseInJson) {
  etcdserverpb::LeaseRevokeResponse r;
  *r.mutable_header() = header();
  Printed s;
  printLeaseRevoke(s.output(OutputFormat::kSimple), 0x390da22a6c48b771, r);
  EXPECT_EQ(s.out.str(), "lease 390da22a6c48b771 revoked\n");
  Printed j;
  printLeaseRevoke(j.output(OutputFormat::kJson), 1, r);
  EXPECT_EQ(j.out.str(),
            "{\"header\":{\"cluster_id\":15118495548433857066,\"member_id\":"
            "13668033151171901709,\"revision\":3,\"raft_term\":2}}\n");
  Printed f;
  printLeaseRevoke(f.output(OutputFormat::kFields), 1, r);
  EXPECT_EQ(f.out.str(),
            "\"ClusterID\" : 15118495548433857066\n\"MemberID\" : 13668033151171901709\n"
            "\"Revision\" : 3\n\"RaftTerm\" : 2\n");
}

TEST(LeasePrinter, KeepAlive) {
  etcdserverpb::LeaseKeepAliveResponse r;
  *r.mutable_header() = header();
  r.set_id(4111120337948161932);
  r.set_ttl(100);
  Printed s;
  printLeaseKeepAlive(s.output(OutputFormat::kSimple), r);
  EXPECT_EQ(s.out.str(), "lease 390da22a6c48b78c keepalived with TTL(100)\n");
  Printed j;
  printLeaseKeepAlive(j.output(OutputFormat::kJson), r);
  EXPECT_EQ(j.out.str(),
            "{\"cluster_id\":15118495548433857066,\"member_id\":13668033151171901709,"
            "\"revision\":3,\"raft_term\":2,\"ID\":4111120337948161932,\"TTL\":100}\n");
  Printed expired;
  printLeaseExpired(expired.output(OutputFormat::kSimple), 0x1234);
  EXPECT_EQ(expired.out.str(), "lease 0000000000001234 expired or revoked.\n");
  Printed quiet;
  printLeaseExpired(quiet.output(OutputFormat::kJson), 0x1234);
  printLeaseExpired(quiet.output(OutputFormat::kFields), 0x1234);
  EXPECT_EQ(quiet.out.str() + quiet.err.str(), "");
}

TEST(LeasePrinter, TimeToLiveWithAndWithoutKeys) {
  etcdserverpb::LeaseTimeToLiveResponse r;
  *r.mutable_header() = header();
  r.set_id(4111120337948161882);
  r.set_ttl(98);
  r.set_grantedttl(100);
  Printed plain;
  printLeaseTimeToLive(plain.output(OutputFormat::kSimple), r, false);
  EXPECT_EQ(plain.out.str(), "lease 390da22a6c48b75a granted with TTL(100s), remaining(98s)\n");
  Printed none;
  printLeaseTimeToLive(none.output(OutputFormat::kSimple), r, true);
  EXPECT_EQ(none.out.str(),
            "lease 390da22a6c48b75a granted with TTL(100s), remaining(98s), attached keys([])\n");
  Printed nullKeys;
  printLeaseTimeToLive(nullKeys.output(OutputFormat::kJson), r, true);
  EXPECT_EQ(nullKeys.out.str(),
            "{\"cluster_id\":15118495548433857066,\"member_id\":13668033151171901709,"
            "\"revision\":3,\"raft_term\":2,\"id\":4111120337948161882,\"ttl\":98,"
            "\"granted-ttl\":100,\"keys\":null}\n");

  r.add_keys("k1");
  r.add_keys("we ird\n\"k");
  Printed keys;
  printLeaseTimeToLive(keys.output(OutputFormat::kSimple), r, true);
  EXPECT_EQ(keys.out.str(),
            "lease 390da22a6c48b75a granted with TTL(100s), remaining(98s), attached keys([k1 we "
            "ird\n\"k])\n");
  Printed j;
  printLeaseTimeToLive(j.output(OutputFormat::kJson), r, true);
  EXPECT_NE(j.out.str().find("\"keys\":[\"azE=\",\"d2UgaXJkCiJr\"]}"), std::string::npos)
      << j.out.str();
  Printed f;
  printLeaseTimeToLive(f.output(OutputFormat::kFields), r, true);
  EXPECT_NE(f.out.str().find("\"GrantedTTL\" : 100\n\"Key\" : \"k1\"\n\"Key\" : "
                             "\"we ird\\n\\\"k\"\n"),
            std::string::npos)
      << f.out.str();
}

TEST(LeasePrinter, TimeToLiveOfAMissingLease) {
  etcdserverpb::LeaseTimeToLiveResponse r;
  *r.mutable_header() = header();
  r.set_id(0x1234);
  r.set_ttl(-1);
  Printed s;
  printLeaseTimeToLive(s.output(OutputFormat::kSimple), r, true);
  EXPECT_EQ(s.out.str(), "lease 0000000000001234 already expired\n");
  Printed j;
  printLeaseTimeToLive(j.output(OutputFormat::kJson), r, false);
  EXPECT_EQ(j.out.str(),
            "{\"cluster_id\":15118495548433857066,\"member_id\":13668033151171901709,"
            "\"revision\":3,\"raft_term\":2,\"id\":4660,\"ttl\":-1,\"granted-ttl\":0,"
            "\"keys\":null}\n");
}

TEST(LeasePrinter, ListInEveryFormat) {
  etcdserverpb::LeaseLeasesResponse r;
  *r.mutable_header() = header();
  Printed empty;
  printLeaseList(empty.output(OutputFormat::kJson), r);
  EXPECT_EQ(empty.out.str(),
            "{\"cluster_id\":15118495548433857066,\"member_id\":13668033151171901709,"
            "\"revision\":3,\"raft_term\":2,\"leases\":[]}\n");
  r.add_leases()->set_id(0x390da22a6c48b74b);
  r.add_leases()->set_id(0x390da22a6c48b74d);
  Printed s;
  printLeaseList(s.output(OutputFormat::kSimple), r);
  EXPECT_EQ(s.out.str(), "found 2 leases\n390da22a6c48b74b\n390da22a6c48b74d\n");
  Printed j;
  printLeaseList(j.output(OutputFormat::kJson), r);
  EXPECT_NE(j.out.str().find("\"leases\":[{\"id\":4111120337948161867},{\"id\":"
                             "4111120337948161869}]}"),
            std::string::npos);
  Printed f;
  printLeaseList(f.output(OutputFormat::kFields), r);
  EXPECT_NE(f.out.str().find("\"RaftTerm\" : 2\n\"ID\" : 4111120337948161867\n\"ID\" : "
                             "4111120337948161869\n"),
            std::string::npos);
}

}  // namespace
}  // namespace etcdagent::fleet
