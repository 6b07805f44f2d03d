#pragma once

// Printers of the cluster commands (member ..., endpoint ..., move-leader), as etcdctl 3.4 prints
// them in each format it supports for them (the tables in cluster.cpp):
//   member list                                            simple, json, table, fields
//   member add/remove/update/promote, move-leader          simple, json
//   endpoint health/status/hashkv                          simple, json, table, fields

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/encoding.hpp"  // hexId: etcdctl's "%x" of an ID
#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/output/format.hpp"
#include "fleetctl/output/printer.hpp"

namespace etcdagent::fleet {

// fmt "%16x" of an ID: space-padded to 16 columns.
std::string paddedHexId(std::uint64_t id);

// One endpoint's answer to `endpoint health` (etcdctl's epHealth).
struct EndpointHealth {
  std::string endpoint;
  bool health = false;
  std::string took;   // Go time.Duration text; empty when no request was sent
  std::string error;  // empty when healthy
};

struct EndpointStatus {
  std::string endpoint;
  etcdserverpb::StatusResponse status;
};

struct EndpointHashKv {
  std::string endpoint;
  etcdserverpb::HashKVResponse hash;
};

extern const Printer<const etcdserverpb::MemberListResponse&> printMemberList;

// ETCD_INITIAL_CLUSTER for a member just added: every member's "name=peerURL" in the response's
// order, the new member (without a name yet) under `newName`.
std::string initialClusterAfterAdd(const etcdserverpb::MemberAddResponse& r,
                                   std::string_view newName);
// printMemberAdd(o, response, newName, peerUrls), simple: "Member <id> added to cluster <cid>"
// and the ETCD_* block to start the new member with; `peerUrls` is the --peer-urls text as given.
extern const Printer<const etcdserverpb::MemberAddResponse&, std::string_view, std::string_view>
    printMemberAdd;
// printMemberRemove/Update/Promote(o, id, response).
extern const Printer<std::uint64_t, const etcdserverpb::MemberRemoveResponse&> printMemberRemove;
extern const Printer<std::uint64_t, const etcdserverpb::MemberUpdateResponse&> printMemberUpdate;
extern const Printer<std::uint64_t, const etcdserverpb::MemberPromoteResponse&> printMemberPromote;

// simple: one line per endpoint, healthy or not, on stderr (as etcdctl 3.4 does).
extern const Printer<const std::vector<EndpointHealth>&> printEndpointHealth;
extern const Printer<const std::vector<EndpointStatus>&> printEndpointStatus;
extern const Printer<const std::vector<EndpointHashKv>&> printEndpointHashKv;

// printMoveLeader(o, leader, target, response).
extern const Printer<std::uint64_t, std::uint64_t, const etcdserverpb::MoveLeaderResponse&>
    printMoveLeader;

}  // namespace etcdagent::fleet
