// gRPC core's log lines in the CLI: dropped unless --debug, the reason of a TLS failure kept for
// the dial error, and what that reason tells the operator to do.

#include "etcd/grpc_log.hpp"

#include <gmock/gmock.h>
#include <grpc/support/log.h>
#include <gtest/gtest.h>

namespace etcdagent::etcd {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// What gRPC 1.51 logs, at ERROR, when a server ends the connection of a client without a
// certificate (TLS 1.3: after the client's half of the handshake).
void logRefusedHandshake() {
  gpr_log(__FILE__, __LINE__, GPR_LOG_SEVERITY_ERROR, "Corruption detected.");
  gpr_log(__FILE__, __LINE__, GPR_LOG_SEVERITY_ERROR, "%s",
          "error:0A000412:SSL routines::sslv3 alert bad certificate");
  gpr_log(__FILE__, __LINE__, GPR_LOG_SEVERITY_ERROR, "Decryption error: TSI_DATA_CORRUPTED");
}

// gRPC's default verbosity (GRPC_VERBOSITY unset: ERROR), which grpc_init sets in a program.
class GrpcLog : public ::testing::Test {
 protected:
  void SetUp() override { gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR); }
};

TEST_F(GrpcLog, LinesAreDroppedAndTheTlsReasonIsKept) {
  routeGrpcLog(false);
  const auto mark = tlsErrorMark();
  EXPECT_THAT(lastTlsErrorSince(mark), IsEmpty());
  ::testing::internal::CaptureStderr();
  logRefusedHandshake();
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), IsEmpty());
  EXPECT_EQ(lastTlsErrorSince(mark), "sslv3 alert bad certificate");
  // A later dial does not see an earlier dial's failure.
  EXPECT_THAT(lastTlsErrorSince(tlsErrorMark()), IsEmpty());
}

TEST_F(GrpcLog, AnAssertionFailureIsStillPrinted) {
  routeGrpcLog(false);
  ::testing::internal::CaptureStderr();
  gpr_log(__FILE__, __LINE__, GPR_LOG_SEVERITY_ERROR, "assertion failed: %s", "x != nullptr");
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("assertion failed: x != nullptr"));
}

TEST_F(GrpcLog, DebugPrintsEveryLine) {
  routeGrpcLog(true);
  ::testing::internal::CaptureStderr();
  logRefusedHandshake();
  gpr_log(__FILE__, __LINE__, GPR_LOG_SEVERITY_DEBUG, "connectivity: %s", "READY");
  const auto printed = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(printed, HasSubstr("TSI_DATA_CORRUPTED"));
  EXPECT_THAT(printed, HasSubstr("connectivity: READY"));
  routeGrpcLog(false);
}

TEST_F(GrpcLog, EachTlsReasonSaysWhatToDo) {
  EXPECT_THAT(tlsFailureHint("sslv3 alert bad certificate", false),
              HasSubstr("requires a client certificate: pass --cert and --key"));
  EXPECT_THAT(tlsFailureHint("tlsv13 alert certificate required", false),
              HasSubstr("requires a client certificate"));
  EXPECT_THAT(tlsFailureHint("sslv3 alert bad certificate", true),
              HasSubstr("refused the client certificate: it must be signed by a CA"));
  EXPECT_THAT(tlsFailureHint("tlsv1 alert unknown ca", true),
              HasSubstr("refused the client certificate"));
  EXPECT_THAT(tlsFailureHint("certificate verify failed", false),
              HasSubstr("not signed by the CA of --cacert"));
  EXPECT_THAT(tlsFailureHint("wrong version number", false), HasSubstr("serves plaintext"));
  EXPECT_THAT(tlsFailureHint("internal error", false), IsEmpty());
}

}  // namespace
}  // namespace etcdagent::etcd
