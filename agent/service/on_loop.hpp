#pragma once

// Runs a piece of a gRPC call on the agent's event loop and waits for it on gRPC's thread: the
// adapter between the API's handler threads and the loop that owns the member.

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <utility>

namespace etcdagent::agent {

// Runs `work(done)` on the event loop; `work` calls done(status, value) when finished, maybe later.
// The value travels through shared state, so a call that timed out never writes into a response
// gRPC has already freed. With `context`, a call gRPC cancelled (its client gave up, or the server
// shuts down while the loop no longer runs) stops waiting at once.
template <class T>
inline grpc::Status onLoop(boost::asio::io_context& io, std::chrono::seconds timeout,
                           std::function<void(std::function<void(grpc::Status, T)>)> work, T* out,
                           grpc::ServerContext* context = nullptr) {
  using Outcome = std::pair<grpc::Status, T>;
  auto promise = std::make_shared<std::promise<Outcome>>();
  auto future = promise->get_future();
  boost::asio::post(io, [promise, work = std::move(work)] {
    auto once = std::make_shared<bool>(false);
    work([promise, once](grpc::Status s, T value) {
      if (std::exchange(*once, true)) return;
      promise->set_value(Outcome{std::move(s), std::move(value)});
    });
  });
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto slice = context != nullptr ? std::chrono::milliseconds(200) : timeout;
  while (future.wait_for(std::min<std::chrono::steady_clock::duration>(
             slice, deadline - std::chrono::steady_clock::now())) != std::future_status::ready) {
    if (context != nullptr && context->IsCancelled()) {
      return {grpc::StatusCode::CANCELLED, "the call was cancelled"};
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return {grpc::StatusCode::DEADLINE_EXCEEDED, "the agent did not finish within " +
                                                       std::to_string(timeout.count()) +
                                                       "s; see its journal"};
    }
  }
  auto outcome = future.get();
  *out = std::move(outcome.second);
  return outcome.first;
}

}  // namespace etcdagent::agent
