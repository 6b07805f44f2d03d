#pragma once

// Runs one call per host at once: the agents are on different machines, so one slow agent must not
// delay the others, and a flow over N hosts takes as long as the slowest, not the sum. The number
// of threads is bounded (a fleet of 1,000 hosts must not start 1,000 threads); the hosts beyond
// the bound wait for a free thread.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

namespace etcdagent::fleet {

inline constexpr std::size_t kMaxFanOut = 32;

// fn(i) for every i in [0, n); the results in index order. fn must be safe to call from several
// threads at once.
template <class Fn>
auto fanOut(std::size_t n, Fn fn) {
  using R = std::invoke_result_t<Fn&, std::size_t>;
  std::vector<std::optional<R>> slots(n);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) slots[i].emplace(fn(i));
  };
  const std::size_t threads = std::min(n, kMaxFanOut);
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::jthread> pool;
    pool.reserve(threads);
    for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(work);
  }  // the jthreads join here
  std::vector<R> out;
  out.reserve(n);
  for (auto& s : slots) out.push_back(std::move(*s));
  return out;
}

}  // namespace etcdagent::fleet
