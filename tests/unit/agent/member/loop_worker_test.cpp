// LoopWorker: blocking work on its own thread, the result on the loop, and nothing delivered to an
// owner that is gone.

#include "agent/member/loop_worker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace etcdagent::agent {
namespace {

TEST(LoopWorker, RunsTheWorkOnItsThreadAndHandsTheResultToTheLoop) {
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  LoopWorker worker(io);
  std::optional<std::thread::id> worked_on;
  std::optional<std::thread::id> done_on;
  worker.run([](std::stop_token) { return std::this_thread::get_id(); },
             [&](std::thread::id id) {
               worked_on = id;
               done_on = std::this_thread::get_id();
             });
  EXPECT_FALSE(done_on);  // never inline
  while (!done_on) io.run_one();
  EXPECT_EQ(*done_on, std::this_thread::get_id());
  EXPECT_NE(*worked_on, std::this_thread::get_id());
}

TEST(LoopWorker, TheLoopRunsUntilTheResultOfWorkInFlightArrived) {
  boost::asio::io_context io;  // nothing else to do
  LoopWorker worker(io);
  bool done = false;
  worker.run([](std::stop_token) { return 7; }, [&](int r) { done = r == 7; });
  io.run();
  EXPECT_TRUE(done);
}

TEST(LoopWorker, WorkRunsInTheOrderGiven) {
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  LoopWorker worker(io);
  std::vector<int> results;
  for (int i = 0; i < 5; ++i) {
    worker.run([i](std::stop_token) { return i; }, [&](int r) { results.push_back(r); });
  }
  while (results.size() < 5) io.run_one();
  EXPECT_EQ(results, (std::vector<int>{0, 1, 2, 3, 4}));
}

// With two threads a blocked work does not hold the next one: the first waits for the second.
TEST(LoopWorker, WithMoreThreadsWorksRunAtOnce) {
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  LoopWorker worker(io, 2);
  std::mutex m;
  std::condition_variable cv;
  bool second_ran = false;
  std::vector<int> results;
  worker.run(
      [&](std::stop_token) {
        std::unique_lock lock(m);
        return cv.wait_for(lock, std::chrono::seconds(10), [&] { return second_ran; }) ? 1 : -1;
      },
      [&](int r) { results.push_back(r); });
  worker.run(
      [&](std::stop_token) {
        {
          std::lock_guard lock(m);
          second_ran = true;
        }
        cv.notify_all();
        return 2;
      },
      [&](int r) { results.push_back(r); });
  while (results.size() < 2) io.run_one();
  // 1: the first work saw the second run while it waited (two threads). Which of the two posts
  // its result first is up to the scheduler.
  std::sort(results.begin(), results.end());
  EXPECT_EQ(results, (std::vector<int>{1, 2}));
}

TEST(LoopWorker, DestroyingItStopsTheWorkInFlightAndDropsItsResultAndProgress) {
  boost::asio::io_context io;
  auto worker = std::make_unique<LoopWorker>(io);
  bool delivered = false;
  bool progressed = false;
  bool saw_stop = false;
  worker->run(
      [&, w = worker.get()](std::stop_token stop) {
        // Blocks until asked to stop: only the destructor's request ends it.
        std::mutex m;
        std::condition_variable_any cv;
        std::unique_lock lock(m);
        cv.wait(lock, stop, [] { return false; });
        saw_stop = stop.stop_requested();
        w->toLoop([&] { progressed = true; });
        return 1;
      },
      [&](int) { delivered = true; });
  worker.reset();  // returns once the work ended
  EXPECT_TRUE(saw_stop);
  io.poll();
  EXPECT_FALSE(delivered);
  EXPECT_FALSE(progressed);
}

}  // namespace
}  // namespace etcdagent::agent
