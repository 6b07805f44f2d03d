// Hostile and wrong input to the secure-by-default fleet (docs/security.md, "Threat model"), with
// the real etcd-agent, etcd-fleet, etcd and etcdctl on loopback. Each attempt is refused with an
// error that says what is wrong; afterwards the agent answers the fleet as before, and nothing
// changed: not etcd's keys or members, not the agent's pki files, not tokens.json.
//
// Some attempts need an actor the product does not ship: a client presenting a certificate of
// another CA or an expired one (made here with lib/tls), a recording of a real enrollment (the
// fleet's flow in-process, with a dialer that keeps what went over the wire), and a host that holds
// a stolen token and answers Hello with CSRs of its choosing (a gRPC server in this process).

#include <gmock/gmock.h>
#include <grpc/grpc_security_constants.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#include "agentclient/enroll_client.hpp"
#include "common/file_util.hpp"
#include "common/snapshot_digest.hpp"
#include "etcdagent/v1/agent.grpc.pb.h"
#include "etcdagent/v1/enroll.grpc.pb.h"
#include "fleet/enroll.hpp"
#include "fleet/enroll_token.hpp"
#include "fleet/token_store.hpp"
#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"
#include "tls/csr.hpp"
#include "tls/fleet_pki.hpp"
#include "tls/self_signed.hpp"
#include "tls/sign.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using Clock = std::chrono::system_clock;

template <class T>
T take(Result<T> r, const std::string& what) {
  if (!r) throw std::runtime_error(what + ": " + r.error().message);
  return std::move(*r);
}

std::string text(const std::string& path) {
  return readFile(path).value_or("<" + path + " unreadable>");
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

unsigned modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Every file of a directory and its content: what "nothing changed" compares.
std::map<std::string, std::string> filesIn(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    out[entry.path().filename().string()] = text(entry.path().string());
  }
  return out;
}

// ---- TLS identities and raw calls -------------------------------------------------------------

struct Identity {
  std::string key_pem;
  std::string cert_pem;
};

// A client certificate of `ca` with common name `cn`, valid for `validity` from `now` (a `now` in
// the past makes an expired one).
Identity clientIdentity(const tls::Ca& ca, const std::string& cn,
                        Clock::time_point now = Clock::now(),
                        std::chrono::seconds validity = tls::kLeafValidity) {
  auto key = take(tls::Key::generate(), "key");
  auto csr = take(tls::Csr::parse(take(tls::createCsr(key, {.common_name = cn}), "CSR")), "CSR");
  auto cert = take(
      tls::signCsr(ca, csr, {.profile = tls::Profile::kClient, .validity = validity, .now = now}),
      "sign");
  return {.key_pem = key.pem(), .cert_pem = cert.pem()};
}

// TLS that presents `who` (nothing when empty) and verifies the server under `ca_pem` for the
// address dialled, or not at all when `ca_pem` is "" (an agent waiting for enrollment has only a
// self-signed certificate).
std::shared_ptr<grpc::ChannelCredentials> tlsCredentials(const Identity& who,
                                                         const std::string& ca_pem) {
  if (!ca_pem.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ca_pem;
    ssl.pem_private_key = who.key_pem;
    ssl.pem_cert_chain = who.cert_pem;
    return grpc::SslCredentials(ssl);
  }
  grpc::experimental::TlsChannelCredentialsOptions options;
  if (!who.cert_pem.empty()) {
    options.set_certificate_provider(
        std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
            std::vector<grpc::experimental::IdentityKeyCertPair>{{who.key_pem, who.cert_pem}}));
    options.watch_identity_key_cert_pairs();
  }
  options.set_verify_server_certs(false);
  options.set_check_call_host(false);
  options.set_certificate_verifier(std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
  return grpc::experimental::TlsCredentials(options);
}

// A channel of its own (no subchannel shared with an earlier call and its handshake).
std::shared_ptr<grpc::Channel> channelTo(const std::string& address,
                                         const std::shared_ptr<grpc::ChannelCredentials>& creds) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, creds, args);
}

grpc::Status getStatus(const std::string& address,
                       const std::shared_ptr<grpc::ChannelCredentials>& creds,
                       v1::AgentStatus* out = nullptr) {
  v1::Agent::Stub stub(channelTo(address, creds));
  grpc::ClientContext ctx;
  ctx.set_deadline(Clock::now() + 10s);
  v1::AgentStatus status;
  auto s = stub.GetStatus(&ctx, v1::GetStatusRequest{}, &status);
  if (out != nullptr) *out = status;
  return s;
}

grpc::Status hello(const std::string& address,
                   const std::shared_ptr<grpc::ChannelCredentials>& creds,
                   const v1::EnrollHelloRequest& req, v1::EnrollHelloResponse* out = nullptr) {
  v1::Enroll::Stub stub(channelTo(address, creds));
  grpc::ClientContext ctx;
  ctx.set_deadline(Clock::now() + 10s);
  v1::EnrollHelloResponse resp;
  auto s = stub.Hello(&ctx, req, &resp);
  if (out != nullptr) *out = resp;
  return s;
}

grpc::Status finish(const std::string& address,
                    const std::shared_ptr<grpc::ChannelCredentials>& creds,
                    const v1::EnrollFinishRequest& req) {
  v1::Enroll::Stub stub(channelTo(address, creds));
  grpc::ClientContext ctx;
  ctx.set_deadline(Clock::now() + 10s);
  v1::EnrollFinishResponse resp;
  return stub.Finish(&ctx, req, &resp);
}

v1::EnrollHelloRequest helloRequest(const std::string& ca_pem, std::string nonce) {
  v1::EnrollHelloRequest req;
  req.set_ca_cert_pem(ca_pem);
  req.set_nonce(std::move(nonce));
  return req;
}

// ---- recording a real enrollment --------------------------------------------------------------

// What went over the wire in one enrollment.
struct Recording {
  v1::EnrollHelloRequest hello;
  v1::EnrollHelloResponse answer;
  v1::EnrollFinishRequest finish;
};

class RecordingApi final : public fleet::EnrollApi {
 public:
  RecordingApi(std::unique_ptr<fleet::EnrollApi> inner, Recording& into)
      : inner_(std::move(inner)), into_(into) {}
  [[nodiscard]] const std::string& address() const override { return inner_->address(); }
  Result<fleet::EnrollHello> hello(const std::string& ca_cert_pem,
                                   const std::string& nonce) const override {
    into_.hello = helloRequest(ca_cert_pem, nonce);
    auto r = inner_->hello(ca_cert_pem, nonce);
    if (r) into_.answer = r->response;
    return r;
  }
  Result<v1::EnrollFinishResponse> finish(const v1::EnrollFinishRequest& request) const override {
    into_.finish = request;
    return inner_->finish(request);
  }

 private:
  std::unique_ptr<fleet::EnrollApi> inner_;
  Recording& into_;
};

class RecordingDialer final : public fleet::EnrollDialer {
 public:
  explicit RecordingDialer(Recording& into) : into_(into) {}
  Result<std::unique_ptr<fleet::EnrollApi>> dial(const std::string& address,
                                                 const fleet::FleetClientIdentity& identity,
                                                 Duration timeout) const override {
    auto api = GrpcEnrollDialer().dial(address, identity, timeout);
    if (!api) return fail(api.error());
    return std::unique_ptr<fleet::EnrollApi>(
        std::make_unique<RecordingApi>(std::move(*api), into_));
  }

 private:
  Recording& into_;
};

// ---- a host that is not an etcd-agent ---------------------------------------------------------

// An Enroll service on `host`:<free port> over TLS with a self-signed certificate of its own key,
// asking for (and not verifying) the client's certificate, as a waiting agent does. Its Hello
// answers what the test says; its Finish is counted and refused: a test asserts nobody sent one.
class FakeAgent final : public v1::Enroll::Service {
 public:
  using Answer = std::function<v1::EnrollHelloResponse(
      const FakeAgent& self, const v1::EnrollHelloRequest& request, const std::string& client_pem)>;

  FakeAgent(const std::string& host, Answer answer)
      : key_(take(tls::Key::generate(), "fake agent key")),
        cert_(take(tls::selfSignedServerCertificate(key_, "etcd-agent:m9", {host}), "fake cert")),
        address_(host + ":" + std::to_string(freePort())),
        answer_(std::move(answer)) {
    grpc::SslServerCredentialsOptions ssl(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_BUT_DONT_VERIFY);
    ssl.pem_key_cert_pairs.push_back({key_.pem(), cert_.pem()});
    grpc::ServerBuilder builder;
    builder.AddListeningPort(address_, grpc::SslServerCredentials(ssl));
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (!server_) throw std::runtime_error("the fake agent cannot listen on " + address_);
  }
  ~FakeAgent() override { server_->Shutdown(Clock::now() + 1s); }
  FakeAgent(const FakeAgent&) = delete;
  FakeAgent& operator=(const FakeAgent&) = delete;

  [[nodiscard]] const std::string& address() const { return address_; }
  [[nodiscard]] const tls::Key& serverKey() const { return key_; }
  [[nodiscard]] const tls::Certificate& serverCert() const { return cert_; }
  [[nodiscard]] int finishCalls() const { return finish_calls_; }

  grpc::Status Hello(grpc::ServerContext* context, const v1::EnrollHelloRequest* request,
                     v1::EnrollHelloResponse* response) override {
    const auto values =
        context->auth_context()->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
    const std::string client =
        values.empty() ? "" : std::string(values.front().data(), values.front().size());
    *response = answer_(*this, *request, client);
    return grpc::Status::OK;
  }
  grpc::Status Finish(grpc::ServerContext* /*context*/, const v1::EnrollFinishRequest* /*request*/,
                      v1::EnrollFinishResponse* /*response*/) override {
    ++finish_calls_;
    return {grpc::StatusCode::PERMISSION_DENIED, "a fake agent"};
  }

 private:
  tls::Key key_;
  tls::Certificate cert_;
  std::string address_;
  Answer answer_;
  std::atomic<int> finish_calls_{0};
  std::unique_ptr<grpc::Server> server_;
};

// What a host that holds a stolen token may ask for: CSRs of its choosing (the api one for the key
// its TLS server shows), with a proof that is right, since it knows the secret.
struct ForgedAsk {
  std::string member_name = "m9";
  std::string common_name;  // "" = "etcd-agent:<member_name>", as an agent would ask
  std::vector<std::string> server_sans;
  std::vector<std::string> client_sans;
};

FakeAgent::Answer stolenTokenAnswer(const fleet::EnrollToken& token, ForgedAsk ask) {
  return [token, ask](const FakeAgent& self, const v1::EnrollHelloRequest& request,
                      const std::string& client_pem) {
    const std::string cn =
        ask.common_name.empty() ? "etcd-agent:" + ask.member_name : ask.common_name;
    auto csrFor = [&](const tls::Key& key, const std::vector<std::string>& sans) {
      return take(tls::createCsr(key, {.common_name = cn, .sans = sans}), "forged CSR");
    };
    const std::string host = fleet::hostOfAddress(self.address());
    v1::EnrollHelloResponse out;
    out.set_token_id(token.id);
    out.set_member_name(ask.member_name);
    out.set_advertise_host(host);
    out.set_hostname("fake");
    auto* csrs = out.mutable_csrs();
    csrs->set_api(csrFor(self.serverKey(), ask.server_sans));
    csrs->set_etcd_server(csrFor(take(tls::Key::generate(), "key"), ask.server_sans));
    csrs->set_etcd_peer(csrFor(take(tls::Key::generate(), "key"), ask.server_sans));
    csrs->set_etcd_client(csrFor(take(tls::Key::generate(), "key"), ask.client_sans));
    const auto client = take(tls::Certificate::fromPem(client_pem), "the fleet's certificate");
    out.set_proof(take(
        fleet::enrollProof(
            fleet::enrollSecretHash(token.secret), token.id, request.nonce(),
            sha256(csrs->api() + csrs->etcd_server() + csrs->etcd_peer() + csrs->etcd_client()),
            sha256(client.der()), sha256(self.serverCert().publicKeyDer())),
        "proof"));
    return out;
  };
}

// ---- the fleet --------------------------------------------------------------------------------

class BadInput : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string inventory_ = dir_.path() + "/fleet.toml";
  std::string pki_ = dir_.path() + "/pki";

  RunResult etcdFleet(std::vector<std::string> args, const std::string& inventory = "") {
    std::vector<std::string> argv{fleetBinary(), "--fleet",
                                  inventory.empty() ? inventory_ : inventory};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, {.timeout = 90s, .unset_env = {"ETCDCTL_ENDPOINTS", "ETCD_FLEET_ENDPOINTS"}});
  }

  // `ca init` (once) then `token create --ttl TTL`: the token, as printed.
  std::string fleetToken(const std::string& ttl = "1h") {
    if (!exists(pki_ + "/ca.key")) {
      auto ca = etcdFleet({"ca", "init"});
      EXPECT_EQ(ca.exit_code, 0) << ca.err;
    }
    auto token = etcdFleet({"token", "create", "--ttl", ttl});
    EXPECT_EQ(token.exit_code, 0) << token.err;
    std::string out = token.out;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }

  [[nodiscard]] tls::FleetPki pki() const { return take(tls::loadFleetPki(inventory_), "pki"); }
  [[nodiscard]] Identity fleetIdentity() const {
    return {.key_pem = text(pki_ + "/fleet.key"), .cert_pem = text(pki_ + "/fleet.crt")};
  }
  [[nodiscard]] std::string caPem() const { return text(pki_ + "/ca.crt"); }

  static void giveToken(const AgentHarness& agent, const std::string& token) {
    ASSERT_TRUE(writeFileAtomic(agent.tokenFile(), token + "\n", 0600));
  }

  // An agent with the secure default (no insecure), waiting with `token` ("" = none).
  std::unique_ptr<AgentHarness> waitingAgent(const std::string& host, const std::string& token,
                                             const std::string& name = "m1") {
    auto agent = std::make_unique<AgentHarness>(
        dir_.path(), AgentOptions{.name = name, .host = host, .insecure = false});
    if (!token.empty()) giveToken(*agent, token);
    agent->start();
    auto local = AgentClient::connect("unix:" + agent->socketPath(), 5s);
    EXPECT_TRUE(local) << local.error().message;
    EXPECT_TRUE(local && eventually([&] { return local->status().has_value(); }))
        << text(agent->logPath());
    return agent;
  }

  // The agent serves the fleet over mutual TLS, with its member's status.
  [[nodiscard]] v1::AgentStatus statusAsTheFleet(const AgentHarness& agent) const {
    v1::AgentStatus status;
    grpc::Status s;
    EXPECT_TRUE(eventually([&] {
      s = getStatus(agent.apiAddress(), tlsCredentials(fleetIdentity(), caPem()), &status);
      return s.ok();
    })) << s.error_message();
    return status;
  }
};

// What a waiting agent, or an enrolled one, keeps: the files of its pki directory, its token file.
struct AgentFiles {
  std::map<std::string, std::string> pki;
  std::string token;
  bool operator==(const AgentFiles&) const = default;
};

AgentFiles filesOf(const AgentHarness& agent) {
  return {.pki = filesIn(agent.pkiDir()),
          .token = exists(agent.tokenFile()) ? text(agent.tokenFile()) : "<none>"};
}

std::string keysOf(const std::map<std::string, std::string>& files) {
  std::string out;
  for (const auto& [name, _] : files) out += name + " ";
  return out;
}

// Hello reaches an agent waiting for enrollment without a verified client certificate (it cannot
// verify one yet: it only has its CA's hash). The agent itself refuses, before it answers anything,
// every caller that is not the fleet its token pins: no certificate, another CA's, an expired one,
// another name's of the same CA, and a malformed request. It keeps waiting, with its keys and
// token, and the fleet then enrolls it.
TEST_F(BadInput, AWaitingAgentAnswersHelloOnlyToItsFleetsValidCertificate) {
  const std::string token = fleetToken();
  auto agent = waitingAgent("127.0.0.61", token);
  const AgentFiles before = filesOf(*agent);
  ASSERT_FALSE(before.pki.empty());
  const auto fleet = pki();
  const auto other = take(tls::createCa(), "another CA");
  const std::string nonce(fleet::kEnrollNonceSize, 'n');
  const auto request = helloRequest(caPem(), nonce);

  struct Case {
    std::string what;
    Identity who;
    v1::EnrollHelloRequest request;
    grpc::StatusCode code;
    std::string says;
  };
  const std::vector<Case> cases{
      {"no client certificate",
       {},
       request,
       grpc::StatusCode::PERMISSION_DENIED,
       "no client certificate in the TLS handshake: only etcd-fleet, with the fleet's client "
       "certificate, may enroll this agent"},
      {"another CA's certificate named etcd-fleet", clientIdentity(other, "etcd-fleet"), request,
       grpc::StatusCode::PERMISSION_DENIED,
       "the client certificate: the certificate CN=etcd-fleet was issued by CN=etcd-fleet CA "},
      {"an expired certificate of the fleet CA",
       clientIdentity(fleet.ca, "etcd-fleet", Clock::now() - 72h, 24h), request,
       grpc::StatusCode::PERMISSION_DENIED,
       "the client certificate: the certificate CN=etcd-fleet expired on "},
      {"a certificate of the fleet CA for another name", clientIdentity(fleet.ca, "etcd-agent:m7"),
       request, grpc::StatusCode::PERMISSION_DENIED,
       "the client certificate is \"etcd-agent:m7\"'s, not etcd-fleet's: only the fleet may "
       "enroll"},
      {"another fleet's CA in Hello", fleetIdentity(), helloRequest(other.cert.pem(), nonce),
       grpc::StatusCode::PERMISSION_DENIED, "the token is from another fleet"},
      {"a nonce of 5 bytes", fleetIdentity(), helloRequest(caPem(), "short"),
       grpc::StatusCode::INVALID_ARGUMENT, "the nonce has 5 bytes, expected 32"},
  };
  for (const auto& c : cases) {
    v1::EnrollHelloResponse answer;
    auto s = hello(agent->apiAddress(), tlsCredentials(c.who, ""), c.request, &answer);
    EXPECT_EQ(s.error_code(), c.code) << c.what << ": " << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(c.says)) << c.what;
    EXPECT_TRUE(answer.csrs().api().empty() && answer.proof().empty()) << c.what << " got CSRs";
    // Finish, with the same credentials and nothing to sign, is refused the same way.
    if (c.code == grpc::StatusCode::PERMISSION_DENIED) {
      v1::EnrollFinishRequest done;
      done.set_ca_cert_pem(c.request.ca_cert_pem());
      auto f = finish(agent->apiAddress(), tlsCredentials(c.who, ""), done);
      EXPECT_EQ(f.error_code(), grpc::StatusCode::PERMISSION_DENIED) << c.what;
      EXPECT_THAT(f.error_message(), HasSubstr(c.says)) << c.what;
    }
  }

  // Nothing changed; the agent still waits, and the fleet enrolls it.
  EXPECT_TRUE(agent->running());
  EXPECT_EQ(filesOf(*agent), before) << keysOf(filesOf(*agent).pki);
  auto enrolled = etcdFleet({"enroll", "--hosts", agent->apiAddress()});
  ASSERT_EQ(enrolled.exit_code, 0) << enrolled.err << text(agent->logPath());
  EXPECT_EQ(statusAsTheFleet(*agent).member_name(), "m1");
}

// The fleet refuses a token it no longer honours, whatever the agent proves: one that expired, and
// one it never made (another fleet's store, or a token dropped after it expired). Nothing is signed
// or recorded, and the agent keeps waiting with its token.
TEST_F(BadInput, AnExpiredOrUnknownTokenEnrollsNothing) {
  const std::string expiring = fleetToken("1s");
  const std::string id = expiring.substr(5, 6);
  ASSERT_TRUE(eventually(
      [&] {
        return etcdFleet({"token", "list", "-w", "json"}).out.find("\"state\":\"expired\"") !=
               std::string::npos;
      },
      10s));
  // A token of this CA with an id and secret this fleet never made.
  auto unknown = take(fleet::parseEnrollToken(expiring), "token");
  unknown.id = "zz9zz9";
  unknown.secret = std::string(32, 'z');

  auto first = waitingAgent("127.0.0.62", expiring);
  auto second = waitingAgent("127.0.0.63", fleet::formatEnrollToken(unknown), "m2");
  const AgentFiles first_before = filesOf(*first);
  const AgentFiles second_before = filesOf(*second);
  const std::string tokens_before = text(pki_ + "/tokens.json");

  auto expired = etcdFleet({"enroll", "--hosts", first->apiAddress()});
  EXPECT_EQ(expired.exit_code, 1) << expired.out;
  EXPECT_THAT(expired.err, HasSubstr("agent " + first->apiAddress() + ": enrollment token " + id +
                                     " expired at "));
  EXPECT_THAT(expired.err, HasSubstr("create a new one with etcd-fleet token create"));
  auto never = etcdFleet({"enroll", "--hosts", second->apiAddress()});
  EXPECT_EQ(never.exit_code, 1) << never.out;
  EXPECT_THAT(never.err, HasSubstr("enrollment token zz9zz9 is not known to this fleet"));
  EXPECT_EQ(never.err.find(unknown.secret), std::string::npos) << "the secret leaked";

  EXPECT_EQ(text(pki_ + "/tokens.json"), tokens_before);
  EXPECT_EQ(filesOf(*first), first_before);
  EXPECT_EQ(filesOf(*second), second_before);
  for (auto* agent : {first.get(), second.get()}) {
    EXPECT_TRUE(agent->running());
    EXPECT_FALSE(exists(agent->pkiDir() + "/ca.crt"));
    auto local = AgentClient::connect("unix:" + agent->socketPath(), 5s);
    ASSERT_TRUE(local);
    EXPECT_TRUE(local->status()) << text(agent->logPath());
  }
}

// A recorded enrollment is worth nothing again: the enrolled agent refuses its Hello and Finish
// once more; another agent waiting with the same token refuses the certificates (they are for
// another host's keys); and the agent's recorded answer, replayed to etcd-fleet by a host that is
// not that agent, fails the proof (a fresh nonce, another TLS key).
TEST_F(BadInput, AReplayedEnrollmentIsRefusedOnBothSides) {
  const std::string token = fleetToken();
  auto first = waitingAgent("127.0.0.64", token);
  auto second = waitingAgent("127.0.0.65", token, "m2");

  Recording rec;
  RecordingDialer dialer(rec);
  auto fleet_pki = pki();
  fleet::TokenStore tokens(fleet_pki.paths.tokens);
  fleet::NoProgress quiet;
  auto report =
      fleet::enrollAgent({.dialer = dialer, .pki = fleet_pki, .tokens = tokens, .progress = quiet},
                         {.host = first->apiAddress()});
  ASSERT_TRUE(report) << report.error().message << text(first->logPath());
  ASSERT_FALSE(rec.answer.proof().empty());
  ASSERT_FALSE(rec.finish.certs().api().empty());
  EXPECT_EQ(statusAsTheFleet(*first).member_name(), "m1");
  const AgentFiles first_enrolled = filesOf(*first);
  const AgentFiles second_before = filesOf(*second);
  const std::string tokens_before = text(pki_ + "/tokens.json");

  // To the enrolled agent, as the fleet itself: refused, its certificates untouched.
  const auto as_fleet = tlsCredentials(fleetIdentity(), "");
  auto again = hello(first->apiAddress(), as_fleet, rec.hello);
  EXPECT_EQ(again.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << again.error_message();
  EXPECT_THAT(again.error_message(), HasSubstr("this agent is enrolled already, in the fleet CA "));
  auto refinish = finish(first->apiAddress(), as_fleet, rec.finish);
  EXPECT_EQ(refinish.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << refinish.error_message();
  EXPECT_EQ(filesOf(*first), first_enrolled);

  // The first agent's certificates to the second: not for its keys.
  auto stolen = finish(second->apiAddress(), as_fleet, rec.finish);
  EXPECT_EQ(stolen.error_code(), grpc::StatusCode::PERMISSION_DENIED) << stolen.error_message();
  EXPECT_THAT(stolen.error_message(),
              HasSubstr("the api certificate is not for this agent's api key"));
  EXPECT_EQ(filesOf(*second), second_before);

  // The first agent's answer, replayed to etcd-fleet from another host.
  FakeAgent replayer("127.0.0.66", [&rec](const FakeAgent&, const v1::EnrollHelloRequest& req,
                                          const std::string&) {
    EXPECT_NE(req.nonce(), rec.hello.nonce()) << "etcd-fleet sent a nonce twice";
    return rec.answer;
  });
  auto replayed = etcdFleet({"enroll", "--hosts", replayer.address()});
  EXPECT_EQ(replayed.exit_code, 1) << replayed.out;
  EXPECT_THAT(replayed.err, HasSubstr("agent " + replayer.address() +
                                      " refused for enrollment: its proof for token " +
                                      token.substr(5, 6) + " does not match"));
  EXPECT_EQ(replayer.finishCalls(), 0) << "etcd-fleet signed for a replayed answer";
  EXPECT_EQ(text(pki_ + "/tokens.json"), tokens_before);

  // Both agents are as they were: the first serves the fleet, the second still enrolls.
  EXPECT_EQ(statusAsTheFleet(*first).member_name(), "m1");
  auto enrolled = etcdFleet({"enroll", "--hosts", second->apiAddress()});
  ASSERT_EQ(enrolled.exit_code, 0) << enrolled.err << text(second->logPath());
  EXPECT_EQ(statusAsTheFleet(*second).member_name(), "m2");
}

// A host may have certificates only for what the fleet verified: the address it dialled (and the
// host's DNS name, loopback). A real agent that advertises another address, and a host holding a
// stolen token that asks for another host's address, a name on its client certificate, or the
// fleet's own name, are refused naming what they asked for; nothing is signed or recorded.
TEST_F(BadInput, CsrsForNamesTheHostDoesNotOwnAreRefused) {
  const std::string token_text = fleetToken();
  const auto token = take(fleet::parseEnrollToken(token_text), "token");
  const std::string tokens_before = text(pki_ + "/tokens.json");

  // A real agent whose advertise host is not the address it is dialled at.
  AgentHarness liar(dir_.path(), {.name = "m1", .host = "127.0.0.67", .insecure = false});
  {
    std::string config = text(liar.configPath());
    const std::string advertise = "advertise_host = \"127.0.0.67\"";
    const auto at = config.find(advertise);
    ASSERT_NE(at, std::string::npos) << config;
    config.replace(at, advertise.size(), "advertise_host = \"127.0.0.68\"");
    ASSERT_TRUE(writeFileAtomic(liar.configPath(), config, 0600));
  }
  giveToken(liar, token_text);
  liar.start();
  auto local = AgentClient::connect("unix:" + liar.socketPath(), 5s);
  ASSERT_TRUE(local);
  ASSERT_TRUE(eventually([&] { return local->status().has_value(); })) << text(liar.logPath());
  const AgentFiles liar_before = filesOf(liar);
  auto r = etcdFleet({"enroll", "--hosts", liar.apiAddress()});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.err, HasSubstr("agent " + liar.apiAddress() +
                               " refused for enrollment: it advertises \"127.0.0.68\", not "
                               "\"127.0.0.67\", the address it was dialled at"));
  EXPECT_EQ(filesOf(liar), liar_before);
  EXPECT_TRUE(local->status());

  struct Case {
    std::string what;
    ForgedAsk ask;
    std::string says;
  };
  const std::vector<Case> cases{
      {"another host's address",
       {.server_sans = {"127.0.0.69", "127.0.0.12"}},
       "its api CSR asks for the name \"127.0.0.12\", which is not this host's (allowed: "
       "127.0.0.69, fake, 127.0.0.1, localhost)"},
      {"a DNS name of another host",
       {.server_sans = {"127.0.0.69", "etcd.example.org"}},
       "its api CSR asks for the name \"etcd.example.org\", which is not this host's"},
      {"a name on the client certificate",
       {.server_sans = {"127.0.0.69"}, .client_sans = {"127.0.0.69"}},
       "its etcd-client CSR asks for the name \"127.0.0.69\": a client certificate carries none"},
      {"the fleet's own name",
       {.common_name = "etcd-fleet", .server_sans = {"127.0.0.69"}},
       "its api CSR asks for the common name \"etcd-fleet\", not \"etcd-agent:m9\""},
  };
  for (const auto& c : cases) {
    FakeAgent thief("127.0.0.69", stolenTokenAnswer(token, c.ask));
    auto refused = etcdFleet({"enroll", "--hosts", thief.address()});
    EXPECT_EQ(refused.exit_code, 1) << c.what << ": " << refused.out;
    EXPECT_THAT(refused.err,
                HasSubstr("agent " + thief.address() + " refused for enrollment: " + c.says))
        << c.what;
    EXPECT_EQ(thief.finishCalls(), 0) << c.what << ": etcd-fleet signed";
  }
  EXPECT_EQ(text(pki_ + "/tokens.json"), tokens_before) << "a refused host was recorded";
  // The same thief asking only for the names of the address it was dialled at is signed for (a
  // stolen token is worth that much until it is revoked: docs/security.md): the refusals above
  // were for the names asked, not for anything else the fake does.
  FakeAgent modest("127.0.0.69", stolenTokenAnswer(token, {.server_sans = {"127.0.0.69"}}));
  auto signed_for = etcdFleet({"enroll", "--hosts", modest.address()});
  EXPECT_THAT(signed_for.err, HasSubstr("a fake agent")) << signed_for.out << signed_for.err;
  EXPECT_EQ(modest.finishCalls(), 1);
}

// What an enrolled agent and its TLS member hold: etcd's keys and members as the fleet reads them,
// the agent's pki files, the fleet's tokens.
struct FleetState {
  std::string keys;
  std::string members;
  std::map<std::string, std::string> agent_pki;
  std::string tokens;
  bool operator==(const FleetState&) const = default;
};

// A member formed by `etcd-fleet bootstrap` (enrolled, client and peer TLS with certificate auth)
// serves nobody without a valid certificate of the fleet CA: not its agent's API (no certificate,
// another CA's, an expired one, plaintext; through etcd-fleet too, with such a pki/fleet.crt or
// without a CA), not etcd's client port (etcdctl the same ways), not its peer port. It keeps
// running as it was: same etcd process, no restart, the same keys, members and files.
TEST_F(BadInput, AnEnrolledMemberServesOnlyValidCertificatesOfItsFleetAndStaysAsItWas) {
  const std::string token = fleetToken();
  auto agent = waitingAgent("127.0.0.70", token);
  auto formed = etcdFleet({"bootstrap", "--hosts", agent->apiAddress()});
  ASSERT_EQ(formed.exit_code, 0) << formed.out << formed.err << text(agent->logPath());
  ASSERT_EQ(etcdFleet({"put", "precious", "data"}).exit_code, 0);
  auto state = [&] {
    // (The user's keys: the agent's own entry, etcd-agent/agents/m1, is written once its member
    // is healthy, maybe after `before`.)
    return FleetState{.keys = etcdFleet({"get", "precious", "--prefix"}).out,
                      .members = etcdFleet({"member", "list"}).out,
                      .agent_pki = filesIn(agent->pkiDir()),
                      .tokens = text(pki_ + "/tokens.json")};
  };
  const FleetState before = state();
  ASSERT_EQ(before.keys, "precious\ndata\n");
  v1::AgentStatus status_before;
  ASSERT_TRUE(eventually([&] {
    status_before = statusAsTheFleet(*agent);
    return status_before.healthy();
  })) << status_before.DebugString();

  const auto fleet = pki();
  const auto other = take(tls::createCa(), "another CA");
  const Identity foreign = clientIdentity(other, "etcd-fleet");
  const Identity expired = clientIdentity(fleet.ca, "etcd-fleet", Clock::now() - 72h, 24h);

  // The agent API, raw: the handshake fails.
  for (const auto& [what, who] : std::vector<std::pair<std::string, Identity>>{
           {"no certificate", {}}, {"another CA's", foreign}, {"an expired one", expired}}) {
    auto s = getStatus(agent->apiAddress(), tlsCredentials(who, caPem()));
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << what << ": " << s.error_message();
  }
  auto plain = getStatus(agent->apiAddress(), grpc::InsecureChannelCredentials());
  EXPECT_EQ(plain.error_code(), grpc::StatusCode::UNAVAILABLE) << plain.error_message();

  // The agent API through etcd-fleet, with a pki whose fleet.crt is another CA's or expired.
  auto hostile = [&](const std::string& name, const Identity& who) {
    const std::string inv = dir_.path() + "/" + name + "/fleet.toml";
    const std::string p = dir_.path() + "/" + name + "/pki";
    EXPECT_TRUE(createPrivateDirectories(p));
    for (const char* f : {"ca.crt", "ca.key"}) {
      EXPECT_TRUE(writeFileAtomic(p + "/" + f, text(pki_ + "/" + f), 0600));
    }
    EXPECT_TRUE(writeFileAtomic(p + "/fleet.key", who.key_pem, 0600));
    EXPECT_TRUE(writeFileAtomic(p + "/fleet.crt", who.cert_pem, 0644));
    return etcdFleet({"agent", "status", "--host", agent->apiAddress()}, inv);
  };
  const std::string refused_ours =
      "agent " + agent->apiAddress() +
      " refused etcd-fleet's client certificate in the TLS handshake: ";
  auto refused_foreign = hostile("foreign", foreign);
  EXPECT_NE(refused_foreign.exit_code, 0) << refused_foreign.out;
  EXPECT_THAT(refused_foreign.err, HasSubstr(refused_ours + dir_.path() +
                                             "/foreign/pki/fleet.crt: the certificate "
                                             "CN=etcd-fleet was issued by CN=etcd-fleet CA "));
  auto refused_expired = hostile("expired", expired);
  EXPECT_NE(refused_expired.exit_code, 0) << refused_expired.out;
  EXPECT_THAT(refused_expired.err, HasSubstr(refused_ours + dir_.path() +
                                             "/expired/pki/fleet.crt: the certificate "
                                             "CN=etcd-fleet expired on "));
  // etcd through etcd-fleet with such a pki/fleet.crt (presented when no --cert is given).
  for (const auto& [name, why] : std::vector<std::pair<std::string, std::string>>{
           {"foreign", "was issued by CN=etcd-fleet CA "}, {"expired", "expired on "}}) {
    auto get = etcdFleet({"get", "precious", "--endpoints", "https://" + agent->clientEndpoint(),
                          "--dial-timeout", "2s", "--command-timeout", "3s"},
                         dir_.path() + "/" + name + "/fleet.toml");
    EXPECT_NE(get.exit_code, 0) << name << ": " << get.out;
    EXPECT_EQ(get.out.find("data"), std::string::npos) << name;
    EXPECT_THAT(get.err, HasSubstr("the TLS connection failed (sslv3 alert bad certificate): the "
                                   "server refused the client certificate: it must be signed by a "
                                   "CA the server trusts and be valid now; " +
                                   dir_.path() + "/" + name +
                                   "/pki/fleet.crt: the certificate CN=etcd-fleet " + why))
        << name;
  }
  auto no_ca = etcdFleet({"agent", "status", "--host", agent->apiAddress()},
                         dir_.path() + "/no-ca/fleet.toml");
  EXPECT_NE(no_ca.exit_code, 0) << no_ca.out;
  EXPECT_THAT(no_ca.err,
              HasSubstr("agent " + agent->apiAddress() + " closed the plaintext connection"));
  EXPECT_THAT(no_ca.err, HasSubstr("speaks TLS only, and this fleet has no CA"));

  // etcd's client port, with etcdctl.
  const std::string url = "https://" + agent->clientEndpoint();
  TempDir certs;
  auto write = [&](const std::string& name, const Identity& who) {
    EXPECT_TRUE(writeFileAtomic(certs.path() + "/" + name + ".key", who.key_pem, 0600));
    EXPECT_TRUE(writeFileAtomic(certs.path() + "/" + name + ".crt", who.cert_pem, 0600));
    return std::vector<std::string>{"--cert", certs.path() + "/" + name + ".crt", "--key",
                                    certs.path() + "/" + name + ".key"};
  };
  const std::vector<std::string> quick{"--dial-timeout", "2s", "--command-timeout", "3s"};
  std::vector<std::pair<std::string, std::vector<std::string>>> clients{
      {"no certificate", {"--cacert", pki_ + "/ca.crt"}},
      {"another CA's", write("foreign", foreign)},
      {"an expired one", write("expired", expired)}};
  clients[1].second.insert(clients[1].second.end(), {"--cacert", pki_ + "/ca.crt"});
  clients[2].second.insert(clients[2].second.end(), {"--cacert", pki_ + "/ca.crt"});
  for (auto& [what, args] : clients) {
    args.insert(args.end(), quick.begin(), quick.end());
    args.insert(args.end(), {"get", "precious"});
    auto r = etcdctl(url, args, {.timeout = 30s});
    EXPECT_NE(r.exit_code, 0) << what << ": " << r.out;
    EXPECT_EQ(r.out.find("data"), std::string::npos) << what;
  }
  std::vector<std::string> plaintext = quick;
  plaintext.insert(plaintext.end(), {"get", "precious"});
  auto r = etcdctl("http://" + agent->clientEndpoint(), plaintext, {.timeout = 30s});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("data"), std::string::npos);

  // etcd's peer port: its members API, in plaintext and without a certificate.
  const std::string peer = agent->options().host + ":" + std::to_string(agent->peerPort());
  auto peer_plain = run({"curl", "-sS", "-m", "5", "http://" + peer + "/members"});
  EXPECT_NE(peer_plain.exit_code, 0) << peer_plain.out;
  auto peer_certless =
      run({"curl", "-sS", "-m", "5", "--cacert", pki_ + "/ca.crt", "https://" + peer + "/members"});
  EXPECT_NE(peer_certless.exit_code, 0) << peer_certless.out;
  EXPECT_EQ(peer_certless.out.find("m1"), std::string::npos) << peer_certless.out;

  // etcd says why in its log (the agent's journal, "etcd[m1]: ..."); its clients learn only that
  // the handshake failed.
  const std::string log = text(agent->logPath());
  for (const char* why :
       {"tls: client didn't provide a certificate", "x509: certificate signed by unknown authority",
        "x509: certificate has expired or is not yet valid",
        "tls: first record does not look like a TLS handshake"}) {
    EXPECT_THAT(log, HasSubstr(why));
  }

  // As it was.
  const auto after = statusAsTheFleet(*agent);
  EXPECT_TRUE(after.healthy()) << after.DebugString();
  EXPECT_EQ(after.etcd_pid(), status_before.etcd_pid());
  EXPECT_EQ(after.restart_count(), status_before.restart_count());
  EXPECT_EQ(after.member_id(), status_before.member_id());
  EXPECT_EQ(state(), before);
}

// The secrets and the data are their owner's alone, as the real binaries leave them: the operator's
// pki (0700; ca.key, fleet.key, tokens.json 0600), the token `etcd-agent enroll` writes (0600), the
// agent's pki (0700, every key and certificate 0600), the member's data directory (0700) and the
// agent's socket (0660, for its group).
TEST_F(BadInput, SecretsAndDataAreOwnerOnly) {
  const std::string token = fleetToken();
  EXPECT_EQ(modeOf(pki_), 0700U);
  for (const char* f : {"ca.key", "fleet.key", "tokens.json"}) {
    EXPECT_EQ(modeOf(pki_ + "/" + f), 0600U) << f;
  }
  AgentHarness agent(dir_.path(), {.name = "m1", .host = "127.0.0.71", .insecure = false});
  auto saved = run({agentBinary(), "enroll", token, "--config", agent.configPath()});
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  EXPECT_EQ(modeOf(agent.tokenFile()), 0600U);
  agent.start();
  auto local = AgentClient::connect("unix:" + agent.socketPath(), 5s);
  ASSERT_TRUE(local);
  ASSERT_TRUE(eventually([&] { return local->status().has_value(); })) << text(agent.logPath());
  auto formed = etcdFleet({"bootstrap", "--hosts", agent.apiAddress()});
  ASSERT_EQ(formed.exit_code, 0) << formed.out << formed.err << text(agent.logPath());

  EXPECT_EQ(modeOf(agent.dataRoot() + "/pki"), 0700U);
  EXPECT_EQ(modeOf(agent.pkiDir()), 0700U);
  const auto files = filesIn(agent.pkiDir());
  EXPECT_EQ(files.size(), 9U) << keysOf(files);  // four keys, four certificates, the CA
  for (const auto& [name, _] : files) EXPECT_EQ(modeOf(agent.pkiDir() + "/" + name), 0600U) << name;
  EXPECT_EQ(modeOf(agent.dataRoot() + "/m1"), 0700U);
  EXPECT_EQ(modeOf(agent.dataRoot() + "/m1/data"), 0700U);
  EXPECT_EQ(modeOf(agent.socketPath()), 0660U);
  EXPECT_FALSE(exists(agent.tokenFile())) << "the token outlived the enrollment";
}

}  // namespace
}  // namespace etcdagent::testing
