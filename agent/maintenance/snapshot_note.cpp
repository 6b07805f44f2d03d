#include "agent/maintenance/snapshot_note.hpp"

namespace etcdagent::agent {

std::string ageText(std::chrono::seconds age) {
  const auto s = std::max<std::int64_t>(0, age.count());
  if (s < 120) return std::to_string(s) + " s";
  if (s < 2 * 3600) return std::to_string(s / 60) + " min";
  if (s < 2 * 86400) return std::to_string(s / 3600) + " h";
  return std::to_string(s / 86400) + " days";
}

std::string snapshotNote(const v1::SnapshotReport& report,
                         std::chrono::system_clock::time_point now) {
  if (report.schedule().empty() || report.schedule() == "off") return "";
  auto age = [now](std::int64_t at) {
    return ageText(std::chrono::duration_cast<std::chrono::seconds>(
        now - std::chrono::system_clock::time_point(std::chrono::seconds(at))));
  };
  std::string note;
  const bool cluster = report.scope() == "cluster";
  if (cluster && !report.taker()) {
    // Another agent takes the cluster's snapshots: its record in etcd says how old the newest is.
    const std::string by =
        report.taker_member().empty() ? "" : " (" + report.taker_member() + "'s agent takes them)";
    note = report.has_cluster_last() ? "cluster snapshot " + age(report.cluster_last().taken_at()) +
                                           " ago by " + report.cluster_last().member() + by
                                     : "no cluster snapshot yet" + by;
  } else if (!report.last_error().empty()) {
    note = "snapshot failed: " + report.last_error();
  } else if (!report.has_last_good()) {
    note = "no snapshot yet";
  } else {
    note = "last snapshot " + age(report.last_good().taken_at()) + " ago";
  }
  if (cluster && report.taker()) note += " (this agent takes the cluster's)";
  if (report.has_copies() && !report.copies().last_error().empty()) {
    note += " · copies to other agents failing: " + report.copies().last_error();
  }
  if (report.has_upload() && !report.upload().last_error().empty()) {
    note += " · upload failing: " + report.upload().last_error();
  }
  if (report.has_last_drill() && !report.last_drill().ok()) {
    note += " · restore drill failed: " + report.last_drill().error();
  } else if (report.has_last_good_drill()) {
    note +=
        " · restore-tested snapshot " + age(report.last_good_drill().snapshot_taken_at()) + " old";
  }
  return note;
}

}  // namespace etcdagent::agent
