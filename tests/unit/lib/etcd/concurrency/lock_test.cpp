// The safety check of a lock or a leadership: is the key, granted by etcd, still ours?

#include "etcd/concurrency/lock.hpp"

#include <gtest/gtest.h>

namespace etcdagent::etcd {
namespace {

constexpr std::int64_t kLease = 0x694d7aa1e9d5ab0b;

etcdserverpb::RangeResponse rangeWith(const std::string& key, std::int64_t lease) {
  etcdserverpb::RangeResponse r;
  r.mutable_header()->set_revision(42);
  auto* kv = r.add_kvs();
  kv->set_key(key);
  kv->set_lease(lease);
  kv->set_create_revision(40);
  r.set_count(1);
  return r;
}

etcdserverpb::LeaseTimeToLiveResponse ttlOf(std::int64_t ttl) {
  etcdserverpb::LeaseTimeToLiveResponse r;
  r.set_id(kLease);
  r.set_ttl(ttl);
  r.set_grantedttl(ttl > 0 ? 60 : 0);
  return r;
}

TEST(CheckKeyHeld, AcceptsOwnKeyOnALiveLease) {
  EXPECT_TRUE(checkKeyHeld("mylock/694d7aa1e9d5ab0b", kLease,
                           rangeWith("mylock/694d7aa1e9d5ab0b", kLease), ttlOf(59))
                  .has_value());
}

TEST(CheckKeyHeld, RejectsAKeyThatVanishedWithItsLease) {
  etcdserverpb::RangeResponse empty;
  empty.mutable_header()->set_revision(42);
  auto r = checkKeyHeld("mylock/694d7aa1e9d5ab0b", kLease, empty, ttlOf(-1));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("no longer exists"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("694d7aa1e9d5ab0b"), std::string::npos);
}

TEST(CheckKeyHeld, RejectsAKeyOnAnotherLease) {
  auto r = checkKeyHeld("mylock/694d7aa1e9d5ab0b", kLease,
                        rangeWith("mylock/694d7aa1e9d5ab0b", 0x1234), ttlOf(59));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("attached to lease 0000000000001234"), std::string::npos)
      << r.error().message;
}

TEST(CheckKeyHeld, RejectsAnExpiredSessionLease) {
  auto r = checkKeyHeld("mylock/694d7aa1e9d5ab0b", kLease,
                        rangeWith("mylock/694d7aa1e9d5ab0b", kLease), ttlOf(-1));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("expired"), std::string::npos) << r.error().message;
}

TEST(CheckKeyHeld, RejectsADifferentKey) {
  auto r =
      checkKeyHeld("mylock/694d7aa1e9d5ab0b", kLease, rangeWith("mylock/other", kLease), ttlOf(59));
  EXPECT_FALSE(r.has_value());
}

}  // namespace
}  // namespace etcdagent::etcd
