#pragma once

// How a flow tells the operator what it does while it runs. A flow never prints: it reports each
// step (and what each host did in it) and each warning here, and returns its outcome as a value.
// The CLI prints the lines (fleetctl/commands/fleet_io.hpp); a test records them.

#include <string>

namespace etcdagent::fleet {

class Progress {
 public:
  virtual ~Progress() = default;
  // A step of the flow or one host's part in it, as one line ("[2/5] preflight ...").
  // Flows that fan out call it from several threads: implementations serialize.
  virtual void step(const std::string& line) = 0;
  // Something the operator should know (slow disk, --force overrode a check); the flow goes on.
  virtual void warning(const std::string& line) = 0;
};

// For callers that want no progress.
class NoProgress final : public Progress {
 public:
  void step(const std::string&) override {}
  void warning(const std::string&) override {}
};

}  // namespace etcdagent::fleet
