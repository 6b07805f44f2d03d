#include "fleetctl/output/maintenance.hpp"

#include <cstdio>
#include <ostream>

#include "fleetctl/commands/snapshot.hpp"
#include "fleetctl/output/json.hpp"
#include "fleetctl/output/kv.hpp"
#include "fleetctl/output/table.hpp"

namespace etcdagent::fleet {

std::string alarmMemberText(const etcdserverpb::AlarmMember& a) {
  std::string out;
  if (a.memberid() != 0) out += "memberID:" + std::to_string(a.memberid()) + " ";
  if (a.alarm() != etcdserverpb::NONE) {
    const std::string& name = etcdserverpb::AlarmType_Name(a.alarm());
    out += "alarm:" + (name.empty() ? std::to_string(a.alarm()) : name) + " ";
  }
  return out;
}

void printAlarms(const Output& o, const etcdserverpb::AlarmResponse& r) {
  switch (o.format) {
    case OutputFormat::kSimple:
      for (const auto& a : r.alarms()) o.out << alarmMemberText(a) << "\n";
      return;
    case OutputFormat::kJson: o.out << toGoJson(r) << "\n"; return;
    case OutputFormat::kFields:
      printHeaderFields(o.out, r.header());
      for (const auto& a : r.alarms()) {
        const std::string& name = etcdserverpb::AlarmType_Name(a.alarm());
        o.out << "\"MemberID\" : " << a.memberid() << "\n";
        o.out << "\"AlarmType\" : " << (name.empty() ? std::to_string(a.alarm()) : name) << "\n\n";
      }
      return;
    case OutputFormat::kTable: break;
  }
}

void printSnapshotStatus(const Output& o, const SnapshotStatus& s) {
  char hash[16];
  std::snprintf(hash, sizeof hash, "%x", s.hash);
  switch (o.format) {
    case OutputFormat::kSimple:
      o.out << hash << ", " << s.revision << ", " << s.total_keys << ", "
            << humanizeBytes(static_cast<std::uint64_t>(s.total_size)) << "\n";
      return;
    case OutputFormat::kJson:
      o.out << JsonObject()
                   .unum("hash", s.hash)
                   .num("revision", s.revision)
                   .num("totalKey", s.total_keys)
                   .num("totalSize", s.total_size)
                   .str()
            << "\n";
      return;
    case OutputFormat::kTable: {
      Table t({"HASH", "REVISION", "TOTAL KEYS", "TOTAL SIZE"});
      t.addRow({hash, std::to_string(s.revision), std::to_string(s.total_keys),
                humanizeBytes(static_cast<std::uint64_t>(s.total_size))});
      o.out << t.render();
      return;
    }
    case OutputFormat::kFields:
      o.out << "\"Hash\" : " << s.hash << "\n";
      o.out << "\"Revision\" : " << s.revision << "\n";
      o.out << "\"Keys\" : " << s.total_keys << "\n";
      o.out << "\"Size\" : " << s.total_size << "\n";
      return;
  }
}

std::string defragDoneLine(const std::string& endpoint) {
  return "Finished defragmenting etcd member[" + endpoint + "]";
}

std::string defragFailedLine(const std::string& endpoint, const std::string& cause) {
  return "Failed to defragment etcd member[" + endpoint + "] (" + cause + ")";
}

}  // namespace etcdagent::fleet
