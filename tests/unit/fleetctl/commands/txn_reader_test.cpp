// etcdctl's txn input: request lines (put/get/del with their commands' flags), the three
// sections with their prompts, and the errors.

#include "fleetctl/commands/txn_reader.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace etcdagent::fleet {
namespace {

CommandError requestError(std::string_view line) {
  auto r = parseRequestOp(line);
  EXPECT_FALSE(r.has_value()) << line;
  return r ? CommandError{} : r.error();
}

TEST(TxnRequest, PutWithFlags) {
  auto op = parseRequestOp(R"(put "k 1" "v 1" --lease=1a --prev-kv)");
  ASSERT_TRUE(op.has_value()) << op.error().message;
  ASSERT_TRUE(op->has_request_put());
  EXPECT_EQ(op->request_put().key(), "k 1");
  EXPECT_EQ(op->request_put().value(), "v 1");
  EXPECT_EQ(op->request_put().lease(), 0x1a);
  EXPECT_TRUE(op->request_put().prev_kv());
  auto ignore = parseRequestOp("put k --ignore-value");
  ASSERT_TRUE(ignore.has_value());
  EXPECT_TRUE(ignore->request_put().ignore_value());
  // etcdctl ignores a third argument of put.
  EXPECT_EQ(parseRequestOp("put k v extra")->request_put().value(), "v");
  EXPECT_EQ(parseRequestOp("put k -- -v")->request_put().value(), "-v");
}

TEST(TxnRequest, GetRangePrefixAndSort) {
  auto range = parseRequestOp("get a c --limit=2 --rev=7 --consistency=s");
  ASSERT_TRUE(range.has_value()) << range.error().message;
  const auto& r = range->request_range();
  EXPECT_EQ(r.key(), "a");
  EXPECT_EQ(r.range_end(), "c");
  EXPECT_EQ(r.limit(), 2);
  EXPECT_EQ(r.revision(), 7);
  EXPECT_TRUE(r.serializable());
  auto prefix = parseRequestOp("get foo --prefix --keys-only --sort-by=value --order=descend");
  ASSERT_TRUE(prefix.has_value());
  EXPECT_EQ(prefix->request_range().range_end(), "fop");
  EXPECT_TRUE(prefix->request_range().keys_only());
  EXPECT_EQ(prefix->request_range().sort_target(), etcdserverpb::RangeRequest::VALUE);
  EXPECT_EQ(prefix->request_range().sort_order(), etcdserverpb::RangeRequest::DESCEND);
  auto all = parseRequestOp(R"(get "" --prefix)");
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->request_range().key(), std::string(1, '\0'));
  EXPECT_EQ(all->request_range().range_end(), std::string(1, '\0'));
}

TEST(TxnRequest, DelRangeAndPrefix) {
  auto d = parseRequestOp("del k --prefix --prev-kv");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->request_delete_range().key(), "k");
  EXPECT_EQ(d->request_delete_range().range_end(), "l");
  EXPECT_TRUE(d->request_delete_range().prev_kv());
  auto from = parseRequestOp("del k --from-key");
  ASSERT_TRUE(from.has_value());
  EXPECT_EQ(from->request_delete_range().range_end(), std::string(1, '\0'));
}

TEST(TxnRequest, ErrorsCarryEtcdctlWordingAndExitCodes) {
  EXPECT_EQ(requestError("put").message, "invalid txn compare request: put");
  EXPECT_EQ(requestError("foo k").message, "invalid txn request: foo k");
  EXPECT_EQ(requestError("put k v --bogus").message, "invalid txn request: put k v --bogus");
  EXPECT_EQ(requestError("put k v -h").exit_code, exitcode::kInvalidInput);
  auto one = requestError("put k");
  EXPECT_EQ(one.message, "put command needs 1 argument and input from stdin or 2 arguments");
  EXPECT_EQ(one.exit_code, exitcode::kBadArgs);
  EXPECT_EQ(
      requestError("put k v --lease=zz").message,
      R"(bad lease ID (strconv.ParseInt: parsing "zz": invalid syntax), expecting ID in Hex)");
  auto consistency = requestError("get k --consistency=x");
  EXPECT_EQ(consistency.message, R"(unknown consistency flag "x")");
  EXPECT_EQ(consistency.exit_code, exitcode::kBadFeature);
  EXPECT_EQ(requestError("get k --prefix --from-key").message,
            "`--prefix` and `--from-key` cannot be set at the same time, choose one");
  EXPECT_EQ(requestError("del k a b").message,
            "del command needs one argument as key and an optional argument as range_end");
  EXPECT_EQ(requestError("get k --order=sideways").message, "bad sort order sideways");
}

TEST(TxnInput, ThreeSectionsSeparatedByBlankLines) {
  std::istringstream in(
      "value(\"user1\") = \"bad\"\n\n  del user1  \n\nput user1 good\nget user1\n\n");
  std::vector<std::string> prompts;
  auto txn = readTxn(in, [&](std::string_view p) { prompts.emplace_back(p); });
  ASSERT_TRUE(txn.has_value()) << txn.error().message;
  ASSERT_EQ(txn->compare_size(), 1);
  ASSERT_EQ(txn->success_size(), 1);
  EXPECT_EQ(txn->success(0).request_delete_range().key(), "user1");
  ASSERT_EQ(txn->failure_size(), 2);
  EXPECT_EQ(txn->failure(0).request_put().value(), "good");
  EXPECT_EQ(prompts, (std::vector<std::string>{"compares:", "success requests (get, put, del):",
                                               "failure requests (get, put, del):"}));
}

TEST(TxnInput, EmptyTransactionAndWhitespaceOnlyLines) {
  std::istringstream in(" \t\n\r\n\n");
  auto txn = readTxn(in);
  ASSERT_TRUE(txn.has_value());
  EXPECT_EQ(txn->compare_size() + txn->success_size() + txn->failure_size(), 0);
}

TEST(TxnInput, MissingFinalBlankLineIsEof) {
  for (const char* text : {"value(\"a\") = \"b\"\n\ndel a\n\nput a b\n",
                           "value(\"a\") = \"b\"\n\ndel a\n\nput a b", ""}) {
    std::istringstream in(text);
    std::vector<std::string> prompts;
    auto txn = readTxn(in, [&](std::string_view p) { prompts.emplace_back(p); });
    ASSERT_FALSE(txn.has_value()) << text;
    EXPECT_EQ(txn.error().message, "EOF");
    EXPECT_EQ(txn.error().exit_code, exitcode::kInvalidInput);
  }
}

TEST(TxnInput, StopsAtTheFirstBadLineBeforeLaterPrompts) {
  std::istringstream in("bogus\n\n\n\n");
  std::vector<std::string> prompts;
  auto txn = readTxn(in, [&](std::string_view p) { prompts.emplace_back(p); });
  ASSERT_FALSE(txn.has_value());
  EXPECT_EQ(txn.error().message, "malformed comparison: bogus");
  EXPECT_EQ(prompts.size(), 1u);
}

}  // namespace
}  // namespace etcdagent::fleet
