// watch: etcdctl's printing of watch responses and its argument rules; txn's printer.

#include <gtest/gtest.h>

#include <sstream>

#include "fleetctl/commands/watch_args.hpp"
#include "fleetctl/output/txn.hpp"
#include "fleetctl/output/watch.hpp"

namespace etcdagent::fleet {
namespace {

etcdserverpb::WatchResponse sampleResponse() {
  etcdserverpb::WatchResponse r;
  auto* h = r.mutable_header();
  h->set_cluster_id(14841639068965178418ULL);
  h->set_member_id(10276657743932975437ULL);
  h->set_revision(20);
  h->set_raft_term(2);
  auto* put = r.add_events();
  put->mutable_kv()->set_key("wp");
  put->mutable_kv()->set_value("zz");
  put->mutable_kv()->set_create_revision(17);
  put->mutable_kv()->set_mod_revision(19);
  put->mutable_kv()->set_version(2);
  put->mutable_prev_kv()->set_key("wp");
  put->mutable_prev_kv()->set_value("a b");
  put->mutable_prev_kv()->set_create_revision(17);
  put->mutable_prev_kv()->set_mod_revision(17);
  put->mutable_prev_kv()->set_version(1);
  auto* del = r.add_events();
  del->set_type(mvccpb::Event::DELETE);
  del->mutable_kv()->set_key("wp");
  del->mutable_kv()->set_mod_revision(20);
  return r;
}

std::string print(const etcdserverpb::WatchResponse& r, OutputFormat f, bool hex = false) {
  std::ostringstream out, err;
  printWatchResponse(Output{out, err, f, hex}, r);
  return out.str();
}

TEST(WatchPrinter, SimplePrintsTypePrevAndKeyValue) {
  EXPECT_EQ(print(sampleResponse(), OutputFormat::kSimple), "PUT\nwp\na b\nwp\nzz\nDELETE\nwp\n\n");
}

TEST(WatchPrinter, SimpleHexEscapesKeysAndValues) {
  etcdserverpb::WatchResponse r;
  r.add_events()->mutable_kv()->set_key("ab");
  EXPECT_EQ(print(r, OutputFormat::kSimple, true), "PUT\n\\x61\\x62\n\n");
}

TEST(WatchPrinter, JsonIsClientv3GoStruct) {
  // As etcdctl 3.4 prints it: Header/Events/CompactRevision/Canceled/Created, PUT (0) omitted.
  EXPECT_EQ(print(sampleResponse(), OutputFormat::kJson),
            R"({"Header":{"cluster_id":14841639068965178418,"member_id":10276657743932975437,)"
            R"("revision":20,"raft_term":2},"Events":[{"kv":{"key":"d3A=","create_revision":17,)"
            R"("mod_revision":19,"version":2,"value":"eno="},"prev_kv":{"key":"d3A=",)"
            R"("create_revision":17,"mod_revision":17,"version":1,"value":"YSBi"}},)"
            R"({"type":1,"kv":{"key":"d3A=","mod_revision":20}}],"CompactRevision":0,)"
            R"("Canceled":false,"Created":false})"
            "\n");
}

TEST(WatchPrinter, JsonOfCompactionCancelHasEmptyEvents) {
  etcdserverpb::WatchResponse r;
  r.mutable_header()->set_cluster_id(1);
  r.mutable_header()->set_raft_term(2);
  r.set_canceled(true);
  r.set_compact_revision(15);
  EXPECT_EQ(watchResponseJson(r),
            R"({"Header":{"cluster_id":1,"raft_term":2},"Events":[],"CompactRevision":15,)"
            R"("Canceled":true,"Created":false})");
  EXPECT_EQ(watchCancelReason(r), "etcdserver: mvcc: required revision has been compacted");
  EXPECT_EQ(print(r, OutputFormat::kSimple), "");
}

TEST(WatchPrinter, FieldsPrintHeaderThenEvents) {
  EXPECT_EQ(print(sampleResponse(), OutputFormat::kFields),
            "\"ClusterID\" : 14841639068965178418\n"
            "\"MemberID\" : 10276657743932975437\n"
            "\"Revision\" : 20\n"
            "\"RaftTerm\" : 2\n"
            "\"Type\" : PUT\n"
            "\"PrevKey\" : \"wp\"\n"
            "\"PrevCreateRevision\" : 17\n"
            "\"PrevModRevision\" : 17\n"
            "\"PrevVersion\" : 1\n"
            "\"PrevValue\" : \"a b\"\n"
            "\"PrevLease\" : 0\n"
            "\"Key\" : \"wp\"\n"
            "\"CreateRevision\" : 17\n"
            "\"ModRevision\" : 19\n"
            "\"Version\" : 2\n"
            "\"Value\" : \"zz\"\n"
            "\"Lease\" : 0\n"
            "\"Type\" : DELETE\n"
            "\"Key\" : \"wp\"\n"
            "\"CreateRevision\" : 0\n"
            "\"ModRevision\" : 20\n"
            "\"Version\" : 0\n"
            "\"Value\" : \"\"\n"
            "\"Lease\" : 0\n");
}

TEST(WatchPrinter, ProgressNotifyAndCancelReasons) {
  etcdserverpb::WatchResponse progress;
  progress.mutable_header()->set_revision(9);
  EXPECT_TRUE(isProgressNotify(progress));
  progress.set_created(true);
  EXPECT_FALSE(isProgressNotify(progress));

  etcdserverpb::WatchResponse cancel;
  cancel.set_canceled(true);
  EXPECT_EQ(watchCancelReason(cancel), "etcdserver: mvcc: required revision is a future revision");
  cancel.set_cancel_reason("etcdserver: permission denied");
  EXPECT_EQ(watchCancelReason(cancel), "etcdserver: permission denied");
}

TEST(WatchPrinter, ExecEnvironmentIsGoQuoted) {
  auto r = sampleResponse();
  r.mutable_events(0)->mutable_kv()->set_value("v\"al\nue");
  EXPECT_EQ(
      watchExecEnvironment(r, r.events(0)),
      (std::vector<std::string>{"ETCD_WATCH_REVISION=20", "ETCD_WATCH_EVENT_TYPE=\"PUT\"",
                                "ETCD_WATCH_KEY=\"wp\"", "ETCD_WATCH_VALUE=\"v\\\"al\\nue\""}));
}

TEST(TxnPrinter, SimpleSeparatesResponsesWithBlankLines) {
  etcdserverpb::TxnResponse r;
  r.set_succeeded(true);
  auto* range = r.add_responses()->mutable_response_range();
  auto* kv = range->add_kvs();
  kv->set_key("user1");
  kv->set_value("bad");
  r.add_responses()->mutable_response_put();
  r.add_responses()->mutable_response_delete_range()->set_deleted(1);
  std::ostringstream out, err;
  printTxn(Output{out, err, OutputFormat::kSimple}, r);
  EXPECT_EQ(out.str(), "SUCCESS\n\nuser1\nbad\n\nOK\n\n1\n");

  etcdserverpb::TxnResponse failure;
  std::ostringstream out2;
  printTxn(Output{out2, err, OutputFormat::kSimple}, failure);
  EXPECT_EQ(out2.str(), "FAILURE\n");
}

TEST(TxnPrinter, FieldsAndJson) {
  etcdserverpb::TxnResponse r;
  r.mutable_header()->set_revision(8);
  r.set_succeeded(true);
  r.add_responses()->mutable_response_put()->mutable_header()->set_revision(8);
  std::ostringstream out, err;
  printTxn(Output{out, err, OutputFormat::kFields}, r);
  EXPECT_EQ(out.str(),
            "\"ClusterID\" : 0\n\"MemberID\" : 0\n\"Revision\" : 8\n\"RaftTerm\" : 0\n"
            "\"Succeeded\" : true\n"
            "\"ClusterID\" : 0\n\"MemberID\" : 0\n\"Revision\" : 8\n\"RaftTerm\" : 0\n");
  std::ostringstream json;
  printTxn(Output{json, err, OutputFormat::kJson}, r);
  EXPECT_EQ(json.str(), R"({"header":{"revision":8},"succeeded":true,"responses":[{"Response":)"
                        R"({"ResponsePut":{"header":{"revision":8}}}}]})"
                        "\n");
}

// ---- argument rules ----

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
