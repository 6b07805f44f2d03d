// `watch --interactive`: what each stdin line asks for (a watch, a progress request, a complaint
// on stderr, or the end of the command), in etcdctl's words.

#include "fleetctl/commands/watch_interactive.hpp"

#include <gtest/gtest.h>

namespace etcdagent::fleet {
namespace {

using Kind = WatchLineAction::Kind;

TEST(InterpretWatchLine, AWatchLineCreatesAWatchWithItsOwnOptionsAndCommand) {
  auto a = interpretWatchLine(R"(watch "a key" --prefix --rev=5 -- echo hi)", "", "");
  ASSERT_EQ(a.kind, Kind::kWatch) << a.complaint << a.fatal.message;
  EXPECT_EQ(a.create.key(), "a key");
  EXPECT_EQ(a.create.range_end(), "a kez");
  EXPECT_EQ(a.create.start_revision(), 5);
  EXPECT_EQ(a.exec_args, (std::vector<std::string>{"echo", "hi"}));
}

TEST(InterpretWatchLine, TheEnvironmentsKeyNeedsNoKeyOnTheLine) {
  auto a = interpretWatchLine("watch", "envkey", "envkez");
  ASSERT_EQ(a.kind, Kind::kWatch) << a.complaint << a.fatal.message;
  EXPECT_EQ(a.create.key(), "envkey");
  EXPECT_EQ(a.create.range_end(), "envkez");
  EXPECT_EQ(interpretWatchLine("watch", "", "").complaint,
            "Invalid command watch (command type or key is not provided)");
}

TEST(InterpretWatchLine, ProgressAsksForANotification) {
  EXPECT_EQ(interpretWatchLine("progress", "", "").kind, Kind::kProgress);
  EXPECT_EQ(interpretWatchLine("progress now", "", "").kind, Kind::kProgress);
}

TEST(InterpretWatchLine, OtherLinesAreComplaintsAndReadingGoesOn) {
  auto empty = interpretWatchLine("", "", "");
  EXPECT_EQ(empty.kind, Kind::kComplaint);
  EXPECT_EQ(empty.complaint, "Invalid command:  (watch and progress supported)");
  auto other = interpretWatchLine("get foo", "", "");
  EXPECT_EQ(other.kind, Kind::kComplaint);
  EXPECT_EQ(other.complaint, "Invalid command get foo (only support watch)");
  auto prefixWithRange = interpretWatchLine("watch a b --prefix", "", "");
  EXPECT_EQ(prefixWithRange.kind, Kind::kComplaint);
  EXPECT_EQ(prefixWithRange.complaint,
            "Invalid command watch a b --prefix (`range_end` and `--prefix` are mutually "
            "exclusive)");
}

TEST(InterpretWatchLine, BadQuotingAndBadArgumentsEndTheCommand) {
  auto quoting = interpretWatchLine(R"(watch "\q")", "", "");
  ASSERT_EQ(quoting.kind, Kind::kFatal);
  EXPECT_EQ(quoting.fatal.message, "invalid syntax");
  EXPECT_EQ(quoting.fatal.exit_code, exitcode::kInvalidInput);
  auto flag = interpretWatchLine("watch k --bogus", "", "");
  ASSERT_EQ(flag.kind, Kind::kFatal);
  EXPECT_EQ(flag.fatal.message, "unknown flag: --bogus");
  EXPECT_EQ(flag.fatal.exit_code, exitcode::kBadArgs);
  auto conflict = interpretWatchLine("watch k", "envkey", "");
  ASSERT_EQ(conflict.kind, Kind::kFatal);
  EXPECT_EQ(conflict.fatal.message, "bad number of arguments (found conflicting environment key)");
}

}  // namespace
}  // namespace etcdagent::fleet
