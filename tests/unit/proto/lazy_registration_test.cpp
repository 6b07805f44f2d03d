// proto/lazy_registration.cpp: protobuf files are added to the generated pool on first use, not by
// static initializers before main, and everything that uses descriptors still finds them.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/wrappers.pb.h>
#include <gtest/gtest.h>

#include <string>

#include "etcd/etcdserverpb/rpc.pb.h"

namespace {

namespace pb = google::protobuf;

// wrappers.proto is linked into this program (the test below uses it) but nothing else in the
// project touches it: registered before main, the pool would find its types by name at once.
TEST(ProtobufRegistration, AFileIsAddedToThePoolOnFirstUseNotBeforeMain) {
  const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
  EXPECT_EQ(pool->FindMessageTypeByName("google.protobuf.DoubleValue"), nullptr);

  const pb::Descriptor* used = pb::DoubleValue::descriptor();
  ASSERT_NE(used, nullptr);
  EXPECT_EQ(pool->FindMessageTypeByName("google.protobuf.DoubleValue"), used);

  pb::DoubleValue value;
  value.set_value(1.5);
  std::string json;
  ASSERT_TRUE(pb::util::MessageToJsonString(value, &json).ok());
  EXPECT_EQ(json, "1.5");
}

// descriptor.proto: DescriptorPool::generated_pool() registers it itself.
TEST(ProtobufRegistration, DescriptorProtoIsInThePoolOnceThePoolIsUsed) {
  const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
  EXPECT_NE(pool->FindMessageTypeByName("google.protobuf.FileDescriptorProto"), nullptr);
}

// A message of ours with its imports (rpc.proto imports kv.proto and auth.proto): reflection and
// JSON printing register the whole chain.
TEST(ProtobufRegistration, OurMessagesPrintAsJsonWithTheirImports) {
  etcdserverpb::RangeResponse r;
  r.mutable_header()->set_revision(7);
  auto* kv = r.add_kvs();
  kv->set_key("foo");
  kv->set_value("bar");
  std::string json;
  ASSERT_TRUE(pb::util::MessageToJsonString(r, &json).ok());
  EXPECT_EQ(json, R"({"header":{"revision":"7"},"kvs":[{"key":"Zm9v","value":"YmFy"}]})");
  EXPECT_NE(pb::DescriptorPool::generated_pool()->FindMessageTypeByName("mvccpb.KeyValue"),
            nullptr);
}

}  // namespace
