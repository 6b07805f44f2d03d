// agent.toml (agent/config): any bytes as the config file. A config is accepted or refused with an
// error that names the file; on acceptance, the etcd command line it generates (with a plan
// naming this member) is computed too, as `etcd-agent --check-config` does.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/config/agent_config.hpp"
#include "agent/supervisor/etcd_flags.hpp"

namespace {

constexpr std::string_view kSource = "fuzz/agent.toml";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace etcdagent::agent;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto cfg = parseAgentConfig(text, kSource, "fuzzhost");
  if (!cfg) {
    // Bad input gets a clear error naming the file, never an empty one.
    if (cfg.error().message.find(kSource) == std::string::npos) std::abort();
    return 0;
  }
  if (cfg->source != kSource || cfg->member.name.empty()) std::abort();
  for (const auto& f : cfg->etcd.extra_flags) (void)isManagedEtcdFlag(f);
  etcdagent::v1::MemberState state;
  auto* plan = state.mutable_plan();
  plan->set_mode(etcdagent::v1::PLAN_MODE_NEW);
  plan->set_member_name(cfg->member.name);
  plan->set_initial_cluster(cfg->member.name + "=http://127.0.0.1:2380");
  plan->set_cluster_token(cfg->cluster.token);
  if (auto argv = etcdCommandLine(*cfg, state); argv) (void)shellJoin(*argv);
  return 0;
}
