#include "etcd/snapshot_stream.hpp"

#include <optional>

#include "etcd/etcdserverpb/rpc.grpc.pb.h"

namespace etcdagent::etcd {

Result<void> streamSnapshot(Client& client, grpc::ClientContext& ctx, const SnapshotSink& sink,
                            Duration timeout) {
  auto conn = client.connect();
  if (!conn) return fail(conn.error());
  if (auto r = client.authorize(ctx); !r) return r;
  etcdserverpb::Maintenance::Stub stub(conn->channel);
  auto reader = stub.Snapshot(&ctx, etcdserverpb::SnapshotRequest{});
  etcdserverpb::SnapshotResponse resp;
  std::optional<Error> sink_error;
  while (reader->Read(&resp)) {
    if (auto r = sink(resp.blob(), resp.remaining_bytes()); !r) {
      sink_error = r.error();
      ctx.TryCancel();
      break;
    }
  }
  const grpc::Status status = reader->Finish();
  if (sink_error) return fail(*sink_error);
  if (!status.ok())
    return fail(client.errorFor(status, conn->endpoint, timeout).context("snapshot save"));
  return {};
}

}  // namespace etcdagent::etcd
