// Failures must be as loud as etcdctl's (same exit codes) and more helpful (endpoint, cause, hint).

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

TEST(Errors, UnreachableEndpointNamesTheEndpointAndTheTimeout) {
  const std::string nowhere = "127.0.0.1:" + std::to_string(freePort());
  auto ours = fleet(nowhere, {"get", "foo", "--dial-timeout", "500ms"});
  auto theirs =
      etcdctl(nowhere, {"get", "foo", "--dial-timeout", "500ms", "--command-timeout", "1s"});
  EXPECT_EQ(ours.exit_code, theirs.exit_code);
  EXPECT_NE(ours.exit_code, 0);
  EXPECT_EQ(ours.out, "");
  EXPECT_EQ(ours.err.rfind("Error: ", 0), 0U) << ours.err;
  EXPECT_NE(ours.err.find(nowhere), std::string::npos) << ours.err;
  EXPECT_NE(ours.err.find("500ms"), std::string::npos) << ours.err;
}

TEST(Errors, FailsOverToTheNextEndpoint) {
  EtcdCluster cluster;
  const std::string endpoints =
      "127.0.0.1:" + std::to_string(freePort()) + "," + cluster.endpoint(0);
  auto put = fleet(endpoints, {"put", "failover", "ok"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  auto get = fleet(endpoints, {"get", "failover", "--print-value-only"});
  EXPECT_EQ(get.out, "ok\n");
}

TEST(Errors, KeyTooLargeIsRefusedLikeEtcdctlWithAHint) {
  EtcdCluster cluster;
  const std::string big(1600 * 1024, 'x');
  auto ours = fleet(cluster.endpoints(), {"put", "big"}, {.input = big});
  auto theirs = etcdctl(cluster.endpoints(), {"put", "big"}, {.input = big});
  EXPECT_EQ(ours.exit_code, theirs.exit_code);
  EXPECT_NE(ours.exit_code, 0);
  EXPECT_NE(ours.err.find("etcdserver: request is too large"), std::string::npos) << ours.err;
  EXPECT_NE(ours.err.find("--max-request-bytes"), std::string::npos) << ours.err;
  EXPECT_EQ(ours.out, "") << "nothing may be printed as success";
  EXPECT_EQ(etcdctl(cluster.endpoints(), {"get", "big"}).out, "");
}

TEST(Errors, BadFlagsPrintUsageForThatCommand) {
  const std::string ep = "127.0.0.1:" + std::to_string(freePort());
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"put", "--nope", "k", "v"}, {"get", "-z", "k"}}) {
    auto ours = fleet(ep, args);
    auto theirs = etcdctl(ep, args);
    EXPECT_EQ(ours.exit_code, theirs.exit_code) << args[1];
    EXPECT_NE(ours.out.find("etcd-fleet " + args[0]), std::string::npos) << ours.out;
    EXPECT_NE(ours.err.find("Error: unknown"), std::string::npos) << ours.err;
  }
}

TEST(Errors, BadDurationFlagIsRejectedBeforeDialing) {
  auto r = fleet("127.0.0.1:1", {"get", "foo", "--dial-timeout", "soon"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--dial-timeout"), std::string::npos) << r.err;
}

// etcdctl 3.4 takes --command-timeout -5s and fails every request with "context deadline
// exceeded"; etcd-fleet reported a dial timeout. Refused before dialing, naming the flag, with
// etcdctl's exit code.
TEST(Errors, NegativeOrZeroTimeoutIsRefusedNamingTheFlag) {
  const std::string nowhere = "127.0.0.1:" + std::to_string(freePort());
  for (const std::string bad : {"-5s", "0s"}) {
    auto ours = fleet(nowhere, {"get", "foo", "--command-timeout", bad});
    auto theirs = etcdctl(nowhere, {"get", "foo", "--command-timeout", bad});
    EXPECT_EQ(ours.exit_code, theirs.exit_code) << bad << ": " << ours.err;
    EXPECT_NE(ours.err.find("invalid argument \"" + bad +
                            "\" for \"--command-timeout\" flag: "
                            "a timeout must be more than 0"),
              std::string::npos)
        << ours.err;
    EXPECT_EQ(ours.err.find("dial"), std::string::npos) << ours.err;
  }
}

TEST(Errors, UnknownCommandSaysSo) {
  auto r = fleet("127.0.0.1:1", {"frobnicate"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown command \"frobnicate\""), std::string::npos) << r.err;
}

// A damaged fleet inventory: every command that needs it fails with exit code 1 and the file's
// line and column (the real binary aborted with SIGABRT: toml++'s parse error thrown in its shared
// library could not unwind through etcd-fleet's static C++ runtime); commands given --endpoints do
// not read it.
TEST(Errors, DamagedFleetInventoryIsAnErrorNamingFileLineAndColumnNeverAnAbort) {
  EtcdCluster cluster;
  TempDir dir;
  const std::map<std::string, std::string> damaged = {
      {"unterminated", "[cluster]\ntoken = \"prod-1\n"},
      {"utf8", "[cluster]\ntoken = \"a\xff\xfe\"\n"},
      // 14 bytes, NULs included: an ELF header's start.
      {"binary", std::string("\x7f"
                             "ELF\x02\x01\x01\0\0\0\xff\xfe\x00\x10",
                             14)},
      {"truncated", "[cluster]\ntoken = \"t\"\n\n[[member]]\nname = \"m1\"\nclient_u"},
      {"empty", ""},
  };
  for (const auto& [name, text] : damaged) {
    const std::string path = dir.path() + "/" + name + ".toml";
    std::ofstream(path, std::ios::binary) << text;
    for (const auto& args : std::vector<std::vector<std::string>>{{"status"}, {"get", "foo"}}) {
      std::vector<std::string> argv{fleetBinary(), "--fleet", path};
      argv.insert(argv.end(), args.begin(), args.end());
      auto r = run(argv);
      EXPECT_EQ(r.signal, 0) << name << " " << args[0] << ": " << r.err;
      EXPECT_EQ(r.exit_code, 1) << name << " " << args[0] << ": " << r.err;
      EXPECT_EQ(r.err.rfind("Error: " + path + ":", 0), 0U) << name << ": " << r.err;
    }
    auto get =
        run({fleetBinary(), "--fleet", path, "--endpoints", cluster.endpoints(), "get", "foo"});
    EXPECT_EQ(get.exit_code, 0) << name
                                << ": --endpoints given, the inventory is not read: " << get.err;
  }
}

}  // namespace
}  // namespace etcdagent::testing
