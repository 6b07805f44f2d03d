#pragma once

// The lease commands' argument parsing and printers, as etcdctl 3.4 has them
// (etcdctl/ctlv3/command/lease_command.go and printer_{simple,json,fields}.go).
//
// IDs are int64 in etcd. Simple output prints them with Go's "%016x" (a negative ID keeps its
// sign: "-000000000000001"), fields and json print them in decimal. etcdctl's json of lease
// responses is encoding/json of clientv3's own structs, which embed *pb.ResponseHeader: the header
// fields sit at the top level, then "ID"/"TTL" (grant, keep-alive; grant adds "Error":"") or
// "id"/"ttl"/"granted-ttl"/"keys" (timetolive) or "leases":[{"id":N}] (list). Revoke prints the
// protobuf response itself ({"header":{...}}).

#include <cstdint>
#include <string>
#include <string_view>

#include "common/encoding.hpp"  // leaseIdHex: etcdctl's "%016x" of a lease ID
#include "common/error.hpp"
#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/output/format.hpp"
#include "fleetctl/output/printer.hpp"

namespace etcdagent::fleet {

// Go's strconv.ParseInt(text, base, 64), with its error text:
// `strconv.ParseInt: parsing "zz": invalid syntax` / `...: value out of range`.
Result<std::int64_t> parseGoInt64(std::string_view text, int base);

// A lease ID argument (hexadecimal). The error is etcdctl's:
// `bad lease ID arg (strconv.ParseInt: parsing "zz": invalid syntax), expecting ID in Hex`.
Result<std::int64_t> parseLeaseIdArg(std::string_view text);

// `lease grant`'s TTL argument (decimal). Error: `bad TTL (strconv.ParseInt: ...)`.
Result<std::int64_t> parseLeaseTtlArg(std::string_view text);

// Go's fmt "%v" of a []string: "[a b c]".
std::string goStringList(const google::protobuf::RepeatedPtrField<std::string>& items);

// The printers: simple, json and fields (etcdctl has no table for leases).
extern const Printer<const etcdserverpb::LeaseGrantResponse&> printLeaseGrant;
// printLeaseRevoke(o, id, response): the response does not name the lease.
extern const Printer<std::int64_t, const etcdserverpb::LeaseRevokeResponse&> printLeaseRevoke;
extern const Printer<const etcdserverpb::LeaseKeepAliveResponse&> printLeaseKeepAlive;
// printLeaseTimeToLive(o, response, keys): `keys` is --keys.
extern const Printer<const etcdserverpb::LeaseTimeToLiveResponse&, bool> printLeaseTimeToLive;
extern const Printer<const etcdserverpb::LeaseLeasesResponse&> printLeaseList;

// What `lease keep-alive` prints when the lease is gone: "lease <id> expired or revoked." in
// simple output, nothing in json and fields (etcdctl prints it only with its simple printer).
extern const Printer<std::int64_t> printLeaseExpired;

}  // namespace etcdagent::fleet
