#pragma once

// The first and the last lines of a child's output (etcd's, or etcdctl's during a restore): a
// crash is often explained at either end (a bad flag prints its error and then the whole usage
// text), so GetStatus shows both.

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

namespace etcdagent::agent {

class OutputTail {
 public:
  static constexpr std::size_t kHeadLines = 3;
  static constexpr std::size_t kTailLines = 20;

  void add(const std::string& line);
  void clear();

  // Oldest first.
  [[nodiscard]] const std::deque<std::string>& tail() const { return tail_; }
  // The head, "..." when lines were left out, then the tail: no line twice.
  [[nodiscard]] std::vector<std::string> excerpt() const;
  // The first line that starts a Go panic ("panic: ...", "fatal error: ..."), "" when none: its
  // goroutine dump that follows can push it out of the tail.
  [[nodiscard]] const std::string& panicLine() const { return panic_; }

 private:
  std::vector<std::string> head_;
  std::deque<std::string> tail_;
  std::size_t lines_ = 0;
  std::string panic_;
};

}  // namespace etcdagent::agent
