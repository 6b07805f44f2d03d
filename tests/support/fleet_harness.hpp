#pragma once

// N real etcd-agents, each on its own loopback address (127.0.0.11, .12, ...) like hosts of a
// fleet, bootstrapped by running the real etcd-fleet binary with --fleet <tempdir>/fleet.toml.
// Agents get free ports; everything is stopped by PID and removed when the harness dies.

#include <memory>
#include <string>
#include <vector>

#include "tests/support/agent_harness.hpp"
#include "tests/support/process.hpp"

namespace etcdagent::testing {

class FleetHarness {
 public:
  struct Options {
    int size = 3;
    int first_host = 11;                  // 127.0.0.<first_host + i>
    std::string token = "test-cluster";   // the agents' configured [cluster] token
    std::string extra_config;             // appended to every agent's agent.toml
    std::vector<std::string> etcd_flags;  // added to every agent's [etcd] extra_flags
  };

  explicit FleetHarness(Options options);
  FleetHarness() : FleetHarness(Options{}) {}
  ~FleetHarness();
  FleetHarness(const FleetHarness&) = delete;
  FleetHarness& operator=(const FleetHarness&) = delete;

  [[nodiscard]] std::size_t size() const { return agents_.size(); }
  AgentHarness& agent(std::size_t i) { return *agents_[i]; }
  [[nodiscard]] const std::string& dir() const { return dir_.path(); }
  [[nodiscard]] std::string fleetPath() const { return dir_.path() + "/fleet.toml"; }

  // Starts every agent (or those given) and waits (bounded) until each answers GetStatus.
  void startAll();
  void start(const std::vector<std::size_t>& which);

  // "127.0.0.11:P1,127.0.0.12:P2,..." (the agents' API addresses), for --hosts.
  [[nodiscard]] std::string hosts() const;

  // etcd-fleet --fleet <fleetPath()> ARGS (no --endpoints: commands use the inventory).
  RunResult fleet(const std::vector<std::string>& args,
                  std::chrono::milliseconds timeout = std::chrono::seconds(90)) const;

  // What an operator of a fleet formed before it had a CA does to make it a TLS fleet (the
  // members keep serving plaintext, as such a cluster does until `tls enable`): `ca init`, a token
  // from `token create` in every agent's [enroll] token_file, each agent restarted in turn (its
  // member starts again from state.json; the next one only once that member is healthy), then
  // `enroll --hosts`. Bootstrap first. Throws with the failing command's output.
  void enrollAfterwards();

  // etcd-fleet bootstrap --hosts <hosts()> --fleet <fleetPath()> EXTRA.
  RunResult bootstrap(const std::vector<std::string>& extra = {},
                      std::chrono::milliseconds timeout = std::chrono::seconds(90)) const;

 private:
  Options options_;
  TempDir dir_;
  std::vector<std::unique_ptr<AgentHarness>> agents_;
};

}  // namespace etcdagent::testing
