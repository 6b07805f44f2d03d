#pragma once

// Printers of the cluster commands (member ..., endpoint ..., move-leader), as etcdctl 3.4 prints
// them in each format it supports for them:
//   member list          simple, json, table, fields
//   member add/remove/update/promote, move-leader          simple, json
//   endpoint health/status/hashkv                          simple, json, table, fields

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/encoding.hpp"  // hexId: etcdctl's "%x" of an ID
#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/output/format.hpp"

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

void printMemberList(const Output& o, const etcdserverpb::MemberListResponse& r);

// ETCD_INITIAL_CLUSTER for a member just added: every member's "name=peerURL" in the response's
// order, the new member (without a name yet) under `newName`.
std::string initialClusterAfterAdd(const etcdserverpb::MemberAddResponse& r,
                                   std::string_view newName);
// simple: "Member <id> added to cluster <cid>" and the ETCD_* block to start the new member with;
// `peerUrls` is the --peer-urls text as given.
void printMemberAdd(const Output& o, const etcdserverpb::MemberAddResponse& r,
                    std::string_view newName, std::string_view peerUrls);
void printMemberRemove(const Output& o, std::uint64_t id,
                       const etcdserverpb::MemberRemoveResponse& r);
void printMemberUpdate(const Output& o, std::uint64_t id,
                       const etcdserverpb::MemberUpdateResponse& r);
void printMemberPromote(const Output& o, std::uint64_t id,
                        const etcdserverpb::MemberPromoteResponse& r);

// simple: one line per endpoint, healthy or not, on stderr (as etcdctl 3.4 does).
void printEndpointHealth(const Output& o, const std::vector<EndpointHealth>& list);
void printEndpointStatus(const Output& o, const std::vector<EndpointStatus>& list);
void printEndpointHashKv(const Output& o, const std::vector<EndpointHashKv>& list);

void printMoveLeader(const Output& o, std::uint64_t leader, std::uint64_t target,
                     const etcdserverpb::MoveLeaderResponse& r);

}  // namespace etcdagent::fleet
