// etcd-fleet endpoints -w list|env|patroni|kubernetes|json: the forms clients take.

#include <gtest/gtest.h>

#include "fleetctl/output/endpoints.hpp"

namespace etcdagent::testing {
namespace {

using fleet::EndpointsForm;

fleet::ClientEndpoints two(const std::string& scheme) {
  fleet::ClientEndpoints e;
  e.members = {
      {.name = "m1", .id = 0x8e9e05c52164694d, .client_urls = {scheme + "://127.0.0.11:2379"}},
      {.name = "m2", .id = 0x2, .client_urls = {scheme + "://127.0.0.12:2379"}}};
  return e;
}

TEST(EndpointsPrinter, EachForm) {
  const auto e = two("http");
  EXPECT_EQ(fleet::renderClientEndpoints(e, EndpointsForm::kList),
            "http://127.0.0.11:2379\nhttp://127.0.0.12:2379\n");
  EXPECT_EQ(fleet::renderClientEndpoints(e, EndpointsForm::kEnv),
            "ETCDCTL_ENDPOINTS=http://127.0.0.11:2379,http://127.0.0.12:2379\n");
  EXPECT_EQ(fleet::renderClientEndpoints(e, EndpointsForm::kKubernetes),
            "--etcd-servers=http://127.0.0.11:2379,http://127.0.0.12:2379\n");
  EXPECT_EQ(fleet::renderClientEndpoints(e, EndpointsForm::kPatroni),
            "etcd3:\n  protocol: http\n  hosts:\n  - 127.0.0.11:2379\n  - 127.0.0.12:2379\n");
  EXPECT_EQ(fleet::renderClientEndpoints(e, EndpointsForm::kJson),
            R"({"endpoints":["http://127.0.0.11:2379","http://127.0.0.12:2379"],"members":[)"
            R"({"name":"m1","id":"8e9e05c52164694d","client_urls":["http://127.0.0.11:2379"]},)"
            R"({"name":"m2","id":"2","client_urls":["http://127.0.0.12:2379"]}]})"
            "\n");
}

TEST(EndpointsPrinter, PatroniOverTlsSaysHttpsAndWhatElseItNeeds) {
  const auto text = fleet::renderClientEndpoints(two("https"), EndpointsForm::kPatroni);
  EXPECT_NE(text.find("  protocol: https\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cacert, cert, key"), std::string::npos) << text;
  EXPECT_NE(text.find("  - 127.0.0.12:2379\n"), std::string::npos) << text;
}

TEST(EndpointsPrinter, FormsAreParsedAndAnUnknownOneNamesTheKnown) {
  EXPECT_EQ(fleet::parseEndpointsForm("patroni").value(), EndpointsForm::kPatroni);
  EXPECT_EQ(fleet::parseEndpointsForm("list").value(), EndpointsForm::kList);
  auto bad = fleet::parseEndpointsForm("yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("list, env, patroni, kubernetes or json"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent::testing
