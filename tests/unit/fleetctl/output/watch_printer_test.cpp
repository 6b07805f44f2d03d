// watch: etcdctl's printing of watch responses, progress notices, cancel reasons and the exec
// command's environment.

#include <gtest/gtest.h>

#include <sstream>

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

}  // namespace
}  // namespace etcdagent::fleet
