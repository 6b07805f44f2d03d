#include "fleetctl/cli/flags.hpp"

#include <gtest/gtest.h>

#include "fleetctl/cli/global.hpp"

namespace etcdagent::fleet {
namespace {

FlagSet getFlags() {
  FlagSet f;
  f.boolean("prefix", 0, false, "")
      .integer("limit", 0, 0, "")
      .string("write-out", 'w', "simple", "");
  f.stringSlice("endpoints", 0, {"127.0.0.1:2379"}, "").duration("dial-timeout", 0, "2s", "");
  f.boolean("interactive", 'i', false, "");
  return f;
}

TEST(Flags, ParsesLongShortAndPositionalInAnyOrder) {
  FlagSet f = getFlags();
  auto args = parseArgs({"foo", "--limit", "3", "-w", "json", "--prefix", "bar"}, {&f});
  ASSERT_TRUE(args) << args.error().message;
  EXPECT_EQ(*args, (std::vector<std::string>{"foo", "bar"}));
  EXPECT_EQ(f.getInt("limit"), 3);
  EXPECT_EQ(f.getString("write-out"), "json");
  EXPECT_TRUE(f.getBool("prefix"));
}

TEST(Flags, AcceptsEqualsAndAttachedShortValues) {
  FlagSet f = getFlags();
  ASSERT_TRUE(parseArgs({"--limit=7", "-wtable", "--prefix=false"}, {&f}));
  EXPECT_EQ(f.getInt("limit"), 7);
  EXPECT_EQ(f.getString("write-out"), "table");
  EXPECT_FALSE(f.getBool("prefix"));
  FlagSet g = getFlags();
  ASSERT_TRUE(parseArgs({"-w=fields"}, {&g}));
  EXPECT_EQ(g.getString("write-out"), "fields");
}

TEST(Flags, DoubleDashEndsFlags) {
  FlagSet f = getFlags();
  auto args = parseArgs({"put", "--", "key", "-value"}, {&f});
  ASSERT_TRUE(args);
  EXPECT_EQ(*args, (std::vector<std::string>{"put", "key", "-value"}));
}

TEST(Flags, SliceFirstUseReplacesDefaultThenAppends) {
  FlagSet f = getFlags();
  ASSERT_TRUE(parseArgs({"--endpoints", "a:1,b:2", "--endpoints=c:3"}, {&f}));
  EXPECT_EQ(f.getStringSlice("endpoints"), (std::vector<std::string>{"a:1", "b:2", "c:3"}));
  FlagSet g = getFlags();
  EXPECT_EQ(g.getStringSlice("endpoints"), (std::vector<std::string>{"127.0.0.1:2379"}));
  EXPECT_FALSE(g.changed("endpoints"));
}

TEST(Flags, RejectsUnknownFlagsWithPflagWording) {
  FlagSet f = getFlags();
  auto r = parseArgs({"--bogus"}, {&f});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "unknown flag: --bogus");
  auto s = parseArgs({"-x"}, {&f});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "unknown shorthand flag: 'x' in -x");
}

TEST(Flags, RejectsBadValuesNamingTheFlag) {
  FlagSet f = getFlags();
  auto r = parseArgs({"--limit", "many"}, {&f});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("\"--limit\""), std::string::npos) << r.error().message;
  auto d = parseArgs({"--dial-timeout", "5 parsecs"}, {&f});
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("--dial-timeout"), std::string::npos);
  auto missing = parseArgs({"--limit"}, {&f});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "flag needs an argument: --limit");
}

TEST(Flags, TimeoutsRefuseZeroAndNegativeDurationsNamingTheFlag) {
  for (const std::string bad : {"-5s", "0s", "0", "-1ns"}) {
    FlagSet f;
    defineGlobalFlags(f);
    auto r = parseArgs({"--command-timeout", bad}, {&f});
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().message, "invalid argument \"" + bad +
                                     "\" for \"--command-timeout\" flag: a timeout must be more "
                                     "than 0 (e.g. 5s)");
  }
  FlagSet f;
  defineGlobalFlags(f);
  ASSERT_TRUE(parseArgs({"--command-timeout=250ms", "--dial-timeout", "1s"}, {&f}));
  EXPECT_EQ(f.getDuration("command-timeout"), std::chrono::milliseconds(250));
  EXPECT_FALSE(parseArgs({"--dial-timeout=-2s"}, {&f}));
  EXPECT_FALSE(parseArgs({"--keepalive-timeout=0s"}, {&f}));
}

TEST(Flags, LaterSetsWinAndFirstSetOwnsTheName) {
  FlagSet local, global;
  local.string("write-out", 0, "local", "");
  global.string("write-out", 'w', "global", "");
  ASSERT_TRUE(parseArgs({"--write-out", "x"}, {&local, &global}));
  EXPECT_EQ(local.getString("write-out"), "x");
  EXPECT_EQ(global.getString("write-out"), "global");
}

TEST(Flags, UsageListsFlagsSortedWithDefaults) {
  FlagSet f = getFlags();
  std::string usage = f.usageText();
  EXPECT_LT(usage.find("--dial-timeout=2s"), usage.find("--limit=0"));
  EXPECT_NE(usage.find("-w, --write-out=\"simple\""), std::string::npos);
  EXPECT_NE(usage.find("--prefix[=false]"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent::fleet
