#pragma once

// The fleet's enrollment tokens: <inventory dir>/pki/tokens.json (docs/security.md). Per token it
// keeps the id, sha256(secret) (never the secret), created, expires, description, whether and
// when it was revoked, and the hosts it enrolled. A token is multi-use until it expires (one token
// for a whole bootstrap, as kubeadm's).
//
// Time is passed in (`now`), so tests move it instead of sleeping. Every change is a
// read-modify-write under an exclusive flock(2) of the pki directory (two `token create` at once
// both land), written atomically with mode 0600 (common/durable_file), and drops the tokens that
// expired (pruned on write). The pki directory is created 0700; a pki directory or tokens.json
// that others may read or write is refused rather than used.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/enroll_token.hpp"

namespace etcdagent::fleet {

using WallTime = std::chrono::system_clock::time_point;

inline constexpr std::chrono::seconds kDefaultTokenTtl = std::chrono::hours(24);
inline constexpr std::chrono::seconds kMaxTokenTtl = std::chrono::hours(24 * 7);
// Far above a bootstrap's needs; keeps the file small and `token list` readable.
inline constexpr std::size_t kMaxLiveTokens = 256;
inline constexpr std::size_t kMaxTokenDescription = 200;
// tokens.json holds at most kMaxLiveTokens small records: a bigger file is not ours.
inline constexpr std::size_t kMaxTokenFileSize = 4 * 1024 * 1024;

enum class TokenState { kActive, kExpired, kRevoked };
// "active", "expired", "revoked".
std::string_view tokenStateName(TokenState state);

struct EnrolledHost {
  std::string host;  // as the fleet dialled it
  WallTime at;
};

struct TokenRecord {
  std::string id;
  std::string secret_sha256;  // lower-case hex of enrollSecretHash(secret)
  WallTime created;
  WallTime expires;
  std::string description;
  bool revoked = false;
  WallTime revoked_at;
  std::vector<EnrolledHost> hosts;

  // Revoked wins over expired: the operator's act is what `token list` shows.
  [[nodiscard]] TokenState state(WallTime now) const;
};

// tokens.json's text and back. Parsing validates every record (id, hash, times, duplicates) and
// names the file and the token in errors, with what to do.
Result<std::vector<TokenRecord>> parseTokenFile(std::string_view text, std::string_view source);
std::string renderTokenFile(const std::vector<TokenRecord>& tokens);

// A --ttl: positive and at most kMaxTokenTtl (longer is refused, naming the limit); whole seconds.
Result<std::chrono::seconds> checkTokenTtl(Duration ttl);
// A --description: at most kMaxTokenDescription printable ASCII characters.
Result<void> checkTokenDescription(std::string_view description);

// <dir of inventory_path>/pki and <dir of inventory_path>/pki/tokens.json.
std::string pkiDirectoryFor(std::string_view inventory_path);
std::string tokenStorePathFor(std::string_view inventory_path);

// A token just created: the whole token (printed once, then only its hash exists) and its record.
struct CreatedToken {
  EnrollToken token;
  TokenRecord record;
};

class TokenStore {
 public:
  // `path` is tokens.json; its directory is the pki directory.
  explicit TokenStore(std::string path);

  [[nodiscard]] const std::string& path() const { return path_; }

  // Every token in the file, expired ones too (until the next write prunes them); none when the
  // file does not exist.
  [[nodiscard]] Result<std::vector<TokenRecord>> list() const;

  // A new token pinning `ca_hash` (64 hex, or "sha256:" and 64 hex), valid for `ttl` from `now`.
  Result<CreatedToken> create(std::string_view ca_hash, Duration ttl, std::string description,
                              WallTime now);

  // Marks token `id` revoked: it enrolls nothing from now on (certificates it already got stay
  // valid: that is a matter of the CA). Revoking a revoked or expired token changes nothing and
  // succeeds; an unknown id is kNotFound. Returns the record as stored.
  Result<TokenRecord> revoke(std::string_view id, WallTime now);

  // The record an enrollment with token `id` is checked against: kNotFound when unknown (never
  // created here, or pruned after it expired), kFailedPrecondition when expired,
  // kPermissionDenied when revoked; each message says which and what to do.
  [[nodiscard]] Result<TokenRecord> lookupForEnrollment(std::string_view id, WallTime now) const;

  // Records that token `id` enrolled `host` at `now` (again: the time is updated). kNotFound
  // when the token is gone.
  Result<void> recordEnrollment(std::string_view id, std::string_view host, WallTime now);

 private:
  [[nodiscard]] Result<std::vector<TokenRecord>> load() const;
  // Drops expired tokens and writes the rest atomically (0600).
  Result<void> save(std::vector<TokenRecord> tokens, WallTime now) const;

  std::string path_;
  std::string dir_;
};

}  // namespace etcdagent::fleet
