#include "fleetctl/output/maintenance.hpp"

#include <cstdio>
#include <ostream>

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

namespace {

void alarmsSimple(const Output& o, const etcdserverpb::AlarmResponse& r) {
  for (const auto& a : r.alarms()) o.out << alarmMemberText(a) << "\n";
}

void alarmsFields(const Output& o, const etcdserverpb::AlarmResponse& r) {
  printHeaderFields(o.out, r.header());
  for (const auto& a : r.alarms()) {
    const std::string& name = etcdserverpb::AlarmType_Name(a.alarm());
    o.out << "\"MemberID\" : " << a.memberid() << "\n";
    o.out << "\"AlarmType\" : " << (name.empty() ? std::to_string(a.alarm()) : name) << "\n\n";
  }
}

// etcdctl prints the hash with %x in simple and table output.
std::string hashHex(const etcd::SnapshotStatus& s) {
  char hash[16];
  std::snprintf(hash, sizeof hash, "%x", s.hash);
  return hash;
}

void snapshotSimple(const Output& o, const etcd::SnapshotStatus& s) {
  o.out << hashHex(s) << ", " << s.revision << ", " << s.total_keys << ", "
        << humanizeBytes(static_cast<std::uint64_t>(s.total_size)) << "\n";
}

void snapshotJson(const Output& o, const etcd::SnapshotStatus& s) {
  o.out << JsonObject()
               .unum("hash", s.hash)
               .num("revision", s.revision)
               .num("totalKey", s.total_keys)
               .num("totalSize", s.total_size)
               .str()
        << "\n";
}

void snapshotTable(const Output& o, const etcd::SnapshotStatus& s) {
  Table t({"HASH", "REVISION", "TOTAL KEYS", "TOTAL SIZE"});
  t.addRow({hashHex(s), std::to_string(s.revision), std::to_string(s.total_keys),
            humanizeBytes(static_cast<std::uint64_t>(s.total_size))});
  o.out << t.render();
}

void snapshotFields(const Output& o, const etcd::SnapshotStatus& s) {
  o.out << "\"Hash\" : " << s.hash << "\n";
  o.out << "\"Revision\" : " << s.revision << "\n";
  o.out << "\"Keys\" : " << s.total_keys << "\n";
  o.out << "\"Size\" : " << s.total_size << "\n";
}

}  // namespace

constinit const Printer<const etcdserverpb::AlarmResponse&> printAlarms{{
    .simple = alarmsSimple,
    .json = printJson<etcdserverpb::AlarmResponse>,
    .fields = alarmsFields,
}};

constinit const Printer<const etcd::SnapshotStatus&> printSnapshotStatus{{
    .simple = snapshotSimple,
    .json = snapshotJson,
    .table = snapshotTable,
    .fields = snapshotFields,
}};

std::string defragDoneLine(const std::string& endpoint) {
  return "Finished defragmenting etcd member[" + endpoint + "]";
}

std::string defragFailedLine(const std::string& endpoint, const std::string& cause) {
  return "Failed to defragment etcd member[" + endpoint + "] (" + cause + ")";
}

}  // namespace etcdagent::fleet
