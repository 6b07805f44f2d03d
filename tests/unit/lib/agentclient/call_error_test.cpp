// How a refused connection to an agent reads for the operator (agentclient/call_error): the
// messages gRPC gives for what the integration tests saw the real agent do (it closes a TLS
// connection whose client certificate it refuses, and a plaintext one on a TLS port, telling
// nothing), worded so the operator knows what to fix.

#include "agentclient/call_error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace etcdagent {
namespace {

using ::testing::HasSubstr;

// What gRPC 1.51 answers when the peer closes the connection during or right after the handshake.
const grpc::Status kClosed(grpc::StatusCode::UNAVAILABLE,
                           "failed to connect to all addresses; last error: UNAVAILABLE: "
                           "ipv4:127.0.0.11:2378: Socket closed");
const grpc::Status kRefused(grpc::StatusCode::UNAVAILABLE,
                            "failed to connect to all addresses; last error: UNAVAILABLE: "
                            "ipv4:127.0.0.11:2378: Failed to connect to remote host: Connection "
                            "refused");

TEST(MutualTlsRefusal, AClientCertificateEtcdFleetKnowsIsBadIsNamedWithWhy) {
  const std::string problem =
      "/op/pki/fleet.crt: the certificate CN=etcd-fleet expired on 2026-01-01T00:00:00Z";
  auto e = mutualTlsRefusal(kClosed, "127.0.0.11:2378", problem);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, Errc::kFailedPrecondition);
  EXPECT_THAT(e->message, HasSubstr("agent 127.0.0.11:2378 refused etcd-fleet's client "
                                    "certificate in the TLS handshake: " +
                                    problem));
  EXPECT_THAT(e->message, HasSubstr("Socket closed"));
}

TEST(MutualTlsRefusal, WithoutAKnownProblemItSaysWhatElseItCanBe) {
  auto e = mutualTlsRefusal(kClosed, "127.0.0.11:2378");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, Errc::kUnavailable);
  EXPECT_THAT(e->message, HasSubstr("ended the TLS handshake"));
  EXPECT_THAT(e->message, HasSubstr("refuses pki/fleet.crt"));
  EXPECT_FALSE(mutualTlsRefusal(kRefused, "127.0.0.11:2378", "a problem"));
}

TEST(PlaintextRefusal, AConnectionClosedOnAPlaintextCallSaysTheAgentMaySpeakTlsOnly) {
  auto e = plaintextRefusal(kClosed, "127.0.0.11:2378");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, Errc::kUnavailable);
  EXPECT_THAT(e->message, HasSubstr("agent 127.0.0.11:2378 closed the plaintext connection"));
  EXPECT_THAT(e->message, HasSubstr("speaks TLS only, and this fleet has no CA"));
  EXPECT_THAT(e->message, HasSubstr("--fleet"));
}

TEST(PlaintextRefusal, NobodyListeningIsNotARefusal) {
  EXPECT_FALSE(plaintextRefusal(kRefused, "127.0.0.11:2378"));
  EXPECT_FALSE(plaintextRefusal(grpc::Status::OK, "127.0.0.11:2378"));
}

}  // namespace
}  // namespace etcdagent
