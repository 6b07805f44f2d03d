#pragma once

// A LoopClock whose time moves only when the test says so: advance() fires, in order, every timer
// that falls due on the way, each at its own deadline (now() reads that deadline inside it).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "agent/member/loop_clock.hpp"

namespace etcdagent::testing {

class ManualClock final : public agent::LoopClock {
 public:
  [[nodiscard]] Clock::time_point now() const override { return now_; }

  std::unique_ptr<agent::LoopTimer> timer() override {
    auto slot = std::make_shared<Slot>();
    slots_.push_back(slot);
    return std::make_unique<Timer>(*this, slot);
  }

  // Moves time forward by `by`, firing what falls due (timers armed meanwhile included).
  void advance(std::chrono::milliseconds by) {
    const auto until = now_ + by;
    while (auto slot = earliest(until)) {
      now_ = slot->due;
      slot->armed = false;
      auto fire = std::move(slot->fire);
      fire();
    }
    now_ = until;
  }

  // How long until the next armed timer fires; nullopt when none is armed.
  [[nodiscard]] std::optional<std::chrono::milliseconds> nextDue() const {
    auto slot = earliest(Clock::time_point::max());
    if (!slot) return std::nullopt;
    return std::chrono::duration_cast<std::chrono::milliseconds>(slot->due - now_);
  }

  [[nodiscard]] std::size_t armed() const {
    return static_cast<std::size_t>(std::count_if(slots_.begin(), slots_.end(), [](const auto& w) {
      auto s = w.lock();
      return s && s->armed;
    }));
  }

 private:
  struct Slot {
    bool armed = false;
    Clock::time_point due;
    std::uint64_t order = 0;  // timers due at the same time fire in the order they were armed
    std::function<void()> fire;
  };

  class Timer final : public agent::LoopTimer {
   public:
    Timer(ManualClock& clock, std::shared_ptr<Slot> slot) : clock_(clock), slot_(std::move(slot)) {}
    void arm(std::chrono::milliseconds delay, std::function<void()> fire) override {
      slot_->armed = true;
      slot_->due = clock_.now_ + delay;
      slot_->order = ++clock_.order_;
      slot_->fire = std::move(fire);
    }
    void cancel() override {
      slot_->armed = false;
      slot_->fire = nullptr;
    }

   private:
    ManualClock& clock_;
    std::shared_ptr<Slot> slot_;
  };

  [[nodiscard]] std::shared_ptr<Slot> earliest(Clock::time_point until) const {
    std::shared_ptr<Slot> best;
    for (const auto& w : slots_) {
      auto s = w.lock();
      if (!s || !s->armed || s->due > until) continue;
      if (!best || s->due < best->due || (s->due == best->due && s->order < best->order)) best = s;
    }
    return best;
  }

  // Any start will do: a steady clock's epoch means nothing.
  Clock::time_point now_ = Clock::time_point{} + std::chrono::hours(1);
  std::uint64_t order_ = 0;
  std::vector<std::weak_ptr<Slot>> slots_;
};

}  // namespace etcdagent::testing
