#pragma once

// The printers of `watch`. etcdctl prints each clientv3.WatchResponse it receives:
//   simple: per event its type (PUT/DELETE), the previous key-value (with --prev-kv), the
//           key-value, each as "key\nvalue\n";
//   json:   its own Go struct clientv3.WatchResponse, not the protobuf message:
//           {"Header":{...},"Events":[...],"CompactRevision":0,"Canceled":false,"Created":false}
//   fields: the header, then per event "Type", the Prev* fields and the key-value fields.

#include <string>
#include <vector>

#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/output/format.hpp"
#include "fleetctl/output/printer.hpp"

namespace etcdagent::fleet {

// clientv3.WatchResponse encoded by Go's encoding/json.
std::string watchResponseJson(const etcdserverpb::WatchResponse& r);

// display.Watch(resp): simple, json and fields (etcdctl has no table for it).
extern const Printer<const etcdserverpb::WatchResponse&> printWatchResponse;

// clientv3's WatchResponse.IsProgressNotify(): an empty notification carrying only a revision.
bool isProgressNotify(const etcdserverpb::WatchResponse& r);

// clientv3's WatchResponse.Err() text for a cancelled watch, e.g.
// "etcdserver: mvcc: required revision has been compacted".
std::string watchCancelReason(const etcdserverpb::WatchResponse& r);

// The variables etcdctl adds to the environment of `watch ... -- <command>` for one event:
// ETCD_WATCH_REVISION=<rev>, ETCD_WATCH_EVENT_TYPE="PUT", ETCD_WATCH_KEY="<key>",
// ETCD_WATCH_VALUE="<value>" (Go-quoted, quotes included).
std::vector<std::string> watchExecEnvironment(const etcdserverpb::WatchResponse& r,
                                              const mvccpb::Event& event);

}  // namespace etcdagent::fleet
