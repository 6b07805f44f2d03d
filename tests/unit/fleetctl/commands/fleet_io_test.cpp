// The fleet commands' side of lib/fleet: exit codes from a flow's failure, and progress lines.

#include "fleetctl/commands/fleet_io.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace etcdagent::fleet {
namespace {

TEST(FlowError, MapsTheFlowsCodesToEtcdctlsExitCodes) {
  EXPECT_EQ(flowError({Errc::kUnavailable, "x"}).error().exit_code, exitcode::kBadConnection);
  EXPECT_EQ(flowError({Errc::kCancelled, "x"}).error().exit_code, exitcode::kInterrupted);
  EXPECT_EQ(flowError({Errc::kInvalidArgument, "x"}).error().exit_code, exitcode::kInvalidInput);
  EXPECT_EQ(flowError({Errc::kFailedPrecondition, "x"}).error().exit_code, exitcode::kError);
  EXPECT_EQ(flowError({Errc::kDeadlineExceeded, "x"}).error().exit_code, exitcode::kError);
  EXPECT_EQ(flowError({Errc::kNotFound, "no such"}).error().message, "no such");
}

TEST(StreamProgress, StepsAndPrefixedWarningsGoToTheirStreamsAsWholeLines) {
  std::ostringstream steps, warnings;
  StreamProgress p(steps, warnings, "warning: ");
  p.step("[1/5] reaching agents ...");
  p.warning("slow disk");
  EXPECT_EQ(steps.str(), "[1/5] reaching agents ...\n");
  EXPECT_EQ(warnings.str(), "warning: slow disk\n");
}

}  // namespace
}  // namespace etcdagent::fleet
