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

// The message of the first problem must start with the file:line:col of the offending key.
void expectRefusedAt(std::string_view text, std::string_view where, std::string_view why) {
  const std::string e = errorOf(text);
  EXPECT_EQ(e.rfind("/etc/etcd-agent/agent.toml:" + std::string(where) + ": ", 0), 0U)
      << "for:\n"
      << text << "\ngot: " << e;
  EXPECT_NE(e.find(why), std::string::npos) << "for:\n" << text << "\ngot: " << e;
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

// On a real host the operator names the member's address once: the agent API listens there too
// (secure by default: over TLS only), unless api_listen says otherwise.
TEST(AgentConfig, TheApiListensOnTheAdvertisedAddressByDefault) {
  auto cfg = parse("[member]\nadvertise_host = \"192.0.2.1\"\n");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->agent.api_listen, "192.0.2.1:2378");
  auto v6 = parse("[member]\nadvertise_host = \"::1\"\n[agent]\ninsecure = true\n");
  ASSERT_TRUE(v6) << v6.error().message;
  EXPECT_EQ(v6->agent.api_listen, "[::1]:2378");
  auto given = parse(
      "[member]\nadvertise_host = \"192.0.2.1\"\n[agent]\napi_listen = "
      "\"127.0.0.1:2400\"\n");
  ASSERT_TRUE(given) << given.error().message;
  EXPECT_EQ(given->agent.api_listen, "127.0.0.1:2400");
  // insecure needs a loopback API: the default on a network address is refused, and says so.
  std::string e = errorOf("[member]\nadvertise_host = \"192.0.2.1\"\n[agent]\ninsecure = true\n");
  EXPECT_NE(e.find("agent.api_listen (not set, the default): insecure serves the agent API in "
                   "plaintext"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("\"192.0.2.1:2378\""), std::string::npos) << e;
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
http_listen = "127.0.0.11:2377"
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
  EXPECT_NE(errorOf("[member]\nadvertise_host = \"http://h\"\n").find("IP address without scheme"),
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

// [bootstrap] discovery names a coordinating agent of an enrolled fleet by its API address.
TEST(AgentConfig, DiscoveryMayNameACoordinatingAgent) {
  auto cfg = parse(
      "[bootstrap]\ndiscovery = "
      "\"etcd-agent://127.0.0.11:2378/0123456789abcdef0123456789abcdef\"\n");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->bootstrap.discovery,
            "etcd-agent://127.0.0.11:2378/0123456789abcdef0123456789abcdef");
  EXPECT_NE(errorOf("[bootstrap]\ndiscovery = \"etcd-agent://127.0.0.11:2378/abc\"\n")
                .find("bootstrap.discovery: \"etcd-agent://127.0.0.11:2378/abc\" is not "
                      "etcd-agent://HOST:PORT/TOKEN: the token must be 32 lowercase hex digits"),
            std::string::npos);
  EXPECT_NE(errorOf("[agent]\nhttp_listen = \"127.0.0.1:0\"\n[bootstrap]\ndiscovery = "
                    "\"etcd-agent://127.0.0.11:2378/0123456789abcdef0123456789abcdef\"\n")
                .find("needs a fixed port"),
            std::string::npos);
  EXPECT_NE(errorOf("[bootstrap]\ndiscovery = \"127.0.0.11:2377/t\"\n")
                .find("or etcd-agent://HOST:PORT/TOKEN"),
            std::string::npos);
}

TEST(AgentConfig, ManagedFlagsCannotBeOverridden) {
  std::string e = errorOf("[etcd]\nextra_flags = [\"--data-dir=/tmp/x\"]\n");
  EXPECT_EQ(e,
            "/etc/etcd-agent/agent.toml:2:16: etcd.extra_flags[0]: \"--data-dir=/tmp/x\": "
            "--data-dir is set by etcd-agent itself; it comes from member.data_root (etcd's data "
            "is <data_root>/<name>/data)");
  EXPECT_TRUE(isManagedEtcdFlag("--initial-cluster-state=new"));
  EXPECT_FALSE(isManagedEtcdFlag("--snapshot-count=10"));
}

TEST(AgentConfig, AnyAddressMayServeTheApiButPlaintextOnlyLoopback) {
  // Without insecure the API is TLS (enrollment, then mutual TLS): any address of the host.
  EXPECT_TRUE(parse("[agent]\napi_listen = \"192.0.2.1:2378\"\n"));
  auto cfg = parse("[agent]\napi_listen = \"127.0.0.12:2378\"\ninsecure = true\n");
  ASSERT_TRUE(cfg);
  EXPECT_TRUE(cfg->agent.insecure);
  EXPECT_TRUE(parse("[agent]\napi_listen = \"[::1]:2378\"\ninsecure = true\n"));
  EXPECT_FALSE(parse("")->agent.insecure) << "secure by default";
  std::string e = errorOf("[agent]\napi_listen = \"192.0.2.1:2378\"\ninsecure = true\n");
  EXPECT_NE(e.find("agent.toml:2:14: agent.api_listen: insecure serves the agent API in plaintext"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("only on loopback"), std::string::npos) << e;
  EXPECT_NE(errorOf("[agent]\ninsecure = \"yes\"\n").find("expected true or false, got a string"),
            std::string::npos);
  EXPECT_FALSE(insecureListenAllowed("192.0.2.1:2378"));
  EXPECT_TRUE(insecureListenAllowed("127.0.0.1:2378"));
}

TEST(AgentConfig, ShippedConfigParses) {
  // The commented default config that the package installs must stay valid.
  auto cfg = loadAgentConfig(ETCD_AGENT_SOURCE_DIR "/config/agent.toml");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->cluster.token, "etcd-agent");
}

TEST(AgentConfig, SnapshotsAreDailyByDefaultUnderTheDataRoot) {
  auto cfg = parseAgentConfig("[member]\ndata_root = \"/srv/etcd\"\n", "agent.toml", "m1");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->snapshot.schedule.kind, SnapshotSchedule::Kind::kCalendar);
  EXPECT_EQ(cfg->snapshot.schedule.text, "daily");
  EXPECT_EQ(cfg->snapshot.dir, "/srv/etcd/snapshots");
  EXPECT_EQ(cfg->snapshot.retention.keep_last, 3u);
  EXPECT_EQ(cfg->snapshot.retention.keep_daily, 7u);
  EXPECT_EQ(cfg->snapshot.retention.keep_weekly, 4u);
  EXPECT_EQ(cfg->snapshot.drill.text, "daily");
  EXPECT_FALSE(cfg->snapshot.drill_each);
}

TEST(AgentConfig, SnapshotIntervalAndRetentionAreRead) {
  auto cfg = parseAgentConfig(
      "[snapshot]\ninterval = \"30m\"\ndir = \"/backups\"\nkeep_last = 10\nkeep_hourly = 24\n",
      "agent.toml", "m1");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->snapshot.schedule.kind, SnapshotSchedule::Kind::kInterval);
  EXPECT_EQ(cfg->snapshot.schedule.interval, std::chrono::minutes(30));
  EXPECT_EQ(cfg->snapshot.schedule.text, "every 30m");
  EXPECT_EQ(cfg->snapshot.dir, "/backups");
  EXPECT_EQ(cfg->snapshot.retention.keep_last, 10u);
  EXPECT_EQ(cfg->snapshot.retention.keep_hourly, 24u);
}

TEST(AgentConfig, BadSnapshotSettingsAreRefusedWhereTheyAre) {
  expectRefusedAt("[snapshot]\nschedule = \"nightly\"\n", "2:12", "\"*-*-* HH:MM\"");
  expectRefusedAt("[snapshot]\ninterval = \"soon\"\n", "2:12", "at least 1s");
  expectRefusedAt("[snapshot]\ninterval = \"500ms\"\n", "2:12", "at least 1s");
  expectRefusedAt("[snapshot]\nschedule = \"daily\"\ninterval = \"1h\"\n", "3:12", "not both");
  expectRefusedAt("[snapshot]\ndir = \"backups\"\n", "2:7", "absolute path");
  expectRefusedAt("[snapshot]\nkeep_last = -1\n", "2:13", "0..100000");
  expectRefusedAt("[snapshot]\nkeep_last = 0\nkeep_hourly = 0\nkeep_daily = 0\nkeep_weekly = 0\n",
                  "2:13", "keep at least one");
  expectRefusedAt("[snapshot]\nkeep = 3\n", "2:1", "unknown key");
  // Off needs no retention.
  EXPECT_TRUE(
      parseAgentConfig("[snapshot]\nschedule = \"off\"\nkeep_last = 0\nkeep_daily = "
                       "0\nkeep_weekly = 0\n",
                       "agent.toml", "m1"));
}

TEST(AgentConfig, DrillsFollowACalendarOrEverySnapshot) {
  auto each = parseAgentConfig("[snapshot]\ndrill = \"after-snapshot\"\n", "agent.toml", "m1");
  ASSERT_TRUE(each) << each.error().message;
  EXPECT_TRUE(each->snapshot.drill_each);
  auto weekly = parseAgentConfig("[snapshot]\ndrill = \"weekly\"\n", "agent.toml", "m1");
  ASSERT_TRUE(weekly) << weekly.error().message;
  EXPECT_EQ(weekly->snapshot.drill.weekday, 1);
  expectRefusedAt("[snapshot]\ndrill = \"sometimes\"\n", "2:9", "\"after-snapshot\"");
}

TEST(AgentConfig, UploadCommandIsSplitAndItsProgramFound) {
  auto cfg = parseAgentConfig(
      "[snapshot]\nupload_command = \"sh -c 'cp \\\"$1\\\" /b' up {file}\"\nupload_timeout = "
      "\"5m\"\n",
      "agent.toml", "m1");
  ASSERT_TRUE(cfg) << cfg.error().message;
  ASSERT_TRUE(cfg->snapshot.upload.command);
  const auto& words = cfg->snapshot.upload.command->words;
  ASSERT_EQ(words.size(), 5u);
  EXPECT_TRUE(words[0].starts_with("/") && words[0].ends_with("/sh")) << words[0];
  EXPECT_EQ(words[2], "cp \"$1\" /b");
  EXPECT_EQ(words[4], "{file}");
  EXPECT_EQ(cfg->snapshot.upload.timeout, std::chrono::minutes(5));
  // None by default.
  auto plain = parseAgentConfig("", "agent.toml", "m1");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->snapshot.upload.command);
}

TEST(AgentConfig, BadUploadCommandsAreRefusedWhereTheyAre) {
  expectRefusedAt("[snapshot]\nupload_command = \"\"\n", "2:18", "no program");
  expectRefusedAt("[snapshot]\nupload_command = \"cp {file} '/b\"\n", "2:18", "unterminated");
  expectRefusedAt("[snapshot]\nupload_command = \"cp {file} /b/{when}\"\n", "2:18", "{when}");
  expectRefusedAt("[snapshot]\nupload_command = \"cp {name} /b\"\n", "2:18", "{file}");
  expectRefusedAt("[snapshot]\nupload_command = \"no-such-uploader-x {file}\"\n", "2:18",
                  "no program \"no-such-uploader-x\" in PATH");
  expectRefusedAt("[snapshot]\nupload_command = \"/nonexistent/up {file}\"\n", "2:18",
                  "not an executable");
  expectRefusedAt("[snapshot]\nupload_timeout = \"soon\"\n", "2:18", "at least 1s");
}

TEST(AgentConfig, CopiesGoToTheOtherAgentsByDefault) {
  auto cfg = parseAgentConfig("", "agent.toml", "m1");
  ASSERT_TRUE(cfg);
  EXPECT_TRUE(cfg->snapshot.copy_to_peers);
  EXPECT_EQ(cfg->snapshot.keep_copies, 2u);
  auto off =
      parseAgentConfig("[snapshot]\ncopy_to_peers = false\nkeep_copies = 0\n", "agent.toml", "m1");
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_FALSE(off->snapshot.copy_to_peers);
  EXPECT_EQ(off->snapshot.keep_copies, 0u);
  expectRefusedAt("[snapshot]\nkeep_copies = 1001\n", "2:15", "0..1000");
  expectRefusedAt("[snapshot]\ncopy_to_peers = \"yes\"\n", "2:17", "true or false");
}

TEST(AgentConfig, SnapshotScopeIsTheMembersByDefaultOrTheClusters) {
  auto cfg = parseAgentConfig("", "agent.toml", "m1");
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg->snapshot.scope, SnapshotSettings::Scope::kMember);
  auto cluster = parseAgentConfig("[snapshot]\nscope = \"cluster\"\n", "agent.toml", "m1");
  ASSERT_TRUE(cluster) << cluster.error().message;
  EXPECT_EQ(cluster->snapshot.scope, SnapshotSettings::Scope::kCluster);
  expectRefusedAt("[snapshot]\nscope = \"host\"\n", "2:9",
                  "expected \"member\" (every agent snapshots its own member) or \"cluster\"");
}

TEST(AgentConfig, SnapshotsAreKeptUncompressedUnlessZstdIsAskedFor) {
  auto cfg = parseAgentConfig("", "agent.toml", "m1");
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg->snapshot.compress, SnapshotCompression::kNone);
  auto zstd = parseAgentConfig("[snapshot]\ncompress = \"zstd\"\n", "agent.toml", "m1");
  ASSERT_TRUE(zstd) << zstd.error().message;
  EXPECT_EQ(zstd->snapshot.compress, SnapshotCompression::kZstd);
  expectRefusedAt("[snapshot]\ncompress = \"gzip\"\n", "2:12",
                  "expected \"zstd\" (keep snapshots as NAME.db.zst) or \"none\", got \"gzip\"");
}

TEST(AgentConfig, NospaceRecoveryAndTheDefragPolicyAreOnByDefault) {
  auto cfg = parseAgentConfig("", "agent.toml", "m1");
  ASSERT_TRUE(cfg);
  EXPECT_TRUE(cfg->nospace.recover);
  EXPECT_EQ(cfg->nospace.disarm_below_percent, 80u);
  EXPECT_TRUE(cfg->defrag.automatic);
  EXPECT_EQ(cfg->defrag.min_free_percent, 50u);
  EXPECT_EQ(cfg->defrag.min_free_bytes, 100LL << 20);
  EXPECT_EQ(cfg->defrag.window, "");
  auto set = parseAgentConfig(
      "[nospace]\nrecover = false\ndisarm_below_percent = 60\n[defrag]\nauto = false\n"
      "min_free_percent = 30\nmin_free_bytes = 0\nwindow = \"22:00-04:00\"\n",
      "agent.toml", "m1");
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_FALSE(set->nospace.recover);
  EXPECT_EQ(set->nospace.disarm_below_percent, 60u);
  EXPECT_FALSE(set->defrag.automatic);
  EXPECT_EQ(set->defrag.min_free_percent, 30u);
  EXPECT_EQ(set->defrag.min_free_bytes, 0);
  EXPECT_EQ(set->defrag.window, "22:00-04:00");
  expectRefusedAt("[nospace]\ndisarm_below_percent = 99\n", "2:24", "10..95");
  expectRefusedAt("[nospace]\nrecover = 1\n", "2:11", "true or false");
  expectRefusedAt("[defrag]\nmin_free_percent = 0\n", "2:20", "1..100");
  expectRefusedAt("[defrag]\nmin_free_bytes = -1\n", "2:18", "0 or more");
  expectRefusedAt("[defrag]\nwindow = \"2am-5am\"\n", "2:10", "HH:MM-HH:MM");
  expectRefusedAt("[defrag]\nwindows = \"02:00-05:00\"\n", "2:1", "windows");
}

TEST(AgentConfig, MissingFileSaysSo) {
  auto cfg = loadAgentConfig("/nonexistent/agent.toml");
  ASSERT_FALSE(cfg);
  EXPECT_NE(cfg.error().message.find("/nonexistent/agent.toml"), std::string::npos);
}

TEST(AgentConfig, MemberNamesAreEtcdCompatibleAndPathSafe) {
  for (const char* bad : {"..", ".", ".hidden", "a/b", "-m1", "m 1", "m\\u00e91", ""}) {
    expectRefusedAt("[member]\nname = \"" + std::string(bad) + "\"\n", "2:8", "member.name");
  }
  expectRefusedAt("[member]\nname = \"" + std::string(64, 'a') + "\"\n", "2:8", "64 characters");
  for (const char* reserved : {"discovery", "restore", "pki", "snapshots", "drill"}) {
    expectRefusedAt("[member]\nname = \"" + std::string(reserved) + "\"\n", "2:8", "reserved");
  }
  for (const char* good : {"m1", "db-1.prod_x", "9", "M.1-_"}) {
    EXPECT_TRUE(parse("[member]\nname = \"" + std::string(good) + "\"\n")) << good;
  }
  EXPECT_TRUE(parse("[member]\nname = \"" + std::string(63, 'a') + "\"\n"));
}

TEST(AgentConfig, AHugeNameGivesAShortMessage) {
  const std::string e = errorOf("[member]\nname = \"" + std::string(1 << 20, 'x') + "\"\n");
  EXPECT_LT(e.size(), 300U) << e.substr(0, 300);
  EXPECT_NE(e.find("1048576 characters"), std::string::npos) << e.substr(0, 300);
}

TEST(AgentConfig, AnInvalidHostNameAsTheDefaultNameSaysItIsTheDefault) {
  auto r = parseAgentConfig("", "/etc/etcd-agent/agent.toml", "bad/host");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind(
                "/etc/etcd-agent/agent.toml: member.name (not set, the default): expected", 0),
            0U)
      << r.error().message;
}

TEST(AgentConfig, WildcardAndNamedAdvertiseHostsAreRefused) {
  for (const char* host : {"0.0.0.0", "::", "0:0::0"}) {
    expectRefusedAt("[member]\nadvertise_host = \"" + std::string(host) + "\"\n", "2:18",
                    "wildcard");
  }
  expectRefusedAt("[member]\nadvertise_host = \"\"\n", "2:18", "member.advertise_host");
  // etcd binds its listeners only to IP addresses ("expected IP in URL for binding").
  expectRefusedAt("[member]\nadvertise_host = \"db1.example.com\"\n", "2:18",
                  "etcd binds only IP addresses");
  EXPECT_TRUE(parse("[member]\nadvertise_host = \"::1\"\n"));
  EXPECT_TRUE(parse("[member]\nadvertise_host = \"localhost\"\n"));
}

TEST(AgentConfig, WildcardHttpListenIsRefused) {
  for (const char* listen : {"0.0.0.0:2377", "[::]:2377", ":2377"}) {
    expectRefusedAt("[agent]\nhttp_listen = \"" + std::string(listen) + "\"\n", "2:15",
                    "agent.http_listen");
  }
  expectRefusedAt("[agent]\nhttp_listen = \"0.0.0.0:2377\"\n", "2:15", "wildcard");
  expectRefusedAt("[agent]\nhttp_listen = \"localhost.localdomain:2377\"\n", "2:15",
                  "expected an IP address");
  EXPECT_TRUE(parse("[agent]\nhttp_listen = \"127.0.0.11:2377\"\n"));
}

TEST(AgentConfig, ListenersMayNotShareASocket) {
  expectRefusedAt("[agent]\napi_listen = \"127.0.0.1:2378\"\nhttp_listen = \"127.0.0.1:2378\"\n",
                  "3:15", "must differ from agent.api_listen");
  // etcd's client port (on advertise_host, and on 127.0.0.1 when advertising elsewhere) and peer
  // port.
  expectRefusedAt("[agent]\napi_listen = \"127.0.0.1:2379\"\n", "2:14",
                  "is etcd's own socket (member.client_port = 2379");
  expectRefusedAt("[agent]\napi_listen = \"127.0.0.1:2380\"\n", "2:14",
                  "is etcd's own socket (member.peer_port = 2380");
  expectRefusedAt("[agent]\nhttp_listen = \"127.0.0.1:2380\"\n", "2:15", "member.peer_port");
  expectRefusedAt("[member]\nadvertise_host = \"::1\"\n[agent]\napi_listen = \"[::1]:2379\"\n",
                  "4:14", "member.client_port");
  // Another loopback address, or ports picked at plan time, do not collide.
  EXPECT_TRUE(
      parse("[member]\nadvertise_host = \"127.0.0.11\"\n[agent]\n"
            "api_listen = \"127.0.0.12:2379\"\n"));
  EXPECT_TRUE(
      parse("[member]\nclient_port = 0\npeer_port = 0\n[agent]\n"
            "api_listen = \"127.0.0.1:2379\"\nhttp_listen = \"127.0.0.1:2380\"\n"));
}

TEST(AgentConfig, UnsafeOrWildcardExtraFlagsAreRefusedWithTheirPosition) {
  expectRefusedAt("[etcd]\nextra_flags = [\"--snapshot-count=5\", \"--force-new-cluster\"]\n",
                  "2:38",
                  "etcd.extra_flags[1]: \"--force-new-cluster\": --force-new-cluster is refused");
  expectRefusedAt("[etcd]\nextra_flags = [\"--force-new-cluster=true\"]\n", "2:16",
                  "disaster-recovery");
  for (const char* url : {"http://0.0.0.0:2381", "http://[::]:2381", "http://:2381",
                          "http://127.0.0.1:2381,http://0.0.0.0:2382"}) {
    expectRefusedAt("[etcd]\nextra_flags = [\"--listen-metrics-urls=" + std::string(url) + "\"]\n",
                    "2:16", "listens on every address");
  }
  expectRefusedAt("[etcd]\nextra_flags = [\"--name=x\"]\n", "2:16", "it comes from member.name");
  expectRefusedAt("[etcd]\nextra_flags = [\"--initial-cluster-state=existing\"]\n", "2:16",
                  "the bootstrap plan");
  EXPECT_TRUE(
      parse("[etcd]\nextra_flags = [\"--listen-metrics-urls=http://127.0.0.1:2381\", "
            "\"--enable-pprof\"]\n"));
}

}  // namespace
}  // namespace etcdagent::agent
