#include "agent/config/agent_config.hpp"

#include <gtest/gtest.h>

namespace etcdagent::agent {
namespace {

Result<AgentConfig> parse(std::string_view text) {
  return parseAgentConfig(text, "/etc/etcd-agent/agent.toml", "host1");
}

std::string errorOf(std::string_view text) {
  auto r = parse(text);
  EXPECT_FALSE(r) << "expected an error for:\n" << text;
  return r ? std::string() : r.error().message;
}

TEST(AgentConfig, EmptyFileGivesTheDocumentedDefaults) {
  auto cfg = parse("");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->member.name, "host1");
  EXPECT_EQ(cfg->member.advertise_host, "127.0.0.1");
  EXPECT_EQ(cfg->member.client_port, 2379);
  EXPECT_EQ(cfg->member.peer_port, 2380);
  EXPECT_EQ(cfg->member.data_root, "/var/lib/etcd-agent");
  EXPECT_EQ(cfg->cluster.token, "etcd-agent");
  EXPECT_EQ(cfg->agent.api_listen, "127.0.0.1:2378");
  EXPECT_EQ(cfg->agent.http_listen, "127.0.0.1:2377");
  EXPECT_EQ(cfg->etcd.binary, "/usr/bin/etcd");
  EXPECT_EQ(cfg->etcd.auto_compaction_mode, "periodic");
  EXPECT_EQ(cfg->etcd.auto_compaction_retention, "24h");
  EXPECT_EQ(cfg->etcd.quota_backend_bytes, 8589934592ULL);
  EXPECT_TRUE(cfg->etcd.extra_flags.empty());
  EXPECT_EQ(cfg->dataDir(), "/var/lib/etcd-agent/host1/data");
  EXPECT_EQ(cfg->statePath(), "/var/lib/etcd-agent/host1/state.json");
}

TEST(AgentConfig, ReadsEveryKey) {
  auto cfg = parse(R"(
[member]
name = "m1"
advertise_host = "127.0.0.11"
client_port = 0
peer_port = 0
data_root = "/srv/etcd"
[cluster]
token = "prod-1"
[agent]
api_listen = "127.0.0.11:2378"
http_listen = "0.0.0.0:2377"
[etcd]
binary = "/opt/etcd/bin/etcd"
auto_compaction_mode = "revision"
auto_compaction_retention = "1000"
quota_backend_bytes = 4294967296
extra_flags = ["--snapshot-count=5000", "--heartbeat-interval=200"]
[bootstrap]
join = "http://127.0.0.1:2379"
)");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->member.name, "m1");
  EXPECT_EQ(cfg->member.client_port, 0);
  EXPECT_EQ(cfg->cluster.token, "prod-1");
  EXPECT_EQ(cfg->etcd.auto_compaction_mode, "revision");
  EXPECT_EQ(cfg->etcd.quota_backend_bytes, 4294967296ULL);
  EXPECT_EQ(cfg->etcd.extra_flags.size(), 2U);
  EXPECT_EQ(cfg->bootstrap.join, "http://127.0.0.1:2379");
}

TEST(AgentConfig, SyntaxErrorNamesFileLineAndColumn) {
  std::string e = errorOf("[member]\nname = \"m1\nclient_port = 1\n");
  EXPECT_EQ(e.rfind("/etc/etcd-agent/agent.toml:2:", 0), 0U) << e;
}

TEST(AgentConfig, UnknownKeyNamesItsPositionAndTheKnownKeys) {
  std::string e = errorOf("[member]\nname = \"m1\"\nclient_prot = 2379\n");
  EXPECT_EQ(e.rfind("/etc/etcd-agent/agent.toml:3:1: member.client_prot: unknown key", 0), 0U) << e;
  EXPECT_NE(e.find("client_port"), std::string::npos) << e;
}

TEST(AgentConfig, UnknownSectionIsAnError) {
  std::string e = errorOf("[membr]\nname = \"m1\"\n");
  EXPECT_NE(e.find(":1:"), std::string::npos) << e;
  EXPECT_NE(e.find("membr"), std::string::npos) << e;
}

TEST(AgentConfig, WrongTypeSaysWhatIsExpected) {
  std::string e = errorOf("[member]\nclient_port = \"2379\"\n");
  EXPECT_EQ(
      e, "/etc/etcd-agent/agent.toml:2:15: member.client_port: expected an integer, got a string");
}

TEST(AgentConfig, BadValuesAreRejectedWithTheExpectation) {
  EXPECT_NE(errorOf("[member]\nclient_port = 70000\n").find("expected a port 1..65535"),
            std::string::npos);
  EXPECT_NE(errorOf("[member]\nclient_port = 2379\npeer_port = 2379\n").find("must differ"),
            std::string::npos);
  EXPECT_NE(errorOf("[member]\nname = \"m 1\"\n").find("member.name"), std::string::npos);
  EXPECT_NE(errorOf("[member]\nadvertise_host = \"http://h\"\n").find("without scheme"),
            std::string::npos);
  EXPECT_NE(errorOf("[member]\ndata_root = \"relative\"\n").find("absolute path"),
            std::string::npos);
  EXPECT_NE(errorOf("[etcd]\nauto_compaction_mode = \"sometimes\"\n")
                .find("\"periodic\" or \"revision\""),
            std::string::npos);
  EXPECT_NE(errorOf("[etcd]\nauto_compaction_retention = \"a while\"\n").find("duration"),
            std::string::npos);
  EXPECT_NE(errorOf("[etcd]\nquota_backend_bytes = 0\n").find("8 GiB"), std::string::npos);
  EXPECT_NE(errorOf("[etcd]\nextra_flags = [\"snapshot-count=1\"]\n").find("--name=value"),
            std::string::npos);
  EXPECT_NE(errorOf("[etcd]\nextra_flags = [1]\n").find("array of strings"), std::string::npos);
  EXPECT_NE(errorOf("[bootstrap]\njoin = \"127.0.0.1:2379\"\n").find("http://"), std::string::npos);
  EXPECT_NE(errorOf("[bootstrap]\njoin = \"http://a:1\"\ndiscovery = \"http://b:1/t\"\n")
                .find("not both"),
            std::string::npos);
}

TEST(AgentConfig, ManagedFlagsCannotBeOverridden) {
  std::string e = errorOf("[etcd]\nextra_flags = [\"--data-dir=/tmp/x\"]\n");
  EXPECT_NE(e.find("set by etcd-agent itself"), std::string::npos) << e;
  EXPECT_TRUE(isManagedEtcdFlag("--initial-cluster-state=new"));
  EXPECT_FALSE(isManagedEtcdFlag("--snapshot-count=10"));
}

TEST(AgentConfig, AgentApiStaysOnLoopbackUntilTls) {
  std::string e = errorOf("[agent]\napi_listen = \"0.0.0.0:2378\"\n");
  EXPECT_NE(e.find("loopback only"), std::string::npos) << e;
  EXPECT_TRUE(parse("[agent]\napi_listen = \"127.0.0.12:2378\"\n"));
  EXPECT_TRUE(parse("[agent]\napi_listen = \"[::1]:2378\"\n"));
}

TEST(AgentConfig, ShippedConfigParses) {
  // The commented default config that the package installs must stay valid.
  auto cfg = loadAgentConfig(ETCD_AGENT_SOURCE_DIR "/config/agent.toml");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->cluster.token, "etcd-agent");
}

TEST(AgentConfig, MissingFileSaysSo) {
  auto cfg = loadAgentConfig("/nonexistent/agent.toml");
  ASSERT_FALSE(cfg);
  EXPECT_NE(cfg.error().message.find("/nonexistent/agent.toml"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent::agent
