#include "agent/member/loop_clock.hpp"

#include <boost/asio/steady_timer.hpp>
#include <cstdint>

namespace etcdagent::agent {
namespace {

class AsioTimer final : public LoopTimer {
 public:
  explicit AsioTimer(boost::asio::io_context& io) : timer_(io) {}
  ~AsioTimer() override { cancel(); }
  AsioTimer(const AsioTimer&) = delete;
  AsioTimer& operator=(const AsioTimer&) = delete;

  void arm(std::chrono::milliseconds delay, std::function<void()> fire) override {
    const auto armed = ++*generation_;
    timer_.expires_after(delay);
    timer_.async_wait([generation = generation_, armed,
                       fire = std::move(fire)](const boost::system::error_code& ec) {
      // cancel() cannot recall a completion that is already queued; the generation can: a timer
      // re-armed, cancelled or destroyed after it expired does not fire for the old deadline.
      if (!ec && *generation == armed) fire();
    });
  }
  void cancel() override {
    ++*generation_;
    boost::system::error_code ignored;  // the overload that cannot throw: a destructor calls it
    timer_.cancel(ignored);
  }

 private:
  boost::asio::steady_timer timer_;
  std::shared_ptr<std::uint64_t> generation_ = std::make_shared<std::uint64_t>(0);
};

}  // namespace

std::unique_ptr<LoopTimer> AsioClock::timer() {
  return std::make_unique<AsioTimer>(io_);
}

}  // namespace etcdagent::agent
