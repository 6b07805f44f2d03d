#pragma once

// Elections over etcd's v3election service, as etcdctl's `elect` runs them: campaign (with the
// same check after the win as a lock, etcd/concurrency/lock.hpp), resign, and observe. Snapshot
// scheduling in the agent elects its snapshot taker with these.

#include <grpcpp/client_context.h>
#include <grpcpp/support/sync_stream.h>

#include <memory>
#include <optional>
#include <string>

#include "common/error.hpp"
#include "etcd/client.hpp"
#include "etcd/concurrency/lock.hpp"
#include "etcd/concurrency/session.hpp"
#include "etcd/concurrency/waker.hpp"
#include "etcd/etcdserverpb/rpc.pb.h"
#include "etcd/v3electionpb/v3election.grpc.pb.h"

namespace etcdagent::etcd {

struct Leadership {
  v3electionpb::LeaderKey leader;     // name, key, revision, lease: what resign() takes
  etcdserverpb::RangeResponse range;  // the leader key read back after the win (etcdctl prints it)
};

// Campaigns for `name` with `value`, waiting without deadline (`waker` cancels) until this
// session leads, then confirms the leader key (confirmHeld); on a failed check it resigns before
// the error returns.
Acquired<Leadership> campaign(Client& client, const Session& session, const std::string& name,
                              const std::string& value, Waker& waker);

// Gives the leadership up (v3election's Resign).
Result<void> resign(Client& client, const v3electionpb::LeaderKey& leader);

// The leaders of an election as etcd reports them (v3election's Observe stream), each as the
// RangeResponse clientv3's Election.Observe yields, until the stream ends or `waker` fires.
class ElectionObserver {
 public:
  static Result<std::unique_ptr<ElectionObserver>> start(Client& client, const std::string& name,
                                                         Waker& waker);
  ~ElectionObserver();  // cancels and ends the stream unless finish() was called
  ElectionObserver(const ElectionObserver&) = delete;
  ElectionObserver& operator=(const ElectionObserver&) = delete;

  // Blocks until etcd reports the next leader; nullopt once the stream has ended.
  std::optional<etcdserverpb::RangeResponse> next();
  // Why the stream ended: {} when etcd ended it without an error, the error otherwise (a
  // cancellation by the waker included).
  Result<void> finish();

 private:
  ElectionObserver(Client& client, Client::Connection conn, Waker& waker);

  Client& client_;
  Client::Connection conn_;
  grpc::ClientContext context_;
  Waker::Registration registration_;  // after context_: it refers to it
  v3electionpb::Election::Stub stub_;
  std::unique_ptr<grpc::ClientReader<v3electionpb::LeaderResponse>> stream_;
  bool finished_ = false;
};

}  // namespace etcdagent::etcd
