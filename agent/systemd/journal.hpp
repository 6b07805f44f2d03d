#pragma once

// etcd's log lines into the journal, one entry per line, with structured fields:
//   MESSAGE=<the line>  PRIORITY=<from zap's "level">  ETCD_MEMBER=<name>  SYSLOG_IDENTIFIER=etcd
// Outside systemd (no journal stream) the lines go to stderr, prefixed with the member name.

#include <string>
#include <string_view>

namespace etcdagent::agent {

// syslog priority of a zap JSON line ({"level":"warn",...}); info when unknown.
int zapPriority(std::string_view line);

class EtcdLogSink {
 public:
  explicit EtcdLogSink(std::string member);
  void line(std::string_view text) const;
  // The agent's own messages (not etcd's), same destination.
  void agent(int priority, std::string_view text) const;

 private:
  std::string member_;
  bool journal_;
};

}  // namespace etcdagent::agent
