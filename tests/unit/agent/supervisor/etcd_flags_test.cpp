// Golden command lines for every plan mode.

#include "agent/supervisor/etcd_flags.hpp"

#include <gtest/gtest.h>

#include "agent/member/tls_conversion.hpp"

namespace etcdagent::agent {
namespace {

AgentConfig config(std::string advertise = "127.0.0.11") {
  auto cfg =
      parseAgentConfig("[member]\nname = \"m1\"\nadvertise_host = \"" + advertise +
                           "\"\ndata_root = \"/var/lib/etcd-agent\"\n[cluster]\ntoken = \"t1\"\n",
                       "agent.toml", "host");
  EXPECT_TRUE(cfg);
  return *cfg;
}

v1::MemberState state(v1::PlanMode mode, bool started_once = false) {
  v1::MemberState s;
  s.set_version(1);
  auto* p = s.mutable_plan();
  p->set_mode(mode);
  p->set_cluster_token("t1");
  p->set_member_name("m1");
  p->set_client_port(2379);
  p->set_peer_port(2380);
  p->set_initial_cluster("m1=http://127.0.0.11:2380,m2=http://127.0.0.12:2380");
  if (mode == v1::PLAN_MODE_DISCOVERY) p->set_discovery_url("http://127.0.0.11:2377/abc");
  s.set_started_once(started_once);
  return s;
}

const std::string kCommon =
    "/usr/bin/etcd --name=m1 --data-dir=/var/lib/etcd-agent/m1/data "
    "--listen-client-urls=http://127.0.0.11:2379 --advertise-client-urls=http://127.0.0.11:2379 "
    "--listen-peer-urls=http://127.0.0.11:2380 "
    "--initial-advertise-peer-urls=http://127.0.0.11:2380 ";
const std::string kTail =
    " --auto-compaction-mode=periodic --auto-compaction-retention=24h "
    "--quota-backend-bytes=8589934592 --strict-reconfig-check=true --logger=zap "
    "--log-outputs=stderr";

TEST(EtcdFlags, NewClusterPlan) {
  auto argv = etcdCommandLine(config(), state(v1::PLAN_MODE_NEW));
  ASSERT_TRUE(argv) << argv.error().message;
  EXPECT_EQ(shellJoin(*argv),
            kCommon +
                "--initial-cluster=m1=http://127.0.0.11:2380,m2=http://127.0.0.12:2380 "
                "--initial-cluster-state=new --initial-cluster-token=t1" +
                kTail);
}

// A TLS plan: https URLs, the enrollment's certificates from <data_root>/pki/<name>, and client
// certificates required on both ports.
TEST(EtcdFlags, ATlsPlanServesHttpsWithTheEnrollmentsCertificatesAndRequiresClientCerts) {
  auto s = state(v1::PLAN_MODE_NEW);
  s.mutable_plan()->set_tls(true);
  s.mutable_plan()->set_initial_cluster("m1=https://127.0.0.11:2380,m2=https://127.0.0.12:2380");
  auto argv = etcdCommandLine(config(), s);
  ASSERT_TRUE(argv) << argv.error().message;
  const std::string pki = "/var/lib/etcd-agent/pki/m1/";
  EXPECT_EQ(shellJoin(*argv),
            "/usr/bin/etcd --name=m1 --data-dir=/var/lib/etcd-agent/m1/data "
            "--listen-client-urls=https://127.0.0.11:2379 "
            "--advertise-client-urls=https://127.0.0.11:2379 "
            "--listen-peer-urls=https://127.0.0.11:2380 "
            "--initial-advertise-peer-urls=https://127.0.0.11:2380 "
            "--initial-cluster=m1=https://127.0.0.11:2380,m2=https://127.0.0.12:2380 "
            "--initial-cluster-state=new --initial-cluster-token=t1 "
            "--cert-file=" +
                pki + "etcd-server.crt --key-file=" + pki +
                "etcd-server.key "
                "--trusted-ca-file=" +
                pki +
                "ca.crt --client-cert-auth=true "
                "--peer-cert-file=" +
                pki + "etcd-peer.crt --peer-key-file=" + pki +
                "etcd-peer.key "
                "--peer-trusted-ca-file=" +
                pki + "ca.crt --peer-client-cert-auth=true" + kTail);
  const auto urls = memberUrls(config("192.0.2.1"), 2379, 2380, true);
  EXPECT_EQ(urls.listen_client,
            (std::vector<std::string>{"https://192.0.2.1:2379", "https://127.0.0.1:2379"}));
}

// `etcd-fleet tls enable`, first stage: the member keeps serving http:// on both ports, and
// etcd gets its peer certificate and the fleet CA, which its raft transport uses to dial the
// members that have moved to https:// already. No client-side TLS flag: its client port stays
// plaintext.
TEST(EtcdFlags, APeerReadyMemberServesHttpAndDialsHttpsPeersWithItsPeerCertificate) {
  auto s = state(v1::PLAN_MODE_NEW, true);
  s.mutable_plan()->set_tls_stage(v1::TLS_STAGE_PEER_READY);
  auto argv = etcdCommandLine(config(), s);
  ASSERT_TRUE(argv) << argv.error().message;
  const std::string pki = "/var/lib/etcd-agent/pki/m1/";
  EXPECT_EQ(shellJoin(*argv),
            kCommon +
                "--initial-cluster=m1=http://127.0.0.11:2380,m2=http://127.0.0.12:2380 "
                "--initial-cluster-state=existing --initial-cluster-token=t1 "
                "--peer-cert-file=" +
                pki + "etcd-peer.crt --peer-key-file=" + pki +
                "etcd-peer.key --peer-trusted-ca-file=" + pki + "ca.crt" + kTail);
}

// The conversion's last stage (convertedPlan) is the plan of a member planned TLS from the start,
// so it runs with exactly those flags: https:// on both ports and certificate auth on both.
TEST(EtcdFlags, AConvertedMemberRunsWithTheFlagsOfAMemberPlannedTls) {
  auto converted = state(v1::PLAN_MODE_NEW, true);
  converted.mutable_plan()->set_tls_stage(v1::TLS_STAGE_PEER_READY);
  v1::SetMemberTlsRequest to_tls;
  to_tls.set_tls(true);
  auto plan = convertedPlan(converted, to_tls, {.enrolled = true, .started_once = true});
  ASSERT_TRUE(plan) << plan.error().message;
  *converted.mutable_plan() = *plan;
  auto planned = state(v1::PLAN_MODE_NEW, true);
  planned.mutable_plan()->set_tls(true);
  planned.mutable_plan()->set_initial_cluster(
      "m1=https://127.0.0.11:2380,m2=https://127.0.0.12:2380");
  auto a = etcdCommandLine(config(), converted);
  auto b = etcdCommandLine(config(), planned);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(shellJoin(*a), shellJoin(*b));
  const std::string line = shellJoin(*a);
  EXPECT_NE(line.find("--listen-client-urls=https://127.0.0.11:2379 "), std::string::npos);
  EXPECT_NE(line.find("--client-cert-auth=true"), std::string::npos);
  EXPECT_NE(line.find("--peer-client-cert-auth=true"), std::string::npos);
  EXPECT_EQ(line.find("http://"), std::string::npos) << line;
}

TEST(EtcdFlags, ARestartedNewMemberComesBackAsExisting) {
  auto argv = etcdCommandLine(config(), state(v1::PLAN_MODE_NEW, true));
  ASSERT_TRUE(argv);
  EXPECT_NE(shellJoin(*argv).find("--initial-cluster-state=existing"), std::string::npos);
  EXPECT_EQ(shellJoin(*argv).find("--initial-cluster-state=new"), std::string::npos);
}

TEST(EtcdFlags, LearnerAndExistingPlansStartExisting) {
  for (auto mode : {v1::PLAN_MODE_LEARNER, v1::PLAN_MODE_EXISTING}) {
    auto argv = etcdCommandLine(config(), state(mode));
    ASSERT_TRUE(argv);
    EXPECT_EQ(shellJoin(*argv),
              kCommon +
                  "--initial-cluster=m1=http://127.0.0.11:2380,m2=http://127.0.0.12:2380 "
                  "--initial-cluster-state=existing --initial-cluster-token=t1" +
                  kTail);
  }
}

TEST(EtcdFlags, DiscoveryPlanNeverFallsBackToProxy) {
  auto argv = etcdCommandLine(config(), state(v1::PLAN_MODE_DISCOVERY));
  ASSERT_TRUE(argv);
  EXPECT_EQ(shellJoin(*argv),
            kCommon +
                "--discovery=http://127.0.0.11:2377/abc --discovery-fallback=exit "
                "--initial-cluster-token=t1" +
                kTail);
}

// A coordinating agent (etcd-agent://) is reached through this agent's own HTTP endpoint as
// etcd's discovery proxy, which relays to it; the URL names the coordinator, alike on every
// member (etcd computes its member IDs from it).
TEST(EtcdFlags, ARelayedDiscoveryPlanRegistersAtTheAgentsOwnHttpEndpoint) {
  auto s = state(v1::PLAN_MODE_DISCOVERY);
  s.mutable_plan()->set_discovery_url(
      "etcd-agent://127.0.0.12:2378/0123456789abcdef0123456789abcdef");
  auto cfg = config();
  cfg.agent.http_listen = "127.0.0.11:2377";
  auto argv = etcdCommandLine(cfg, s);
  ASSERT_TRUE(argv) << argv.error().message;
  EXPECT_EQ(shellJoin(*argv),
            kCommon +
                "--discovery=http://127.0.0.12:2378/0123456789abcdef0123456789abcdef "
                "--discovery-proxy=http://127.0.0.11:2377 "
                "--discovery-fallback=exit --initial-cluster-token=t1" +
                kTail);
  cfg.agent.http_listen = "127.0.0.11:0";
  auto unbound = etcdCommandLine(cfg, s);
  ASSERT_FALSE(unbound);
  EXPECT_NE(unbound.error().message.find("needs a fixed port"), std::string::npos);
}

TEST(EtcdFlags, NonLoopbackAdvertiseAlsoListensOnLoopback) {
  // TEST-NET-1 (RFC 5737): a non-loopback address that nothing here connects to.
  auto cfg = config("192.0.2.11");
  auto argv = etcdCommandLine(cfg, state(v1::PLAN_MODE_NEW));
  ASSERT_TRUE(argv);
  EXPECT_NE(
      shellJoin(*argv).find("--listen-client-urls=http://192.0.2.11:2379,http://127.0.0.1:2379 "),
      std::string::npos);
  EXPECT_NE(shellJoin(*argv).find("--advertise-client-urls=http://192.0.2.11:2379 "),
            std::string::npos);
}

TEST(EtcdFlags, AnExtraFlagTheConfigWouldRefuseIsRefusedHereToo) {
  auto cfg = config();
  cfg.etcd.extra_flags = {"--force-new-cluster"};
  auto argv = etcdCommandLine(cfg, state(v1::PLAN_MODE_NEW));
  ASSERT_FALSE(argv);
  EXPECT_NE(argv.error().message.find("--force-new-cluster is refused"), std::string::npos)
      << argv.error().message;
}

TEST(EtcdFlags, ExtraFlagsComeLastAndIpv6IsBracketed) {
  auto cfg = config("::1");
  cfg.etcd.extra_flags = {"--snapshot-count=5000"};
  auto argv = etcdCommandLine(cfg, state(v1::PLAN_MODE_NEW));
  ASSERT_TRUE(argv);
  EXPECT_EQ(argv->back(), "--snapshot-count=5000");
  EXPECT_NE(shellJoin(*argv).find("http://[::1]:2379"), std::string::npos);
}

TEST(EtcdFlags, RefusesAPlanForAnotherMemberOrWithoutPorts) {
  auto s = state(v1::PLAN_MODE_NEW);
  s.mutable_plan()->set_member_name("m2");
  auto wrong = etcdCommandLine(config(), s);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("\"m2\""), std::string::npos);
  auto noport = state(v1::PLAN_MODE_NEW);
  noport.mutable_plan()->set_client_port(0);
  EXPECT_FALSE(etcdCommandLine(config(), noport));
  EXPECT_FALSE(etcdCommandLine(config(), state(v1::PLAN_MODE_UNSPECIFIED)));
}

TEST(EtcdFlags, ShellJoinQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(shellJoin({"a", "b c", "it's"}), "a 'b c' 'it'\\''s'");
}

}  // namespace
}  // namespace etcdagent::agent
