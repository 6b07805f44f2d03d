#pragma once

// Printing for the maintenance commands: alarm list/disarm, snapshot status, defrag lines.

#include <string>

#include "etcd/etcdserverpb/rpc.pb.h"
#include "etcd/snapshot/status.hpp"
#include "fleetctl/output/format.hpp"
#include "fleetctl/output/printer.hpp"

namespace etcdagent::fleet {

// Go's %+v of a *pb.AlarmMember (gogoproto's compact text): "memberID:123 alarm:NOSPACE " —
// the trailing space is etcdctl's too. Zero fields are left out.
std::string alarmMemberText(const etcdserverpb::AlarmMember& a);

// alarm list / alarm disarm in simple, json and fields. etcd 3.4 sends no header with
// AlarmResponse; fields then prints a zero header (etcdctl 3.4 crashes there instead).
extern const Printer<const etcdserverpb::AlarmResponse&> printAlarms;

// snapshot status: "hash, revision, total keys, total size", and the json, table and fields forms.
extern const Printer<const etcd::SnapshotStatus&> printSnapshotStatus;

// defrag's per-endpoint lines (stdout / stderr).
std::string defragDoneLine(const std::string& endpoint);
std::string defragFailedLine(const std::string& endpoint, const std::string& cause);

}  // namespace etcdagent::fleet
