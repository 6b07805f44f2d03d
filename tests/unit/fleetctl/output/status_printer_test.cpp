// etcd-fleet status as printed: the day each member's first certificate ends, and the fleet's
// own CA and client certificate, in the table and in JSON.

#include <gtest/gtest.h>

#include "fleetctl/output/status.hpp"

namespace etcdagent::fleet {
namespace {

using std::chrono::days;

const tls::TimePoint kNow = std::chrono::sys_days(std::chrono::year_month_day(
    std::chrono::year(2030), std::chrono::month(6), std::chrono::day(1)));

StatusRow enrolledRow() {
  StatusRow r{.host = "127.0.0.11", .name = "m1", .id = 0x11, .role = "leader", .state = "running"};
  r.reachable = true;
  r.certificates = {
      {"api", kNow + days(365)}, {"etcd-server", kNow + days(12)}, {"ca", kNow + days(3650)}};
  return r;
}

const FleetCertificates kPki{.ca_path = "/op/pki/ca.crt",
                             .ca_not_after = kNow + days(3650),
                             .fleet_path = "/op/pki/fleet.crt",
                             .fleet_not_after = kNow + days(365)};

TEST(StatusPrinter, TheTableShowsTheDayTheFirstCertificateEndsAndTheFleetsOwn) {
  StatusRow plain{.host = "127.0.0.12", .name = "m2", .id = 0x12, .role = "-", .state = "running"};
  const std::string table = renderStatusTable({enrolledRow(), plain}, kPki);
  EXPECT_NE(table.find("| LAST SNAPSHOT | RESTORE TESTED | CERTS UNTIL |"), std::string::npos)
      << table;
  EXPECT_NE(table.find("|              - |  2030-06-13 |"), std::string::npos) << table;
  EXPECT_NE(table.find("|              - |           - |"), std::string::npos) << table;
  EXPECT_NE(table.find("+\nfleet CA valid until 2040-05-29T00:00:00Z (/op/pki/ca.crt)\n"
                       "etcd-fleet's certificate valid until 2031-06-01T00:00:00Z "
                       "(/op/pki/fleet.crt)\n"),
            std::string::npos)
      << table;
  // A fleet without a CA: no such lines.
  EXPECT_EQ(renderStatusTable({plain}).find("fleet CA"), std::string::npos);
}

TEST(StatusPrinter, NumbersFromAnAgentsLastCheckAreMarkedAndExplained) {
  StatusRow live = enrolledRow();
  live.live = true;
  live.raft_term = 5;
  live.revision = 33;
  StatusRow cached{
      .host = "127.0.0.12", .name = "m2", .id = 0x12, .role = "follower", .state = "running"};
  cached.reachable = true;
  cached.cached = true;
  cached.raft_term = 4;
  cached.revision = 30;
  const std::string table = renderStatusTable({live, cached});
  EXPECT_NE(table.find(" leader |"), std::string::npos) << table;
  EXPECT_NE(table.find("| follower* |"), std::string::npos) << table;
  EXPECT_NE(table.find("* etcd did not answer for the member at its client URL"), std::string::npos)
      << table;
  EXPECT_EQ(renderStatusTable({live}).find("* etcd did not answer"), std::string::npos);
  EXPECT_NE(renderStatusJson("c", {live}, std::nullopt).find("\"live\":true"), std::string::npos);
}

TEST(StatusPrinter, TheJsonListsEveryCertificateAndThePki) {
  const std::string json = renderStatusJson("prod", {enrolledRow()}, kPki);
  EXPECT_NE(json.find("\"certificates\":[{\"name\":\"api\",\"not_after\":\"2031-06-01T00:00:00Z\"},"
                      "{\"name\":\"etcd-server\",\"not_after\":\"2030-06-13T00:00:00Z\"},"
                      "{\"name\":\"ca\",\"not_after\":\"2040-05-29T00:00:00Z\"}],"
                      "\"certificates_until\":\"2030-06-13T00:00:00Z\""),
            std::string::npos)
      << json;
  EXPECT_NE(
      json.find(",\"pki\":{\"ca\":\"/op/pki/ca.crt\",\"ca_not_after\":\"2040-05-29T00:00:00Z\","
                "\"fleet\":\"/op/pki/fleet.crt\",\"fleet_not_after\":"
                "\"2031-06-01T00:00:00Z\"}}\n"),
      std::string::npos)
      << json;
  const std::string plain = renderStatusJson("prod", {StatusRow{.name = "m2"}});
  EXPECT_NE(plain.find("\"certificates\":[]"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("certificates_until"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("\"pki\""), std::string::npos) << plain;
}

}  // namespace
}  // namespace etcdagent::fleet
