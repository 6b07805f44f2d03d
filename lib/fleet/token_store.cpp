#include "fleet/token_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <set>
#include <utility>

#include "common/encoding.hpp"
#include "common/file_util.hpp"
#include "common/proto_json.hpp"
#include "etcdagent/v1/enroll_tokens.pb.h"

namespace etcdagent::fleet {
namespace {

constexpr unsigned kTokenFileVersion = 1;

// What the pki directory holds, for the refusal of one that others may access.
constexpr std::string_view kPkiHolds = "the fleet's keys and tokens";

// What to do with a tokens.json that cannot be used.
std::string tokenFileDamagedHint(std::string_view source) {
  return "; restore " + std::string(source) +
         " from a backup, or move it aside (every token in it then stops working: create new "
         "ones with etcd-fleet token create)";
}

bool validId(std::string_view id) {
  return id.size() == kEnrollTokenIdLength && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
         });
}

bool validHexHash(std::string_view hex) {
  return hex.size() == 64 && std::all_of(hex.begin(), hex.end(), [](char c) {
           return (c >= 'a' && c <= 'f') || (c >= '0' && c <= '9');
         });
}

// An exclusive lock of the pki directory for one read-modify-write of tokens.json, released when
// the descriptor closes. The directory rather than the file: the file is replaced by rename on
// every write, and a lock on the replaced inode would exclude nobody.
Result<UniqueFd> lockDirectory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return fail(Errc::kIo, "cannot open " + dir + ": " + errnoText(errno));
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return fail(Errc::kIo, "cannot lock " + dir + ": " + errnoText(errno));
  }
  return fd;
}

std::string shortTime(WallTime t) {
  return formatRfc3339(t);
}

}  // namespace

std::string_view tokenStateName(TokenState state) {
  switch (state) {
    case TokenState::kActive: return "active";
    case TokenState::kExpired: return "expired";
    case TokenState::kRevoked: return "revoked";
  }
  return "unknown";
}

TokenState TokenRecord::state(WallTime now) const {
  if (revoked) return TokenState::kRevoked;
  if (now >= expires) return TokenState::kExpired;
  return TokenState::kActive;
}

Result<std::vector<TokenRecord>> parseTokenFile(std::string_view text, std::string_view source) {
  v1::EnrollTokenFile file;
  if (auto parsed = parseStateJson(text, file); !parsed) {
    return fail(Errc::kInvalidArgument, std::string(source) + ": not a valid tokens file (" +
                                            parsed.error().message + ")" +
                                            tokenFileDamagedHint(source));
  }
  if (file.version() != kTokenFileVersion) {
    if (file.version() > kTokenFileVersion) {
      return fail(Errc::kFailedPrecondition,
                  std::string(source) + ": written by a newer etcd-fleet (version " +
                      std::to_string(file.version()) + "); upgrade etcd-fleet");
    }
    return fail(Errc::kInvalidArgument,
                std::string(source) + ": has no \"version\": 1" + tokenFileDamagedHint(source));
  }
  std::vector<TokenRecord> out;
  std::set<std::string, std::less<>> ids;
  for (int i = 0; i < file.tokens_size(); ++i) {
    const auto& t = file.tokens(i);
    const std::string where = std::string(source) + ": token " + std::to_string(i + 1) +
                              (validId(t.id()) ? " (" + t.id() + ")" : "");
    auto bad = [&](const std::string& what) {
      return fail(Errc::kInvalidArgument, where + ": " + what + tokenFileDamagedHint(source));
    };
    if (!validId(t.id())) return bad("\"id\" is not 6 of [a-z0-9]");
    if (!ids.insert(t.id()).second) return bad("the id appears twice");
    if (!validHexHash(t.secret_sha256())) {
      return bad("\"secret_sha256\" is not 64 lower-case hex digits");
    }
    TokenRecord r;
    r.id = t.id();
    r.secret_sha256 = t.secret_sha256();
    auto created = parseRfc3339(t.created());
    auto expires = parseRfc3339(t.expires());
    if (!created) return bad("\"created\" is not an RFC 3339 UTC time (2026-01-31T12:00:00Z)");
    if (!expires) return bad("\"expires\" is not an RFC 3339 UTC time (2026-01-31T12:00:00Z)");
    if (*expires <= *created) return bad("\"expires\" is not after \"created\"");
    r.created = *created;
    r.expires = *expires;
    r.description = t.description();
    r.revoked = t.revoked();
    if (r.revoked) {
      auto at = parseRfc3339(t.revoked_at());
      if (!at) return bad("\"revoked_at\" is not an RFC 3339 UTC time");
      r.revoked_at = *at;
    }
    for (const auto& h : t.hosts()) {
      auto at = parseRfc3339(h.at());
      if (h.host().empty() || !at) return bad("an enrolled host has no \"host\" or no \"at\" time");
      r.hosts.push_back({h.host(), *at});
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string renderTokenFile(const std::vector<TokenRecord>& tokens) {
  v1::EnrollTokenFile file;
  file.set_version(kTokenFileVersion);
  for (const auto& r : tokens) {
    auto* t = file.add_tokens();
    t->set_id(r.id);
    t->set_secret_sha256(r.secret_sha256);
    t->set_created(formatRfc3339(r.created));
    t->set_expires(formatRfc3339(r.expires));
    t->set_description(r.description);
    t->set_revoked(r.revoked);
    if (r.revoked) t->set_revoked_at(formatRfc3339(r.revoked_at));
    for (const auto& h : r.hosts) {
      auto* host = t->add_hosts();
      host->set_host(h.host);
      host->set_at(formatRfc3339(h.at));
    }
  }
  return renderStateJson(file);
}

Result<std::chrono::seconds> checkTokenTtl(Duration ttl) {
  if (ttl <= Duration::zero()) {
    return fail(Errc::kInvalidArgument, "--ttl " + formatDuration(ttl) +
                                            " is not positive: give how long the token may "
                                            "enroll hosts, such as 24h (the default)");
  }
  if (ttl > kMaxTokenTtl) {
    return fail(Errc::kInvalidArgument,
                "--ttl " + formatDuration(ttl) +
                    " is longer than the limit of 168h (7 days): a token is for one bootstrap; "
                    "create another one when it expires");
  }
  if (ttl < std::chrono::seconds(1)) {
    return fail(Errc::kInvalidArgument, "--ttl " + formatDuration(ttl) +
                                            " is below a second, the resolution of tokens.json");
  }
  return std::chrono::duration_cast<std::chrono::seconds>(ttl);
}

Result<void> checkTokenDescription(std::string_view description) {
  if (description.size() > kMaxTokenDescription) {
    return fail(Errc::kInvalidArgument, "--description has " + std::to_string(description.size()) +
                                            " characters; at most " +
                                            std::to_string(kMaxTokenDescription) + " fit");
  }
  const auto bad = std::find_if(description.begin(), description.end(),
                                [](char c) { return c < 0x20 || c > 0x7e; });
  if (bad != description.end()) {
    return fail(Errc::kInvalidArgument,
                "--description has a character that is not printable ASCII at position " +
                    std::to_string(bad - description.begin() + 1) +
                    " (it is shown in tables: letters, digits, spaces and punctuation only)");
  }
  return {};
}

std::string pkiDirectoryFor(std::string_view inventory_path) {
  const auto parent = std::filesystem::path(inventory_path).parent_path();
  return (parent.empty() ? std::filesystem::path("pki") : parent / "pki").string();
}

std::string tokenStorePathFor(std::string_view inventory_path) {
  return pkiDirectoryFor(inventory_path) + "/tokens.json";
}

TokenStore::TokenStore(std::string path) : path_(std::move(path)) {
  const auto parent = std::filesystem::path(path_).parent_path();
  dir_ = parent.empty() ? "." : parent.string();
}

Result<std::vector<TokenRecord>> TokenStore::load() const {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::vector<TokenRecord>{};
    return fail(Errc::kIo, "cannot stat " + path_ + ": " + errnoText(errno));
  }
  if (auto r = checkPrivateDirectory(dir_, kPkiHolds); !r) return fail(r.error());
  if ((st.st_mode & 077) != 0) {
    return fail(Errc::kFailedPrecondition,
                path_ + " is open to other users (mode " + octalMode(st.st_mode) +
                    "): it holds what proves enrollments; make it private with chmod 600 " + path_ +
                    " (and revoke its tokens if others could read it)");
  }
  if (static_cast<std::size_t>(st.st_size) > kMaxTokenFileSize) {
    return fail(Errc::kInvalidArgument, path_ + ": " + std::to_string(st.st_size) +
                                            " bytes, too large for a tokens file" +
                                            tokenFileDamagedHint(path_));
  }
  auto text = readFile(path_);
  if (!text) return fail(text.error());
  return parseTokenFile(*text, path_);
}

Result<void> TokenStore::save(std::vector<TokenRecord> tokens, WallTime now) const {
  std::erase_if(tokens, [&](const TokenRecord& r) { return now >= r.expires; });
  return writeFileAtomic(path_, renderTokenFile(tokens), 0600);
}

Result<std::vector<TokenRecord>> TokenStore::list() const {
  return load();
}

Result<CreatedToken> TokenStore::create(std::string_view ca_hash, Duration ttl,
                                        std::string description, WallTime now) {
  auto seconds = checkTokenTtl(ttl);
  if (!seconds) return fail(seconds.error());
  if (auto r = checkTokenDescription(description); !r) return fail(r.error());
  auto hash = normalizeCaHash(ca_hash);
  if (!hash) return fail(hash.error());
  if (auto r = createPrivateDirectories(dir_); !r) return fail(r.error());
  if (auto r = checkPrivateDirectory(dir_, kPkiHolds); !r) return fail(r.error());
  auto lock = lockDirectory(dir_);
  if (!lock) return fail(lock.error());
  auto tokens = load();
  if (!tokens) return fail(tokens.error());
  const auto live = std::count_if(tokens->begin(), tokens->end(), [&](const TokenRecord& r) {
    return r.state(now) == TokenState::kActive;
  });
  if (static_cast<std::size_t>(live) >= kMaxLiveTokens) {
    return fail(Errc::kResourceExhausted,
                std::to_string(live) + " tokens are active already (the limit is " +
                    std::to_string(kMaxLiveTokens) +
                    "): revoke those no longer needed with etcd-fleet token revoke ID");
  }
  // A fresh id: 36^6 ids make a clash rare; a few draws make one vanishingly unlikely.
  for (int attempt = 0; attempt < 8; ++attempt) {
    auto token = generateEnrollToken(*hash);
    if (!token) return fail(token.error());
    const bool taken = std::any_of(tokens->begin(), tokens->end(),
                                   [&](const TokenRecord& r) { return r.id == token->id; });
    if (taken) continue;
    TokenRecord record;
    record.id = token->id;
    record.secret_sha256 = hexEncode(enrollSecretHash(token->secret));
    record.created = std::chrono::time_point_cast<std::chrono::seconds>(now);
    record.expires = record.created + *seconds;
    record.description = std::move(description);
    tokens->push_back(record);
    if (auto r = save(std::move(*tokens), now); !r) return fail(r.error());
    return CreatedToken{std::move(*token), std::move(record)};
  }
  return fail(Errc::kInternal, "could not draw a token id that " + path_ + " does not hold yet");
}

Result<TokenRecord> TokenStore::revoke(std::string_view id, WallTime now) {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) {
    return fail(Errc::kNotFound, "no enrollment token " + std::string(id) +
                                     ": this fleet has created none (" + path_ +
                                     " does not exist)");
  }
  if (auto r = checkPrivateDirectory(dir_, kPkiHolds); !r) return fail(r.error());
  auto lock = lockDirectory(dir_);
  if (!lock) return fail(lock.error());
  auto tokens = load();
  if (!tokens) return fail(tokens.error());
  auto it = std::find_if(tokens->begin(), tokens->end(),
                         [&](const TokenRecord& r) { return r.id == id; });
  if (it == tokens->end()) {
    return fail(Errc::kNotFound, "no enrollment token " + std::string(id) + " in " + path_ +
                                     " (expired tokens are dropped; etcd-fleet token list shows "
                                     "the others)");
  }
  if (it->state(now) != TokenState::kActive) return *it;
  it->revoked = true;
  it->revoked_at = std::chrono::time_point_cast<std::chrono::seconds>(now);
  TokenRecord out = *it;
  if (auto r = save(std::move(*tokens), now); !r) return fail(r.error());
  return out;
}

Result<TokenRecord> TokenStore::lookupForEnrollment(std::string_view id, WallTime now) const {
  auto tokens = load();
  if (!tokens) return fail(tokens.error());
  auto it = std::find_if(tokens->begin(), tokens->end(),
                         [&](const TokenRecord& r) { return r.id == id; });
  if (it == tokens->end()) {
    return fail(Errc::kNotFound,
                "enrollment token " + std::string(id) + " is not known to this fleet (" + path_ +
                    "): it was created by another fleet, or it expired and was dropped; create "
                    "one with etcd-fleet token create");
  }
  switch (it->state(now)) {
    case TokenState::kActive: return *it;
    case TokenState::kExpired:
      return fail(Errc::kFailedPrecondition, "enrollment token " + it->id + " expired at " +
                                                 shortTime(it->expires) +
                                                 "; create a new one with etcd-fleet token create");
    case TokenState::kRevoked:
      return fail(Errc::kPermissionDenied, "enrollment token " + it->id + " was revoked at " +
                                               shortTime(it->revoked_at) +
                                               "; create a new one with etcd-fleet token create");
  }
  return fail(Errc::kInternal, "enrollment token " + it->id + " is in an unknown state");
}

Result<void> TokenStore::recordEnrollment(std::string_view id, std::string_view host,
                                          WallTime now) {
  if (auto r = checkPrivateDirectory(dir_, kPkiHolds); !r) return fail(r.error());
  auto lock = lockDirectory(dir_);
  if (!lock) return fail(lock.error());
  auto tokens = load();
  if (!tokens) return fail(tokens.error());
  auto it = std::find_if(tokens->begin(), tokens->end(),
                         [&](const TokenRecord& r) { return r.id == id; });
  if (it == tokens->end()) {
    return fail(Errc::kNotFound, "cannot record the enrollment of " + std::string(host) +
                                     ": token " + std::string(id) + " is no longer in " + path_);
  }
  const auto at = std::chrono::time_point_cast<std::chrono::seconds>(now);
  auto host_it = std::find_if(it->hosts.begin(), it->hosts.end(),
                              [&](const EnrolledHost& h) { return h.host == host; });
  if (host_it != it->hosts.end()) {
    host_it->at = at;
  } else {
    it->hosts.push_back({std::string(host), at});
  }
  return save(std::move(*tokens), now);
}

}  // namespace etcdagent::fleet
