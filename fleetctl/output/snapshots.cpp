#include "fleetctl/output/snapshots.hpp"

#include <google/protobuf/util/json_util.h>

#include "common/duration.hpp"
#include "common/encoding.hpp"
#include "fleetctl/output/json.hpp"
#include "fleetctl/output/table.hpp"

namespace etcdagent::fleet {
namespace {

using Clock = std::chrono::system_clock;

std::string age(const v1::SnapshotRecord& r, Clock::time_point now) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(
                     now - Clock::time_point(std::chrono::seconds(r.taken_at())))
                     .count();
  if (r.taken_at() == 0) return "-";
  if (s < 120) return std::to_string(std::max<std::int64_t>(s, 0)) + "s";
  if (s < 2 * 3600) return std::to_string(s / 60) + "m";
  if (s < 2 * 86400) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

std::string taken(const v1::SnapshotRecord& r) {
  return r.taken_at() == 0 ? "-"
                           : formatRfc3339(Clock::time_point(std::chrono::seconds(r.taken_at())));
}

// One line, the proto's field names, every field.
std::string compactJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  return out;
}

void listTable(const Output& o, const std::vector<HostSnapshots>& hosts, Clock::time_point now) {
  o.out << renderSnapshotTable(hosts, now);
}

void listJson(const Output& o, const std::vector<HostSnapshots>& hosts, Clock::time_point) {
  o.out << renderSnapshotJson(hosts);
}

}  // namespace

std::string renderSnapshotTable(const std::vector<HostSnapshots>& hosts, Clock::time_point now) {
  Table t({"HOST", "MEMBER", "NAME", "TAKEN", "AGE", "SIZE", "REVISION", "KEYS", "STATUS"});
  for (const auto& h : hosts) {
    if (!h.listing) {
      t.addRow({h.host, h.member, "-", "-", "-", "-", "-", "-",
                "unreachable: " + h.listing.error().message});
      continue;
    }
    if (h.listing->good_size() == 0 && h.listing->bad_size() == 0 &&
        h.listing->copies_size() == 0) {
      t.addRow({h.host, h.member, "-", "-", "-", "-", "-", "-", "no snapshot yet"});
    }
    for (const auto& r : h.listing->good()) {
      t.addRow({h.host, h.member, r.name(), taken(r), age(r, now), humanizeBytes(r.size()),
                std::to_string(r.revision()), std::to_string(r.total_keys()),
                r.uploaded_at() != 0 ? "verified, uploaded" : "verified"});
    }
    for (const auto& r : h.listing->bad()) {
      t.addRow({h.host, h.member, r.name(), taken(r), age(r, now), humanizeBytes(r.size()), "-",
                "-", "BAD: " + r.error()});
    }
    for (const auto& r : h.listing->copies()) {
      t.addRow({h.host, r.member_name(), r.name(), taken(r), age(r, now), humanizeBytes(r.size()),
                std::to_string(r.revision()), std::to_string(r.total_keys()),
                "copy, verified (kept by " + h.member + ")"});
    }
  }
  return t.render();
}

std::string renderSnapshotJson(const std::vector<HostSnapshots>& hosts) {
  std::string agents;
  for (const auto& h : hosts) {
    JsonObject o;
    o.str("host", h.host).str("member", h.member).str("agent", h.agent);
    if (!h.listing) {
      o.str("error", h.listing.error().message);
    } else {
      o.str("dir", h.listing->dir());
      std::string good;
      for (const auto& r : h.listing->good()) good += (good.empty() ? "" : ",") + compactJson(r);
      std::string bad;
      for (const auto& r : h.listing->bad()) bad += (bad.empty() ? "" : ",") + compactJson(r);
      std::string copies;
      for (const auto& r : h.listing->copies()) {
        copies += (copies.empty() ? "" : ",") + compactJson(r);
      }
      o.raw("snapshots", "[" + good + "]").raw("bad", "[" + bad + "]");
      o.raw("copies", "[" + copies + "]");
    }
    agents += (agents.empty() ? "" : ",") + o.str();
  }
  return "{\"agents\":[" + agents + "]}\n";
}

constinit const Printer<const std::vector<HostSnapshots>&, Clock::time_point> printSnapshotList{{
    .simple = listTable,
    .json = listJson,
    .table = listTable,
}};

}  // namespace etcdagent::fleet
