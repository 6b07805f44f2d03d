#include "agent/supervisor/output_tail.hpp"

#include <algorithm>

namespace etcdagent::agent {

void OutputTail::add(const std::string& line) {
  if (panic_.empty() && (line.starts_with("panic: ") || line.starts_with("fatal error: ")))
    panic_ = line;
  if (head_.size() < kHeadLines) head_.push_back(line);
  ++lines_;
  tail_.push_back(line);
  if (tail_.size() > kTailLines) tail_.pop_front();
}

void OutputTail::clear() {
  head_.clear();
  tail_.clear();
  lines_ = 0;
  panic_.clear();
}

std::vector<std::string> OutputTail::excerpt() const {
  // When the output was short, the head and the tail share lines.
  const std::size_t both = head_.size() + tail_.size();
  const std::size_t overlap = lines_ < both ? both - lines_ : 0;
  std::vector<std::string> out(head_.begin(), head_.end());
  if (overlap == 0 && lines_ > both) out.emplace_back("...");
  for (std::size_t i = std::min(overlap, tail_.size()); i < tail_.size(); ++i) {
    out.push_back(tail_[i]);
  }
  return out;
}

}  // namespace etcdagent::agent
