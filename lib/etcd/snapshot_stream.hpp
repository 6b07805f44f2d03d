#pragma once

// One member's snapshot over etcd's Maintenance.Snapshot: its bbolt file followed by the sha256
// trailer, chunk by chunk. Shared by `etcd-fleet snapshot save` and the agent's scheduled
// snapshots; what they do with the bytes (the file, its checks, progress) stays with them.

#include <grpcpp/client_context.h>

#include <cstdint>
#include <functional>
#include <string_view>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "etcd/client.hpp"

namespace etcdagent::etcd {

// Takes each chunk and the bytes etcd says remain after it; an error stops the stream.
using SnapshotSink = std::function<Result<void>(std::string_view chunk, std::uint64_t remaining)>;

// Streams the snapshot of the member `client` reaches (give it one endpoint) into `sink`. `ctx`
// is the caller's: its deadline, and TryCancel() from a signal handler. A sink error cancels the
// stream and comes back as it was; a failed stream comes back as the client words it for `timeout`
// (the deadline the caller set, for the message), with the context "snapshot save".
Result<void> streamSnapshot(Client& client, grpc::ClientContext& ctx, const SnapshotSink& sink,
                            Duration timeout = {});

}  // namespace etcdagent::etcd
