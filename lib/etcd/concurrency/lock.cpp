#include "etcd/concurrency/lock.hpp"

#include "common/encoding.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd/v3lockpb/v3lock.grpc.pb.h"

namespace etcdagent::etcd {

Acquired<HeldLock> acquireLock(Client& client, const Session& session, const std::string& name,
                               Waker& waker) {
  v3lockpb::LockRequest req;
  req.set_name(name);
  req.set_lease(session.lease());
  auto locked = callUntilWoken<&v3lockpb::Lock::Stub::Lock>(client, req, waker);
  if (!locked) return std::unexpected(AcquireError{AcquireError::Stage::kWaiting, locked.error()});
  HeldLock held;
  held.key = locked->key();
  // etcdctl's ETCD_LOCK_REV: the Lock response's header revision (the key's create revision when
  // nobody else held the lock).
  held.revision = locked->header().revision();
  auto range = confirmHeld(client, held.key, session.lease());
  if (!range) {
    (void)unlock(client, held.key);
    return std::unexpected(AcquireError{AcquireError::Stage::kConfirming, range.error()});
  }
  held.range = std::move(*range);
  return held;
}

Result<void> unlock(Client& client, const std::string& key) {
  v3lockpb::UnlockRequest req;
  req.set_key(key);
  auto resp = client.call<&v3lockpb::Lock::Stub::Unlock>(req);
  if (!resp) return fail(resp.error().context("unlock " + key));
  return {};
}

Result<etcdserverpb::RangeResponse> confirmHeld(Client& client, const std::string& key,
                                                std::int64_t lease) {
  etcdserverpb::RangeRequest get;
  get.set_key(key);
  auto range = client.call<&etcdserverpb::KV::Stub::Range>(get, {Retry::kRepeatable});
  if (!range) return fail(range.error());
  etcdserverpb::LeaseTimeToLiveRequest ttlReq;
  ttlReq.set_id(lease);
  auto ttl = client.call<&etcdserverpb::Lease::Stub::LeaseTimeToLive>(ttlReq, {Retry::kRepeatable});
  if (!ttl) return fail(ttl.error());
  if (auto held = checkKeyHeld(key, lease, *range, *ttl); !held) return fail(held.error());
  return *range;
}

Result<void> checkKeyHeld(const std::string& key, std::int64_t lease,
                          const etcdserverpb::RangeResponse& range,
                          const etcdserverpb::LeaseTimeToLiveResponse& ttl) {
  const std::string session = leaseIdHex(lease);
  const etcdserverpb::ResponseHeader& h = range.header();
  if (range.kvs().empty() || range.kvs(0).key() != key) {
    return fail(Errc::kFailedPrecondition,
                "key " + goQuote(key) + " no longer exists at revision " +
                    std::to_string(h.revision()) + ": the session lease " + session +
                    " was revoked or expired while waiting");
  }
  const auto& kv = range.kvs(0);
  if (kv.lease() != lease) {
    return fail(Errc::kFailedPrecondition, "key " + goQuote(key) + " is attached to lease " +
                                               leaseIdHex(kv.lease()) +
                                               ", not to this session's lease " + session);
  }
  if (ttl.ttl() <= 0) {
    return fail(Errc::kFailedPrecondition,
                "the session lease " + session + " has expired or was revoked");
  }
  return {};
}

}  // namespace etcdagent::etcd
