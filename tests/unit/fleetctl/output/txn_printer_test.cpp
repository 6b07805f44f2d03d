// txn: etcdctl's printing of a transaction's response (simple, fields, json).

#include <gtest/gtest.h>

#include <sstream>

#include "fleetctl/output/txn.hpp"

namespace etcdagent::fleet {
namespace {

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

}  // namespace
}  // namespace etcdagent::fleet
