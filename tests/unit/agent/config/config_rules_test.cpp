// validateAgentConfig() on configs changed after parsing: the rules hold for any AgentConfig, and
// a value that is not in the file is named as the default.

#include <gtest/gtest.h>

#include "agent/config/agent_config.hpp"

namespace etcdagent::agent {
namespace {

AgentConfig parsed(std::string_view text = "") {
  auto cfg = parseAgentConfig(text, "agent.toml", "host1");
  EXPECT_TRUE(cfg) << cfg.error().message;
  return *cfg;
}

TEST(ConfigRules, TheDefaultsAreValid) {
  EXPECT_TRUE(validateAgentConfig(parsed()));
}

TEST(ConfigRules, AValueThatIsNotInTheFileIsNamedAsTheDefault) {
  auto cfg = parsed();
  cfg.member.name = "..";
  auto r = validateAgentConfig(cfg);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("agent.toml: member.name (not set, the default): expected", 0),
            0U)
      << r.error().message;
}

TEST(ConfigRules, AValueInTheFileIsNamedByItsLineAndColumn) {
  auto cfg = parsed("[agent]\nhttp_listen = \"127.0.0.1:2300\"\n");
  cfg.agent.http_listen = "0.0.0.0:2300";
  auto r = validateAgentConfig(cfg);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("agent.toml:2:15: agent.http_listen: expected one address", 0),
            0U)
      << r.error().message;
}

TEST(ConfigRules, TheFirstProblemInFileOrderWins) {
  auto cfg = parsed();
  cfg.member.advertise_host = "0.0.0.0";
  cfg.etcd.extra_flags = {"--force-new-cluster"};
  auto r = validateAgentConfig(cfg);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("member.advertise_host"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace etcdagent::agent
