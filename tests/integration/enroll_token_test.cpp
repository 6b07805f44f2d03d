// etcd-fleet token create / list / revoke, run as the real binary against a fleet CA made with
// the openssl CLI: the token pins that CA's key, as kubeadm's hash does.

#include "fleet/enroll_token.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/support/etcd_cluster.hpp"
#include "tests/support/process.hpp"

namespace etcdagent::testing {
namespace {

class EnrollTokenCli : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string inventory_ = dir_.path() + "/fleet.toml";
  std::string pki_ = dir_.path() + "/pki";

  RunResult etcdFleet(std::vector<std::string> args) {
    std::vector<std::string> argv{fleetBinary(), "--fleet", inventory_};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  }

  // A P-256 CA at <inventory dir>/pki/ca.crt; returns its fingerprint as the openssl CLI
  // computes kubeadm's: sha256 of the DER SubjectPublicKeyInfo.
  std::string makeCa() {
    std::filesystem::create_directory(pki_);
    std::filesystem::permissions(pki_, std::filesystem::perms::owner_all);
    auto req = run({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", pki_ + "/ca.key", "-out",
                    pki_ + "/ca.crt", "-days", "30", "-subj", "/CN=etcd-fleet CA test"});
    EXPECT_EQ(req.exit_code, 0) << req.err;
    auto hash = run({"sh", "-c",
                     "openssl x509 -in \"$0\" -pubkey -noout | openssl pkey -pubin -outform der "
                     "| openssl dgst -sha256 -r",
                     pki_ + "/ca.crt"});
    EXPECT_EQ(hash.exit_code, 0) << hash.err;
    return hash.out.substr(0, 64);
  }
};

TEST_F(EnrollTokenCli, CreateWithoutAFleetCaSaysToMakeOne) {
  auto r = etcdFleet({"token", "create"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("Error: no fleet CA yet: run `etcd-fleet ca init` first (" + pki_ +
                       "/ca.crt does not exist)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(pki_ + "/tokens.json"));
}

TEST_F(EnrollTokenCli, CreatesAListedTokenThatPinsTheCaUntilRevoked) {
  const std::string ca_hash = makeCa();
  ASSERT_EQ(ca_hash.size(), 64U);

  auto created = etcdFleet({"token", "create", "--ttl", "2h", "--description", "rack one"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  ASSERT_FALSE(created.out.empty());
  EXPECT_EQ(created.out.find('\n'), created.out.size() - 1) << "one line: " << created.out;
  auto token = fleet::parseEnrollToken(created.out);
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(token->ca_hash, ca_hash);
  EXPECT_NE(created.err.find("/etc/etcd-agent/enroll.token"), std::string::npos) << created.err;
  EXPECT_EQ(created.err.find(token->secret), std::string::npos) << "the secret goes to stdout only";

  struct stat st {};
  ASSERT_EQ(::stat((pki_ + "/tokens.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);

  auto json = etcdFleet({"token", "list", "-w", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"id\":\"" + token->id + "\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"state\":\"active\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"description\":\"rack one\""), std::string::npos) << json.out;
  EXPECT_EQ(json.out.find(token->secret), std::string::npos);

  auto table = etcdFleet({"token", "list", "-w", "table"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("| " + token->id + " |"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("STATE"), std::string::npos) << table.out;

  auto whole = etcdFleet({"token", "revoke", fleet::formatEnrollToken(*token)});
  EXPECT_EQ(whole.exit_code, 128);
  EXPECT_NE(whole.err.find("give the token's ID"), std::string::npos) << whole.err;
  EXPECT_EQ(whole.err.find(token->secret), std::string::npos) << whole.err;

  auto revoked = etcdFleet({"token", "revoke", token->id});
  ASSERT_EQ(revoked.exit_code, 0) << revoked.err;
  EXPECT_NE(revoked.out.find("Token " + token->id + " revoked at "), std::string::npos)
      << revoked.out;
  auto simple = etcdFleet({"token", "list"});
  ASSERT_EQ(simple.exit_code, 0) << simple.err;
  EXPECT_NE(simple.out.find(token->id + ", "), std::string::npos) << simple.out;
  EXPECT_NE(simple.out.find(", revoked, 0, rack one"), std::string::npos) << simple.out;

  auto unknown = etcdFleet({"token", "revoke", "zzzzzz"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("no enrollment token zzzzzz"), std::string::npos) << unknown.err;
}

TEST_F(EnrollTokenCli, RefusesATtlAboveSevenDays) {
  makeCa();
  auto r = etcdFleet({"token", "create", "--ttl", "169h"});
  EXPECT_EQ(r.exit_code, 128);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("longer than the limit of 168h (7 days)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace etcdagent::testing
