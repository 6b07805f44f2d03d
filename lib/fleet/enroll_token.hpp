#pragma once

// The enrollment token that lets a new host join the fleet (docs/security.md), and the proof an
// agent computes from it during enrollment.
//
// A token is one line, `etf1.<id>.<secret>.<ca-hash>`, like k3s' `K10<ca-sha256>::<secret>`:
//   * id: 6 of [a-z0-9], names the token in tokens.json, `token list` and `token revoke`;
//   * secret: 32 of [a-z0-9] (about 165 bits), known to the agent and the operator who pasted it;
//     the fleet keeps only its sha256;
//   * ca-hash: 64 lower-case hex, the SHA-256 of the fleet CA certificate's DER
//     SubjectPublicKeyInfo (kubeadm's --discovery-token-ca-cert-hash): the agent trusts the CA
//     whose key matches it, and no other, on first contact.
// No error of this module ever contains the secret: tokens end up in logs and bug reports.

#include <cstddef>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent::fleet {

inline constexpr std::string_view kEnrollTokenPrefix = "etf1";
inline constexpr std::size_t kEnrollTokenIdLength = 6;
inline constexpr std::size_t kEnrollTokenSecretLength = 32;
inline constexpr std::size_t kCaHashHexLength = 64;
// The fleet's nonce in Enroll.Hello, and every digest the proof covers: 32 bytes each, so the
// fields of the proof's message are all of fixed length and their concatenation is unambiguous.
inline constexpr std::size_t kEnrollNonceSize = 32;
inline constexpr std::size_t kEnrollDigestSize = 32;
// What the proof's message starts with: the protocol and its version.
inline constexpr std::string_view kEnrollProofLabel = "etcd-agent enroll v1";

struct EnrollToken {
  std::string id;       // kEnrollTokenIdLength of [a-z0-9]
  std::string secret;   // kEnrollTokenSecretLength of [a-z0-9]
  std::string ca_hash;  // kCaHashHexLength lower-case hex digits, without "sha256:"
};

// Parses one token. Whitespace around it (a trailing newline of the token file) is ignored;
// anything else that is not exactly the format is kInvalidArgument naming the part that is wrong
// (prefix, id, secret, CA hash, the number of parts) and never echoing the secret.
Result<EnrollToken> parseEnrollToken(std::string_view text);

// "etf1.<id>.<secret>.<ca-hash>".
std::string formatEnrollToken(const EnrollToken& token);

// Checks a CA hash as tokens carry it (64 lower-case hex); "sha256:<hex>", the fingerprint's
// printed form, is accepted and returned without the prefix.
Result<std::string> normalizeCaHash(std::string_view ca_hash);

// A new token for the CA whose fingerprint is `ca_hash` (as normalizeCaHash takes it): id and
// secret from OpenSSL's CSPRNG (RAND_bytes), each character unbiased (rejection sampling).
// Fails only when the CSPRNG does (kInternal) or `ca_hash` is malformed (kInvalidArgument).
Result<EnrollToken> generateEnrollToken(std::string_view ca_hash);

// A fresh nonce for Enroll.Hello: kEnrollNonceSize bytes from the CSPRNG.
Result<std::string> generateEnrollNonce();

// sha256 of the secret (32 raw bytes): what tokens.json keeps, and the HMAC key of the proof on
// both sides (the fleet cannot key it with the secret it does not keep).
std::string enrollSecretHash(std::string_view secret);

// proof = HMAC-SHA256(key = secret_hash,
//                     kEnrollProofLabel || token_id || nonce || csr_digest ||
//                     client_cert_digest || server_spki_digest)
// secret_hash: enrollSecretHash(secret); token_id: the token's 6 characters; nonce: the fleet's
// kEnrollNonceSize bytes; csr_digest: sha256 over the agent's CSRs (PEM, concatenated in the order
// sent); client_cert_digest: sha256 of the fleet's TLS client certificate (DER);
// server_spki_digest: sha256 of the agent's TLS server certificate's SubjectPublicKeyInfo (DER).
// Every field has a fixed length; a field of the wrong length is kInvalidArgument naming it
// (a caller's bug or a malformed message, never a proof over ambiguous bytes). Returns 32 bytes.
Result<std::string> enrollProof(std::string_view secret_hash, std::string_view token_id,
                                std::string_view nonce, std::string_view csr_digest,
                                std::string_view client_cert_digest,
                                std::string_view server_spki_digest);

// Whether a and b are equal, in time that depends on their lengths only (CRYPTO_memcmp): for
// proofs and secret hashes, where an early exit would tell an attacker how much was right.
bool constantTimeEqual(std::string_view a, std::string_view b);

}  // namespace etcdagent::fleet
