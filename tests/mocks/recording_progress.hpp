#pragma once

// A Progress that keeps every line, for tests that check what a flow told the operator.

#include <mutex>
#include <string>
#include <vector>

#include "fleet/progress.hpp"

namespace etcdagent::testing {

class RecordingProgress final : public fleet::Progress {
 public:
  void step(const std::string& line) override {
    std::lock_guard lock(mu_);
    steps.push_back(line);
  }
  void warning(const std::string& line) override {
    std::lock_guard lock(mu_);
    warnings.push_back(line);
  }
  // Whether some step line contains `text`.
  [[nodiscard]] bool said(const std::string& text) const {
    for (const auto& s : steps) {
      if (s.find(text) != std::string::npos) return true;
    }
    return false;
  }

  std::vector<std::string> steps;
  std::vector<std::string> warnings;

 private:
  std::mutex mu_;
};

}  // namespace etcdagent::testing
