// The requests `get` and `del` build from their flags and arguments (etcdctl's getGetOp and
// getDelOp), read with the commands' own flag definitions.

#include "fleetctl/commands/kv_request.hpp"

#include <gtest/gtest.h>

#include "fleetctl/commands/commands.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::RangeRequest;

// The command's flags after parsing `words`, and the positional arguments left.
struct Parsed {
  FlagSet flags;
  std::vector<std::string> args;
};

Parsed parse(std::string_view command, const std::vector<std::string>& words) {
  Parsed p;
  for (const auto& c : kvCommands()) {
    if (c.name == command) c.flags(p.flags);
  }
  auto args = parseArgs(words, {&p.flags});
  EXPECT_TRUE(args.has_value()) << (args ? "" : args.error().message);
  p.args = args.value_or(std::vector<std::string>{});
  return p;
}

InputResult<RangeRequest> get(const std::vector<std::string>& words) {
  auto p = parse("get", words);
  return rangeRequestFromArgs(p.flags, p.args);
}

InputResult<etcdserverpb::DeleteRangeRequest> del(const std::vector<std::string>& words) {
  auto p = parse("del", words);
  return deleteRequestFromArgs(p.flags, p.args);
}

TEST(RangeRequestFromArgs, AKeyAloneIsALinearizableGetOfThatKey) {
  auto r = get({"k"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->key(), "k");
  EXPECT_EQ(r->range_end(), "");
  EXPECT_FALSE(r->serializable());
  EXPECT_EQ(r->revision(), 0);
  EXPECT_EQ(r->sort_order(), RangeRequest::NONE);
  EXPECT_EQ(r->sort_target(), RangeRequest::KEY);
}

TEST(RangeRequestFromArgs, SortsLikeClientv3WithSort) {
  // Ascending by key is the server's own order: sent as NONE.
  EXPECT_EQ(get({"k", "--sort-by=key", "--order=ascend"})->sort_order(), RangeRequest::NONE);
  auto create = get({"k", "--sort-by=CREATE", "--order=ASCEND"});
  EXPECT_EQ(create->sort_order(), RangeRequest::ASCEND);
  EXPECT_EQ(create->sort_target(), RangeRequest::CREATE);
  EXPECT_EQ(get({"k", "--sort-by=modify"})->sort_target(), RangeRequest::MOD);
  EXPECT_EQ(get({"k", "--sort-by=version"})->sort_target(), RangeRequest::VERSION);
  auto bad = get({"k", "--sort-by=size"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message, "bad sort target size");
  EXPECT_EQ(bad.error().exit_code, exitcode::kBadFeature);
}

TEST(RangeRequestFromArgs, FromKeyAndPrefixOfTheEmptyKeySelectEveryKey) {
  const std::string nul(1, '\0');
  auto from = get({"", "--from-key"});
  EXPECT_EQ(from->key(), nul);
  EXPECT_EQ(from->range_end(), nul);
  EXPECT_EQ(get({"b", "--from-key"})->range_end(), nul);
  EXPECT_EQ(get({"a\xff", "--prefix"})->range_end(), "b");
}

TEST(RangeRequestFromArgs, EtcdctlsArgumentErrors) {
  auto none = get({});
  EXPECT_EQ(none.error().message,
            "get command needs one argument as key and an optional argument as range_end");
  EXPECT_EQ(none.error().exit_code, exitcode::kBadArgs);
  EXPECT_EQ(get({"k", "--keys-only", "--count-only"}).error().message,
            "`--keys-only` and `--count-only` cannot be set at the same time, choose one");
  EXPECT_EQ(get({"a", "b", "--prefix"}).error().message,
            "too many arguments, only accept one argument when `--prefix` or `--from-key` is set.");
}

TEST(DeleteRequestFromArgs, RangePrefixAndPrevKv) {
  auto range = del({"a", "c"});
  ASSERT_TRUE(range.has_value()) << range.error().message;
  EXPECT_EQ(range->key(), "a");
  EXPECT_EQ(range->range_end(), "c");
  EXPECT_FALSE(range->prev_kv());
  auto all = del({"", "--prefix", "--prev-kv"});
  EXPECT_EQ(all->key(), std::string(1, '\0'));
  EXPECT_EQ(all->range_end(), std::string(1, '\0'));
  EXPECT_TRUE(all->prev_kv());
}

TEST(DeleteRequestFromArgs, EtcdctlsArgumentErrors) {
  EXPECT_EQ(del({}).error().message,
            "del command needs one argument as key and an optional argument as range_end");
  EXPECT_EQ(del({"a", "--prefix", "--from-key"}).error().message,
            "`--prefix` and `--from-key` cannot be set at the same time, choose one");
  auto many = del({"a", "b", "--from-key"});
  EXPECT_EQ(many.error().message,
            "too many arguments, only accept one argument when `--prefix` or `--from-key` is set.");
  EXPECT_EQ(many.error().exit_code, exitcode::kBadArgs);
}

}  // namespace
}  // namespace etcdagent::fleet
