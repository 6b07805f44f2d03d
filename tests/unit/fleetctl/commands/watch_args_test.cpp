// watch's argument rules: the command line (key, range_end, "--" and the exec command, the
// environment's key), an interactive line's own options, and the create request built from them.

#include "fleetctl/commands/watch_args.hpp"

#include <gtest/gtest.h>

namespace etcdagent::fleet {
namespace {

const std::vector<std::string> kArgv0 = {"etcd-fleet", "--endpoints=127.0.0.1:1", "watch"};

std::vector<std::string> argv(std::initializer_list<std::string> rest) {
  auto out = kArgv0;
  out.insert(out.end(), rest);
  return out;
}

TEST(WatchArgs, KeyRangeAndExecCommand) {
  auto a = parseWatchCommandLine(argv({"foo", "bar", "--rev", "1", "--", "echo", "hi"}),
                                 {"foo", "bar", "echo", "hi"}, "", "");
  ASSERT_TRUE(a.has_value()) << a.error();
  EXPECT_EQ(a->watch_args, (std::vector<std::string>{"foo", "bar"}));
  EXPECT_EQ(a->exec_args, (std::vector<std::string>{"echo", "hi"}));
  auto plain = parseWatchCommandLine(argv({"foo"}), {"foo"}, "", "");
  ASSERT_TRUE(plain.has_value());
  EXPECT_TRUE(plain->exec_args.empty());
}

TEST(WatchArgs, EtcdctlErrors) {
  EXPECT_EQ(parseWatchCommandLine(argv({}), {}, "", "").error(), "bad number of arguments");
  EXPECT_EQ(parseWatchCommandLine(argv({"a", "--"}), {"a"}, "", "").error(),
            "bad number of arguments (found separator --, but no commands)");
  EXPECT_EQ(parseWatchCommandLine(argv({"a"}), {"a"}, "k", "").error(),
            "bad number of arguments (found conflicting environment key)");
  EXPECT_EQ(
      parseWatchCommandLine(argv({"a", "--", "echo", "1"}), {"a", "echo", "1"}, "k", "").error(),
      "bad number of arguments (found conflicting environment key)");
  auto none = parseWatchCommandLine(argv({"--", "echo"}), {"echo"}, "", "");
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(watchCreateRequest(none->watch_args, {}).error(), "bad number of arguments");
  EXPECT_EQ(watchCreateRequest({"a", "b"}, {.prefix = true}).error(),
            "`range_end` and `--prefix` are mutually exclusive");
}

TEST(WatchArgs, EnvironmentKeyAndRange) {
  auto a =
      parseWatchCommandLine(argv({"--rev", "1", "--", "echo", "hi"}), {"echo", "hi"}, "k", "z");
  ASSERT_TRUE(a.has_value()) << a.error();
  EXPECT_EQ(a->watch_args, (std::vector<std::string>{"k", "z"}));
  EXPECT_EQ(a->exec_args, (std::vector<std::string>{"echo", "hi"}));
}

TEST(WatchArgs, InteractiveLineCarriesItsOwnOptions) {
  auto a = parseInteractiveWatch({"watch", "ik2", "--prefix", "--prev-kv", "--rev=3"}, "", "");
  ASSERT_TRUE(a.has_value()) << a.error();
  EXPECT_EQ(a->watch_args, (std::vector<std::string>{"ik2"}));
  EXPECT_TRUE(a->options.prefix);
  EXPECT_TRUE(a->options.prev_kv);
  EXPECT_EQ(a->options.rev, 3);
  auto exec = parseInteractiveWatch({"watch", "x", "--", "echo", "hi"}, "", "");
  ASSERT_TRUE(exec.has_value());
  EXPECT_EQ(exec->watch_args, (std::vector<std::string>{"x"}));
  EXPECT_EQ(exec->exec_args, (std::vector<std::string>{"echo", "hi"}));
  EXPECT_EQ(parseInteractiveWatch({"watch", "--bogus", "x"}, "", "").error(),
            "unknown flag: --bogus");
}

TEST(WatchArgs, CreateRequestForPrefixRangeAndRevision) {
  auto p = watchCreateRequest({"wp"}, {.prefix = true, .rev = 4, .prev_kv = true});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->key(), "wp");
  EXPECT_EQ(p->range_end(), "wq");
  EXPECT_EQ(p->start_revision(), 4);
  EXPECT_TRUE(p->prev_kv());
  auto all = watchCreateRequest({""}, {.prefix = true});
  EXPECT_EQ(all->key(), std::string(1, '\0'));
  EXPECT_EQ(all->range_end(), std::string(1, '\0'));
  EXPECT_EQ(watchCreateRequest({"a", "c"}, {})->range_end(), "c");
  // etcdctl only takes a range_end from exactly two arguments; with three it watches the key.
  EXPECT_EQ(watchCreateRequest({"a", "c", "x"}, {})->range_end(), "");
}

}  // namespace
}  // namespace etcdagent::fleet
