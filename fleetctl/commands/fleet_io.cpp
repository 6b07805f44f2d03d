#include "fleetctl/commands/fleet_io.hpp"

#include "fleet/fleet_trust.hpp"

namespace etcdagent::fleet {

void StreamProgress::step(const std::string& line) {
  std::lock_guard lock(mu_);
  steps_ << line << std::endl;
}

void StreamProgress::warning(const std::string& line) {
  std::lock_guard lock(mu_);
  warnings_ << prefix_ << line << std::endl;
}

FleetSeams::FleetSeams(Context& ctx, Progress& progress, std::stop_token stop,
                       std::optional<tls::FleetPki> pki)
    : pki_(std::move(pki)),
      agents_(pki_ ? std::optional(agentTls(*pki_)) : std::nullopt),
      etcd_(ctx.global().client),
      env_{agents_, etcd_, Clock::system(), progress, std::move(stop)} {
  if (pki_) {
    tokens_.emplace(pki_->paths.tokens);
    enroll_.emplace(EnrollEnv{
        .dialer = enroll_dialer_, .pki = *pki_, .tokens = *tokens_, .progress = progress});
    env_.enroll = &*enroll_;
  }
}

Result<std::unique_ptr<FleetSeams>> FleetSeams::open(Context& ctx, Progress& progress,
                                                     std::stop_token stop) {
  auto pki = fleetPkiIfAny(ctx.global().fleet_path);
  if (!pki) return fail(pki.error());
  return std::unique_ptr<FleetSeams>(
      new FleetSeams(ctx, progress, std::move(stop), std::move(*pki)));
}

InterruptibleFlow::InterruptibleFlow(Context& ctx, std::ostream& steps)
    : progress_(steps, ctx.err(), "warning: ") {
  guard_.onInterrupt([this] { stop_.request_stop(); });
}

Result<std::unique_ptr<InterruptibleFlow>> InterruptibleFlow::open(Context& ctx,
                                                                   std::ostream& steps) {
  std::unique_ptr<InterruptibleFlow> flow(new InterruptibleFlow(ctx, steps));
  auto seams = FleetSeams::open(ctx, flow->progress_, flow->stop_.get_token());
  if (!seams) return fail(seams.error());
  flow->seams_ = std::move(*seams);
  return flow;
}

std::expected<std::optional<AgentTls>, CommandError> agentTlsFor(Context& ctx) {
  auto pki = fleetPkiIfAny(ctx.global().fleet_path);
  if (!pki) return commandError(pki.error());
  if (!*pki) return std::optional<AgentTls>{};
  return std::optional(agentTls(**pki));
}

std::unexpected<CommandError> flowError(const Error& error) {
  switch (error.code) {
    case Errc::kCancelled: return commandError(exitcode::kInterrupted, error.message);
    case Errc::kUnavailable: return commandError(exitcode::kBadConnection, error.message);
    case Errc::kInvalidArgument: return commandError(exitcode::kInvalidInput, error.message);
    default: return commandError(exitcode::kError, error.message);
  }
}

}  // namespace etcdagent::fleet
