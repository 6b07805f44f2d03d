#include "fleet/enroll_token.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <vector>

#include "common/encoding.hpp"
#include "common/random_text.hpp"
#include "common/snapshot_digest.hpp"
#include "common/strings.hpp"

namespace etcdagent::fleet {
namespace {

constexpr std::string_view kFormat = "etf1.<id>.<secret>.<ca-hash>";

bool isLowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool isLowerHex(char c) {
  return (c >= 'a' && c <= 'f') || (c >= '0' && c <= '9');
}

std::unexpected<Error> malformed(const std::string& what) {
  return fail(Errc::kInvalidArgument, "malformed enrollment token: " + what + " (the format is " +
                                          std::string(kFormat) +
                                          "; copy the whole line etcd-fleet token create printed)");
}

// Checks one part's length and characters. The message gives lengths and positions, never the
// characters themselves: the part may be the secret, or a shifted copy of it.
Result<void> checkPart(std::string_view part, std::string_view name, std::size_t length,
                       bool (*allowed)(char), std::string_view alphabet) {
  if (part.size() != length) {
    return malformed("the " + std::string(name) + " has " + std::to_string(part.size()) +
                     " characters, not " + std::to_string(length));
  }
  const auto bad = std::find_if_not(part.begin(), part.end(), allowed);
  if (bad != part.end()) {
    const bool upper = *bad >= 'A' && *bad <= 'Z';
    return malformed("the " + std::string(name) + " has a character outside " +
                     std::string(alphabet) + " at position " +
                     std::to_string(bad - part.begin() + 1) + (upper ? " (upper case)" : ""));
  }
  return {};
}

}  // namespace

Result<EnrollToken> parseEnrollToken(std::string_view text) {
  const std::string_view token = trimSpace(text);
  if (token.empty()) return malformed("it is empty");
  const auto space = std::find_if(token.begin(), token.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  });
  if (space != token.end()) {
    return malformed("it has whitespace inside it at position " +
                     std::to_string(space - token.begin() + 1) +
                     " (one token, on one line, is expected)");
  }
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = token.find('.', start);
    parts.push_back(token.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (parts.size() != 4) {
    return malformed("it has " + std::to_string(parts.size()) + " part" +
                     (parts.size() == 1 ? "" : "s") + " separated by '.', not 4");
  }
  if (parts[0] != kEnrollTokenPrefix) {
    return malformed("it does not start with " + std::string(kEnrollTokenPrefix) +
                     " (another kind of token, or a newer version of it?)");
  }
  if (auto r = checkPart(parts[1], "id", kEnrollTokenIdLength, isLowerAlnum, "[a-z0-9]"); !r)
    return fail(r.error());
  if (auto r = checkPart(parts[2], "secret", kEnrollTokenSecretLength, isLowerAlnum, "[a-z0-9]");
      !r)
    return fail(r.error());
  if (parts[3].starts_with("sha256:")) {
    return malformed("the CA hash starts with \"sha256:\", which tokens leave out");
  }
  if (auto r = checkPart(parts[3], "CA hash", kCaHashHexLength, isLowerHex, "[0-9a-f]"); !r)
    return fail(r.error());
  return EnrollToken{std::string(parts[1]), std::string(parts[2]), std::string(parts[3])};
}

std::string formatEnrollToken(const EnrollToken& token) {
  return std::string(kEnrollTokenPrefix) + "." + token.id + "." + token.secret + "." +
         token.ca_hash;
}

Result<std::string> normalizeCaHash(std::string_view ca_hash) {
  std::string_view hex = ca_hash;
  if (hex.starts_with("sha256:")) hex.remove_prefix(7);
  if (hex.size() != kCaHashHexLength || !std::all_of(hex.begin(), hex.end(), isLowerHex)) {
    return fail(Errc::kInvalidArgument,
                "the CA fingerprint \"" + std::string(ca_hash) +
                    "\" is not sha256:<64 lower-case hex digits> (the SHA-256 of the CA "
                    "certificate's public key)");
  }
  return std::string(hex);
}

Result<EnrollToken> generateEnrollToken(std::string_view ca_hash) {
  auto hash = normalizeCaHash(ca_hash);
  if (!hash) return fail(hash.error());
  auto id = randomLowerAlnum(kEnrollTokenIdLength);
  if (!id) return fail(id.error());
  auto secret = randomLowerAlnum(kEnrollTokenSecretLength);
  if (!secret) return fail(secret.error());
  return EnrollToken{std::move(*id), std::move(*secret), std::move(*hash)};
}

Result<std::string> generateEnrollNonce() {
  std::array<unsigned char, kEnrollNonceSize> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return fail(Errc::kInternal, "the system's random number generator failed (RAND_bytes)");
  }
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::string enrollSecretHash(std::string_view secret) {
  Sha256 sha;
  sha.update(secret);
  return sha.finish();
}

Result<std::string> enrollProof(std::string_view secret_hash, std::string_view token_id,
                                std::string_view nonce, std::string_view csr_digest,
                                std::string_view client_cert_digest,
                                std::string_view server_spki_digest) {
  const std::array<std::pair<std::string_view, std::pair<std::string_view, std::size_t>>, 6> fields{
      {{"secret hash", {secret_hash, kEnrollDigestSize}},
       {"token id", {token_id, kEnrollTokenIdLength}},
       {"nonce", {nonce, kEnrollNonceSize}},
       {"CSR digest", {csr_digest, kEnrollDigestSize}},
       {"client certificate digest", {client_cert_digest, kEnrollDigestSize}},
       {"server key digest", {server_spki_digest, kEnrollDigestSize}}}};
  for (const auto& [name, field] : fields) {
    if (field.first.size() != field.second) {
      return fail(Errc::kInvalidArgument, "enrollment proof: the " + std::string(name) + " has " +
                                              std::to_string(field.first.size()) + " bytes, not " +
                                              std::to_string(field.second));
    }
  }
  std::string message(kEnrollProofLabel);
  for (std::size_t i = 1; i < fields.size(); ++i) message.append(fields[i].second.first);
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), secret_hash.data(), static_cast<int>(secret_hash.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac.data(),
           &len) == nullptr) {
    return fail(Errc::kInternal, "enrollment proof: HMAC-SHA256 failed in OpenSSL");
  }
  return std::string(reinterpret_cast<const char*>(mac.data()), len);
}

bool constantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace etcdagent::fleet
