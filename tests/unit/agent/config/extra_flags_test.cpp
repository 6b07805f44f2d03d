#include "agent/config/extra_flags.hpp"

#include <gtest/gtest.h>

namespace etcdagent::agent {
namespace {

std::string problem(std::string_view flag) {
  auto p = extraFlagProblem(flag);
  EXPECT_TRUE(p) << flag << " was accepted";
  return p.value_or("");
}

TEST(ExtraFlags, TuningFlagsPassThrough) {
  for (const char* f :
       {"--snapshot-count=5000", "--heartbeat-interval=100", "--enable-pprof",
        "--listen-metrics-urls=http://127.0.0.1:2381", "--listen-metrics-urls=http://[::1]:2381",
        "--initial-election-tick-advance=false"}) {
    EXPECT_FALSE(extraFlagProblem(f)) << f << ": " << extraFlagProblem(f).value_or("");
  }
}

TEST(ExtraFlags, FlagsTheAgentSetsSayWhichSettingOwnsThem) {
  EXPECT_EQ(problem("--name=x"), "--name is set by etcd-agent itself; it comes from member.name");
  EXPECT_NE(problem("--initial-cluster=a=http://127.0.0.1:2380").find("the bootstrap plan"),
            std::string::npos);
  EXPECT_NE(problem("--listen-peer-urls=http://127.0.0.1:1").find("member.peer_port"),
            std::string::npos);
  EXPECT_NE(problem("--advertise-client-urls=http://127.0.0.1:1").find("member.client_port"),
            std::string::npos);
  EXPECT_NE(problem("--strict-reconfig-check=false").find("always on"), std::string::npos);
  EXPECT_TRUE(isManagedEtcdFlag("--initial-cluster-state=new"));
  EXPECT_FALSE(isManagedEtcdFlag("--snapshot-count=10"));
}

TEST(ExtraFlags, UnsafeFlagsAreRefusedWithTheReason) {
  EXPECT_NE(problem("--force-new-cluster").find("--force-new-cluster is refused: it rewrites"),
            std::string::npos);
  EXPECT_NE(problem("--force-new-cluster=false").find("refused"), std::string::npos);
  EXPECT_NE(problem("--unsafe-no-fsync").find("lose"), std::string::npos);
}

TEST(ExtraFlags, WildcardListenUrlsAreRefused) {
  EXPECT_EQ(problem("--listen-metrics-urls=http://127.0.0.1:2381,http://0.0.0.0:2381"),
            "\"http://0.0.0.0:2381\" listens on every address of the host; name the address to "
            "listen on (e.g. http://127.0.0.1:2381)");
  EXPECT_FALSE(problem("--listen-metrics-urls=https://[::]:2381").empty());
  EXPECT_FALSE(problem("--listen-metrics-urls=http://:2381").empty());
}

TEST(ExtraFlags, OnlyDoubleDashFlagsAreFlags) {
  EXPECT_NE(problem("snapshot-count=1").find("--name=value"), std::string::npos);
  EXPECT_NE(problem("--").find("--name=value"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent::agent
