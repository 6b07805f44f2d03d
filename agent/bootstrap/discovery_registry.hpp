#pragma once

// The coordinator's core: the etcd v2 discovery protocol (the one discovery.etcd.io serves) as a
// pure class. No sockets, no files, no clock: requests come in as method/path/query/body, answers
// go out through a callback, and every change of a token goes through an injected `persist`
// function before it is acknowledged.
//
// What etcd 3.4's `--discovery URL` client sends (the whole URL path is the token):
//   GET  /<tok>/_config/size            -> the cluster size (a decimal string)
//   GET  /<tok>                         -> the registrants, X-Etcd-Index = the token's index
//   PUT  /<tok>/<id>?prevExist=false    -> register, form body value=name=peerURL (412/105 if
//   taken) GET  /<tok>/<id>?wait=true&waitIndex=<createdIndex>       (replayed from the history)
//   GET  /<tok>?wait=true&waitIndex=<index+1>&recursive=true  (long poll until `size` registered)
// Each token has its own index: creating it writes _config/size at index 1, every registration
// takes the next one. Registrations are write-once, so the history of a token is its size key plus
// its nodes, and any waitIndex can be replayed from it.
//
// Tokens are bounded in number and in time (DiscoveryLimits): a token whose cluster did not
// complete (fewer than `size` registrations) within `incomplete_ttl` of its creation is dropped,
// a completed one after `complete_ttl`; at most `max_live_tokens` are held at once, and one more
// is refused with RESOURCE_EXHAUSTED. Time comes from an injected wall clock, and a persisted
// token's age from its created_at, so tokens expire across restarts too. A dropped token is
// reserved: it is never handed out again, and its URL answers 404.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/duration.hpp"  // parseRfc3339, formatRfc3339: the tokens' created_at
#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

inline constexpr unsigned kMaxDiscoverySize = 99;

struct DiscoveryLimits {
  std::chrono::seconds incomplete_ttl = std::chrono::hours(1);
  std::chrono::seconds complete_ttl = std::chrono::hours(24 * 7);
  std::size_t max_live_tokens = 64;
};

struct DiscoveryRequest {
  std::string method;                        // GET, PUT, ...
  std::string path;                          // decoded path: "/<token>/<key>"
  std::map<std::string, std::string> query;  // decoded query parameters
  std::string body;                          // form-encoded ("value=m1%3Dhttp...")
};

struct DiscoveryResponse {
  int status = 200;
  std::string body;              // etcd's JSON; empty for a wait that ended without an event
  std::uint64_t etcd_index = 0;  // the X-Etcd-Index header
};

// 32 lowercase hex digits from the kernel's random source (128 bits).
std::string randomDiscoveryToken();

class DiscoveryRegistry {
 public:
  using Persist = std::function<Result<void>(const v1::DiscoveryTokenState&)>;
  using RandomToken = std::function<std::string()>;
  using Reply = std::function<void(DiscoveryResponse)>;
  using WaitId = std::uint64_t;
  using WallClock = std::function<std::chrono::system_clock::time_point()>;

  explicit DiscoveryRegistry(Persist persist = {}, RandomToken random = randomDiscoveryToken,
                             DiscoveryLimits limits = {},
                             WallClock now = std::chrono::system_clock::now);

  // Adds a token loaded from disk (at start). Refuses a malformed state or a duplicate token. A
  // token that expired meanwhile (by its created_at; one without a readable created_at counts as
  // expired) is only reserved, not served.
  Result<void> restore(v1::DiscoveryTokenState state);
  // Remembers a token that exists on disk but could not be read, so it is never handed out again.
  void reserve(const std::string& token) { reserved_.insert(token); }

  // Creates a token for a cluster of `size` members (1..kMaxDiscoverySize), persisted before it
  // is returned. `created_at` is recorded as given (RFC 3339; empty: the clock's now); its TTL
  // runs from the clock's now. RESOURCE_EXHAUSTED while max_live_tokens are held.
  Result<v1::DiscoveryTokenState> createToken(unsigned size, const std::string& created_at);

  // Drops the tokens whose TTL passed (createToken and handle do it first).
  void expireTokens();

  // Answers one request: `reply` runs before handle() returns, except for a wait that has no
  // matching event yet; that one is parked and handle() returns its id. The reply then runs when
  // a registration matches, or with an empty 200 (etcd's client simply asks again) on expire().
  std::optional<WaitId> handle(const DiscoveryRequest& request, Reply reply);
  void expire(WaitId id);

  [[nodiscard]] const v1::DiscoveryTokenState* find(const std::string& token) const;
  [[nodiscard]] bool isReserved(const std::string& token) const {
    return reserved_.contains(token);
  }
  [[nodiscard]] std::size_t tokenCount() const { return tokens_.size(); }
  [[nodiscard]] std::size_t parkedWaits() const { return waits_.size(); }

 private:
  struct Event {
    std::string action;  // "create"
    std::string key;     // "/<token>/<id>"
    std::string value;
    std::uint64_t index = 0;
  };
  struct Wait {
    std::string token;
    std::string key;  // the watched key, "/<token>" or "/<token>/<id>"
    bool recursive = false;
    std::uint64_t min_index = 0;  // the first index that answers it
    Reply reply;
  };

  DiscoveryResponse get(const v1::DiscoveryTokenState& t, const std::string& key,
                        bool recursive) const;
  DiscoveryResponse put(v1::DiscoveryTokenState& t, const std::string& key,
                        const DiscoveryRequest& request);
  std::optional<WaitId> wait(const v1::DiscoveryTokenState& t, const std::string& key,
                             const DiscoveryRequest& request, Reply& reply);
  [[nodiscard]] std::vector<Event> history(const v1::DiscoveryTokenState& t) const;

  [[nodiscard]] std::chrono::system_clock::time_point expiresAt(
      const v1::DiscoveryTokenState& t) const;
  [[nodiscard]] std::string exhausted() const;

  Persist persist_;
  RandomToken random_;
  DiscoveryLimits limits_;
  WallClock now_;
  std::map<std::string, v1::DiscoveryTokenState> tokens_;
  std::map<std::string, std::chrono::system_clock::time_point> born_;  // of each token held
  std::set<std::string> reserved_;  // tokens on disk that could not be loaded
  std::map<WaitId, Wait> waits_;
  WaitId next_wait_ = 1;
};

// etcd v2's error body: {"errorCode":100,"message":"Key not found","cause":"/tok/x","index":3}.
DiscoveryResponse discoveryError(int status, int code, const std::string& message,
                                 const std::string& cause, std::uint64_t index);

}  // namespace etcdagent::agent
