#pragma once

// What the fleet commands (bootstrap, status, member add --host / remove / replace, agent wipe)
// share as adapters of lib/fleet: the real seams a flow runs with (gRPC agents, etcd with the
// operator's TLS and credentials, the steady clock), a Progress that prints, and the mapping of a
// flow's failure to etcdctl's exit codes (lib/fleet/env.hpp names the codes).

#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string>

#include "agentclient/agent_client.hpp"
#include "agentclient/enroll_client.hpp"
#include "fleet/enroll.hpp"
#include "fleet/env.hpp"
#include "fleet/etcd_cluster.hpp"
#include "fleetctl/cli/command.hpp"
#include "fleetctl/cli/interrupt.hpp"

namespace etcdagent::fleet {

// Progress lines to `steps`, warnings to `warnings` behind `warning_prefix`; safe to call from
// the threads a flow fans out to, each line flushed whole.
class StreamProgress final : public Progress {
 public:
  StreamProgress(std::ostream& steps, std::ostream& warnings, std::string warning_prefix)
      : steps_(steps), warnings_(warnings), prefix_(std::move(warning_prefix)) {}
  void step(const std::string& line) override;
  void warning(const std::string& line) override;

 private:
  std::mutex mu_;
  std::ostream& steps_;
  std::ostream& warnings_;
  std::string prefix_;
};

// The real seams for one command run. For a fleet with a CA (fleet/fleet_trust.hpp) the agents
// are dialled over mutual TLS and flows enroll new hosts (Env::enroll); a fleet without one dials
// plaintext and enrolls nothing.
class FleetSeams {
 public:
  // Fails for a fleet CA that is there but cannot be used (naming the file).
  static Result<std::unique_ptr<FleetSeams>> open(Context& ctx, Progress& progress,
                                                  std::stop_token stop = {});
  FleetSeams(const FleetSeams&) = delete;
  FleetSeams& operator=(const FleetSeams&) = delete;

  [[nodiscard]] const Env& env() const { return env_; }

 private:
  FleetSeams(Context& ctx, Progress& progress, std::stop_token stop,
             std::optional<tls::FleetPki> pki);

  std::optional<tls::FleetPki> pki_;
  GrpcAgentDialer agents_;
  EtcdConnector etcd_;
  GrpcEnrollDialer enroll_dialer_;
  std::optional<TokenStore> tokens_;
  std::optional<EnrollEnv> enroll_;
  Env env_;
};

// What a command that runs a flow stoppable by Ctrl-C sets up, in this order: the interrupt guard
// (before any gRPC thread starts, so they inherit its blocked signals), the stop source it
// triggers, a StreamProgress (steps to `steps`, warnings to stderr) and the seams.
class InterruptibleFlow {
 public:
  static Result<std::unique_ptr<InterruptibleFlow>> open(Context& ctx, std::ostream& steps);
  InterruptibleFlow(const InterruptibleFlow&) = delete;
  InterruptibleFlow& operator=(const InterruptibleFlow&) = delete;

  [[nodiscard]] const Env& env() const { return seams_->env(); }

 private:
  InterruptibleFlow(Context& ctx, std::ostream& steps);

  InterruptGuard guard_;
  std::stop_source stop_;
  StreamProgress progress_;
  std::unique_ptr<FleetSeams> seams_;
};

// The TLS etcd-fleet dials agents with for the fleet of `ctx` (--fleet): nullopt for a fleet
// without a CA.
std::expected<std::optional<AgentTls>, CommandError> agentTlsFor(Context& ctx);

// A flow's failure as the command's error: kCancelled -> 5, kUnavailable -> 2,
// kInvalidArgument -> 3, anything else -> 1.
std::unexpected<CommandError> flowError(const Error& error);

}  // namespace etcdagent::fleet
