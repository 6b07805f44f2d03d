#pragma once

// A HealthSource whose probes the test answers: probes wait in order until answer(); the probes
// of a run that ended (its HealthProbe destroyed) are dropped, as the real prober drops them.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/supervisor/health.hpp"

namespace etcdagent::testing {

class FakeHealth final : public agent::HealthSource {
 public:
  std::unique_ptr<agent::HealthProbe> open(const std::string& endpoint) override {
    endpoints.push_back(endpoint);
    return std::make_unique<Probe>(*this);
  }

  // Probes asked for and not answered yet (of runs that still exist).
  [[nodiscard]] std::size_t pending() const {
    std::size_t n = 0;
    for (const auto& p : pending_) n += p.alive.expired() ? 0 : 1;
    return n;
  }

  // Answers the oldest pending probe; false when none waits.
  bool answer(const agent::MemberHealth& health) {
    while (!pending_.empty()) {
      auto next = std::move(pending_.front());
      pending_.pop_front();
      if (next.alive.expired()) continue;
      next.done(health);
      return true;
    }
    return false;
  }

  static agent::MemberHealth healthy(bool learner = false, std::uint64_t member_id = 0xabc) {
    agent::MemberHealth h;
    h.healthy = true;
    h.member_id = member_id;
    h.is_learner = learner;
    h.is_leader = !learner;
    h.version = "3.4.23";
    h.voting_members = 1;
    h.revision = 7;
    return h;
  }
  static agent::MemberHealth unhealthy(std::string why = "connection refused") {
    agent::MemberHealth h;
    h.error = std::move(why);
    return h;
  }

  std::vector<std::string> endpoints;  // opened, in order

 private:
  struct Pending {
    std::weak_ptr<int> alive;
    std::function<void(agent::MemberHealth)> done;
  };
  class Probe final : public agent::HealthProbe {
   public:
    explicit Probe(FakeHealth& source) : source_(source) {}
    void probe(std::function<void(agent::MemberHealth)> done) override {
      source_.pending_.push_back({alive_, std::move(done)});
    }

   private:
    FakeHealth& source_;
    std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  };

  std::deque<Pending> pending_;
};

}  // namespace etcdagent::testing
