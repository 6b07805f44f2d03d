#include "agent/systemd/journal.hpp"

#include <syslog.h>
#include <systemd/sd-journal.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace etcdagent::agent {

int zapPriority(std::string_view line) {
  auto pos = line.find("\"level\":\"");
  if (pos == std::string_view::npos) return LOG_INFO;
  auto level = line.substr(pos + 9);
  level = level.substr(0, level.find('"'));
  if (level == "debug") return LOG_DEBUG;
  if (level == "info") return LOG_INFO;
  if (level == "warn") return LOG_WARNING;
  if (level == "error") return LOG_ERR;
  if (level == "dpanic" || level == "panic" || level == "fatal") return LOG_CRIT;
  return LOG_INFO;
}

// Under systemd, stderr is connected to the journal and $JOURNAL_STREAM says so.
EtcdLogSink::EtcdLogSink(std::string member)
    : member_(std::move(member)), journal_(std::getenv("JOURNAL_STREAM") != nullptr) {}

void EtcdLogSink::line(std::string_view text) const {
  if (journal_) {
    sd_journal_send("MESSAGE=%.*s", static_cast<int>(text.size()), text.data(), "PRIORITY=%d",
                    zapPriority(text), "ETCD_MEMBER=%s", member_.c_str(), "SYSLOG_IDENTIFIER=etcd",
                    nullptr);
    return;
  }
  std::fprintf(stderr, "etcd[%s]: %.*s\n", member_.c_str(), static_cast<int>(text.size()),
               text.data());
}

void EtcdLogSink::agent(int priority, std::string_view text) const {
  if (journal_) {
    sd_journal_send("MESSAGE=%.*s", static_cast<int>(text.size()), text.data(), "PRIORITY=%d",
                    priority, "ETCD_MEMBER=%s", member_.c_str(), nullptr);
    return;
  }
  std::fprintf(stderr, "etcd-agent[%s]: %.*s\n", member_.c_str(), static_cast<int>(text.size()),
               text.data());
}

}  // namespace etcdagent::agent
